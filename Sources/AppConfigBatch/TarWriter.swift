import AppConfigSpec
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// ustar members, deterministic: mode 0644, owner 0, mtime 0 (the same inputs give the same
/// archive), names of at most 100 bytes.
enum Tar {
    static let blockSize = 512

    /// The fixed part of every header: mode, owner, mtime, type and magic (all members share them).
    /// In a buffer allocated once for the process, like a C constant: appended for every member on
    /// every core, an array was retained and released each time, the cores contending for its count.
    nonisolated(unsafe) private static let template: UnsafeBufferPointer<UInt8> = {
        let h = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: blockSize)
        h.initialize(repeating: 0)
        func put(_ text: String, _ offset: Int) { for (i, b) in text.utf8.enumerated() { h[offset + i] = b } }
        put("0000644", 100); put("0000000", 108); put("0000000", 116); put("00000000000", 136)
        h[156] = UInt8(ascii: "0")
        put("ustar", 257); put("00", 263)
        return UnsafeBufferPointer(h)
    }()

    /// Appends one member: its header, its body, the padding to the next block. `path` appends the
    /// member's name (at most 100 bytes: the name field) and `body` its bytes, both straight into
    /// `out`: the name is moved into the header, the size patched in once the body is there.
    /// Nothing is allocated.
    @inline(__always)
    static func appendMember(to out: inout [UInt8], path: (inout [UInt8]) -> Void, body: (inout [UInt8]) -> Void) {
        let start = out.count
        out.append(contentsOf: template)
        path(&out)
        let n = out.count - start - blockSize
        precondition(n <= 100, "tar member name too long")
        out.withUnsafeMutableBufferPointer { b in
            for i in 0..<n { b[start + i] = b[start + blockSize + i] }
        }
        out.removeLast(n)
        body(&out)
        let size = out.count - start - blockSize
        seal(at: start, size: size, in: &out)
        out.append(contentsOf: repeatElement(0, count: padding(for: size)))
    }

    /// A member named `name` holding `bytes`.
    static func appendMember(named name: String, bytes: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        appendMember(to: &out, path: { $0 += name.utf8 }, body: { $0.append(contentsOf: bytes) })
    }

    /// Ends an archive: each closing file as a member (made one at a time when its turn comes,
    /// written part by part: the index and manifest of 1M devices are ~250 MB, and copying them into
    /// one buffer first cost a second), the trailer; then an archive written to a file is renamed
    /// into place, with its manifest beside it (`FILE.manifest.tsv`, for a quick `--since`; the
    /// old one goes before the archive changes). The copy beside is written under a temporary name
    /// on a thread of its own while the archive's member is (one after the other, the two copies of
    /// ~125 MB at 1M devices were a fifth of publishing) and renamed once the archive is in place.
    /// Returns the archive's name.
    static func end(_ fd: Int32, name: String, closing files: [ClosingFile], file: AtomicFile?) throws(Problem) -> String {
        let beside = name + "." + Manifest.fileName
        var besideCopy: BesideCopy?
        defer { besideCopy?.discard() }  // after a commit, nothing is left to discard
        for f in files {
            let parts = f.makeParts()
            if f.name == Manifest.fileName, file != nil { besideCopy = try BesideCopy(parts, to: beside) }
            try writeMember(named: f.name, parts: parts, to: fd, path: name)
        }
        try writeAll(fd, trailer, path: name)
        guard let file else { return name }
        unlink(beside)
        try file.commit()
        try besideCopy?.commit()
        return name
    }

    /// A file's parts written under a temporary name beside its final one, on a thread of its own.
    private final class BesideCopy: @unchecked Sendable {  // `error` is written by the thread before `done` is left, read after it is waited for
        private let file: AtomicFile
        private var error: Problem?
        private let done = DispatchGroup()

        init(_ parts: [[UInt8]], to path: String) throws(Problem) {
            file = try AtomicFile(path: path)
            done.enter()
            DispatchQueue.global().async { [self] in
                do throws(Problem) { for part in parts { try writeAll(file.descriptor, part, path: path) } } catch { self.error = error }
                done.leave()
            }
        }

        /// Once written, renamed into place; or the first write error thrown, the temporary removed.
        func commit() throws(Problem) {
            done.wait()
            if let error {
                file.discard()
                throw error
            }
            try file.commit()
        }

        /// Once written, the temporary removed (nothing, after a commit).
        func discard() {
            done.wait()
            file.discard()
        }
    }

    /// Writes a member made of parts straight to a descriptor, without copying them into one buffer.
    static func writeMember(named member: String, parts: [[UInt8]], to fd: Int32, path: String) throws(Problem) {
        let size = parts.reduce(0) { $0 + $1.count }
        try writeAll(fd, header(named: member, size: size), path: path)
        for part in parts { try writeAll(fd, part, path: path) }
        try writeAll(fd, [UInt8](repeating: 0, count: padding(for: size)), path: path)
    }

    /// The header of a member of `size` bytes whose body the caller writes after it (a large file).
    static func header(named name: String, size: Int) -> [UInt8] {
        var out = Array(template)
        let bytes = Array(name.utf8)
        precondition(bytes.count <= 100, "tar member name too long")
        for (i, b) in bytes.enumerated() { out[i] = b }
        seal(at: 0, size: size, in: &out)
        return out
    }

    /// The checksum of the template with the checksum field as eight spaces: a header's checksum
    /// is this plus its name's and size's bytes (the only fields that differ).
    private static let templateSum = template.enumerated().reduce(0) { $0 + ($1.offset >= 148 && $1.offset < 156 ? 0x20 : Int($1.element)) }

    /// Writes the size and then the checksum. The header is the template with a name and a size
    /// written over zeros and the size field's zeros: only those bytes are added (not 512 per member).
    private static func seal(at start: Int, size: Int, in out: inout [UInt8]) {
        writeOctal(size, width: 11, at: start + 124, in: &out)
        var sum = templateSum
        out.withUnsafeBufferPointer { b in
            for i in 0..<100 {
                let c = b[start + i]
                if c == 0 { break }
                sum += Int(c)
            }
            for i in 124..<135 { sum += Int(b[start + i]) }
        }
        writeOctal(sum, width: 6, at: start + 148, in: &out)
        out[start + 154] = 0
        out[start + 155] = 0x20
    }

    /// The bytes of the member `name` of an archive, walking its headers (seeking past bodies).
    static func member(named name: String, in path: String) throws(Problem) -> [UInt8] {
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

    private static func writeOctal(_ value: Int, width: Int, at offset: Int, in out: inout [UInt8]) {
        var v = value
        for i in stride(from: width - 1, through: 0, by: -1) {
            out[offset + i] = UInt8(ascii: "0") + UInt8(v & 7)
            v >>= 3
        }
    }

    static func padding(for size: Int) -> Int { (blockSize - size % blockSize) % blockSize }

    /// Two zero blocks end an archive.
    static let trailer = [UInt8](repeating: 0, count: 2 * blockSize)
}
