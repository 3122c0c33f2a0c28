import AppConfigCore
import CFileSync
import Foundation

/// ustar members, deterministic: mode 0644, owner 0, mtime 0 (the same inputs give the same
/// archive), names of at most 100 bytes.
package enum Tar {
    package static let blockSize = 512

    /// The fixed part of every header: mode, owner, mtime, type and magic (all members share them).
    /// In an arena kept for the process, like a C constant: appended for every member on every
    /// core, an array was retained and released each time, the cores contending for its count.
    private static let templateStorage = BufferArena()
    private static let template: ByteView = {
        var h = [UInt8](repeating: 0, count: blockSize)
        func put(_ text: String, _ offset: Int) { h.replaceSubrange(offset..<(offset + text.utf8.count), with: text.utf8) }
        put("0000644", 100); put("0000000", 108); put("0000000", 116); put("00000000000", 136)
        h[156] = UInt8(ascii: "0")
        put("ustar", 257); put("00", 263)
        return templateStorage.view(h)
    }()

    /// Appends one member: its header, its body, the padding to the next block. `path` appends the
    /// member's name (at most 100 bytes: the name field) and `body` its bytes, both straight into
    /// `out`: the name is moved into the header, the size patched in once the body is there.
    /// Nothing is allocated.
    /// The mode of a member that holds a secret (`secret-assets/`): its owner's alone.
    package static let secretMode: StaticString = "0000600"

    @inline(__always)
    package static func appendMember(to out: inout [UInt8], path: (inout [UInt8]) -> Void, body: (inout [UInt8]) -> Void, mode: StaticString? = nil) {
        let start = out.count
        out.append(template)
        if let mode {
            out.withWorkerSlots { b in for i in 0..<7 { b[start + 100 + i] = mode.utf8Start[i] } }
        }
        path(&out)
        let n = out.count - start - blockSize
        precondition(n <= 100, "tar member name too long")
        out.withWorkerSlots { b in
            for i in 0..<n { b[start + i] = b[start + blockSize + i] }
        }
        out.removeLast(n)
        body(&out)
        let size = out.count - start - blockSize
        seal(at: start, size: size, in: &out)
        out.append(zeros[view: 0..<padding(for: size)])
    }

    /// A block of zeros, the padding's source (a repeated element was appended a byte at a time).
    private static let zeros: ByteView = templateStorage.view([UInt8](repeating: 0, count: blockSize))

    /// Ends an archive: each closing file as a member (made when its turn comes and written piece
    /// by piece as it is made: the index and manifest are a line per device), the trailer; then
    /// an archive written to a file is renamed into place, with its manifest beside it
    /// (`FILE.manifest.tsv`, for a quick `--since`; the old one goes before the archive changes),
    /// written under a temporary name with the archive's member and renamed once the archive is in
    /// place. Returns the archive's name.
    /// `copied`: the closing file also written beside the archive (the manifest).
    package static func end(_ fd: Int32, name: String, closing files: [ClosingFile], file: AtomicFile?, copying copied: String) throws(Problem) -> String {
        let beside = name + "." + copied
        var besideCopy: AtomicFile?
        defer { besideCopy?.discard() }  // after a commit, nothing is left to discard
        for f in files {
            if f.name == copied, file != nil { besideCopy = try AtomicFile(path: beside, readable: true) }
            try writeMember(f, to: fd, path: name, copy: besideCopy.map { ($0.descriptor, beside) })
        }
        try writeAll(fd, trailer, path: name)
        guard let file else { return name }
        unlink(beside)
        // The manifest beside goes to the disk while the archive is flushed, not after it.
        if let besideCopy { _ = appconfig_start_writeback(besideCopy.descriptor, 0, 0) }
        try file.commit()
        try besideCopy?.commit()
        return name
    }

    /// Writes a closing file as a member, each piece as it is made (and to `copy` too): the header
    /// first with no size, then the body, then the header again with its size, written in place.
    /// To a descriptor that cannot seek (a pipe) or writes only at its end (`>>`, O_APPEND, where
    /// Linux's `pwrite` appends), the whole body is made first, for the size.
    /// `copy` (open for reading too) gets each piece, and the archive its bytes copied from it on
    /// another core as they come (`TrailingCopy`): written twice, the manifest took two writes' time.
    package static func writeMember(_ member: ClosingFile, to fd: Int32, path: String, copy: (fd: Int32, path: String)?) throws(Problem) {
        func copyOut(_ piece: ByteView) throws(Problem) {
            if let copy { try writeAll(copy.fd, piece, path: copy.path) }
        }
        let headerAt = fcntl(fd, F_GETFL) & O_APPEND != 0 ? -1 : lseek(fd, 0, SEEK_CUR)
        var size = 0
        // The archive (and the copy) go to the disk as the member is made, every `writebackStep`
        // bytes: the kernel's own writing starts late, and the closing members (the manifest,
        // 1.4 GB at 10M devices, and the index) were most of what the final flushes waited for.
        func grew(by count: Int) {
            size += count
            guard (size - count) / writebackStep != size / writebackStep else { return }
            if let copy { _ = appconfig_start_writeback(copy.fd, 0, 0) }
            _ = appconfig_start_writeback(fd, 0, 0)
        }
        if headerAt < 0 {
            var body: [UInt8] = []
            try member.write { piece throws(Problem) in
                body.append(contentsOf: piece)
                try copyOut(piece)
            }
            size = body.count
            try writeAll(fd, header(named: member.name, size: size), path: path)
            try writeAll(fd, body, path: path)
        } else if let copy {
            try writeAll(fd, header(named: member.name, size: 0), path: path)
            let start = Int(lseek(copy.fd, 0, SEEK_CUR))
            let trailing = TrailingCopy(from: copy, at: start, to: (fd, path))
            do throws(Problem) {
                try member.write { piece throws(Problem) in
                    try writeAll(copy.fd, piece, path: copy.path)
                    grew(by: piece.count)
                    trailing.written(upTo: start + size)
                }
                try trailing.finish()
            } catch {
                trailing.cancel()
                throw error
            }
        } else {
            try writeAll(fd, header(named: member.name, size: 0), path: path)
            try member.write { piece throws(Problem) in
                try writeAll(fd, piece, path: path)
                grew(by: piece.count)
            }
        }
        try writeAll(fd, [UInt8](repeating: 0, count: padding(for: size)), path: path)
        if headerAt >= 0 {
            let sized = header(named: member.name, size: size)
            let written = sized.withUnsafeBytes { pwrite(fd, $0.baseAddress!, $0.count, headerAt) }
            guard written == sized.count else {
                throw Problem(.outputWrite, at: Location(file: path), "cannot write \(path): \(written < 0 ? systemError() : "short write")")
            }
        }
    }

    /// Bytes of a closing member written between two starts of their writing to the disk.
    static let writebackStep = 64 << 20

    /// The header of a member of `size` bytes whose body the caller writes after it (a large file).
    package static func header(named name: String, size: Int) -> [UInt8] {
        var out = Array(template)
        let bytes = Array(name.utf8)
        precondition(bytes.count <= 100, "tar member name too long")
        for (i, b) in bytes.enumerated() { out[i] = b }
        seal(at: 0, size: size, in: &out)
        return out
    }

    /// The checksum of the template with the checksum field as eight spaces: a header's checksum
    /// is this plus its name's and size's bytes, and its mode's difference (the fields that differ).
    private static let templateSum = template.enumerated().reduce(0) { $0 + ($1.offset >= 148 && $1.offset < 156 ? 0x20 : Int($1.element)) }

    /// Writes the size and then the checksum. The header is the template with a name and a size
    /// written over zeros and the size field's zeros: only those bytes are added (not 512 per member),
    /// the name's field (zeros past the name) eight bytes at a time, the size's digits as they are
    /// written, all through one view: a write through the array's subscript checked its
    /// uniqueness, and the name's bytes summed one at a time cost more than the rest.
    private static func seal(at start: Int, size: Int, in out: inout [UInt8]) {
        out.withWorkerSlots { b in
            var sum = templateSum + writeOctal(size, width: 11, at: start + 124, in: b)
            let header = b.view
            for i in Swift.stride(from: 0, to: 96, by: 8) { sum += byteSum(header.word(at: start + i)) }
            for i in 96..<100 { sum += Int(header[start + i]) }
            // The mode, where it is not the template's (a secret member's 0600).
            for i in 100..<107 { sum += Int(header[start + i]) - Int(template[i]) }
            _ = writeOctal(sum, width: 6, at: start + 148, in: b)
            b[start + 154] = 0
            b[start + 155] = 0x20
        }
    }

    /// The sum of a word's eight bytes: pairs added in 16-bit lanes, the lanes by a multiply.
    @inline(__always)
    private static func byteSum(_ w: UInt64) -> Int {
        let pairs = (w & 0x00FF_00FF_00FF_00FF) &+ ((w >> 8) & 0x00FF_00FF_00FF_00FF)
        return Int((pairs &* 0x0001_0001_0001_0001) >> 48)
    }

    /// The bytes of the member `name` of an archive, walking its headers (seeking past bodies).
    package static func member(named name: String, in path: String) throws(Problem) -> [UInt8] {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw Problem(InputCode.read, at: Location(file: path), "cannot read \(path)")
        }
        defer { try? handle.close() }
        let wanted = Array(name.utf8)
        var offset: UInt64 = 0
        while true {
            try? handle.seek(toOffset: offset)
            guard let header = try? handle.read(upToCount: blockSize), header.count == blockSize, header.first != 0 else { break }
            let memberName = Array(header.prefix(100).prefix { $0 != 0 })
            let sizeText = String(decoding: header[124..<135], as: UTF8.self)
            guard let size = UInt64(sizeText, radix: 8) else { break }
            if memberName == wanted { return Array((try? handle.read(upToCount: Int(size))) ?? Data()) }
            offset += UInt64(blockSize) + (size + UInt64(blockSize) - 1) / UInt64(blockSize) * UInt64(blockSize)
        }
        throw Problem(.manifestSyntax, at: Location(file: path), "\(path) holds no \(name): not an archive appconfig wrote")
    }

    /// Writes `value` in `width` octal digits and returns the sum of the digits' bytes.
    @inline(__always)
    private static func writeOctal(_ value: Int, width: Int, at offset: Int, in out: MutableByteView) -> Int {
        var v = value, sum = 0
        for i in stride(from: width - 1, through: 0, by: -1) {
            let digit = UInt8(ascii: "0") + UInt8(v & 7)
            out[offset + i] = digit
            sum += Int(digit)
            v >>= 3
        }
        return sum
    }

    package static func padding(for size: Int) -> Int { (blockSize - size % blockSize) % blockSize }

    /// Two zero blocks end an archive.
    package static let trailer = [UInt8](repeating: 0, count: 2 * blockSize)
}
