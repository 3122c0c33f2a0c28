import AppConfigCore
import AppConfigOutput
import AppConfigSpec
import Foundation

/// One shard's published output, read for `appconfig merge` (and `push`): its manifest, its index lines, its
/// DDM declarations and live assets, and where its device files are: an archive's members in the
/// order they were written, or a complete generation folder. An archive is mapped, not read: its
/// members are copied into the merged archive straight from the mapping.
package final class ShardOutput {
    package enum Container {
        /// The archive's members before its closing files, in order.
        case tar(members: [Member])
        /// A complete generation folder.
        case folder(generation: String)
    }

    /// An archive member: where its header starts, its length with header and padding, its name.
    package struct Member {
        var offset: Int
        var length: Int
        var name: Range<Int>
        /// Its body's bytes in the archive.
        var body: Range<Int>
    }

    /// The path as given.
    package let path: String
    package let container: Container
    package let manifest: Manifest
    let shard: Shard
    /// The closing files it holds (`index.jsonl`, `declarations.jsonl`, `assets.live`,
    /// `manifest.tsv`), in the order they were written.
    let closingNames: [String]
    /// It holds secret documents (`secret-assets/` members or files): what is made of it is its
    /// owner's alone.
    private(set) var holdsSecrets = false
    /// The archive's bytes (nil for a folder) and its closing files' bytes, valid while this lives.
    private let mapping: MappedFile?
    /// The archive, for `copy` (-1 for a folder).
    private let source: Int32
    private let files: [String: [UInt8]]

    /// The closing files an output holds at its top level; any other top-level name is not ours.
    static let closingFileNames: Set<String> = ["index.jsonl", "declarations.jsonl", "assets.live", OutputNames.manifestFile]

    package var isTar: Bool { if case .tar = container { true } else { false } }

    /// Reads the output at `path`: an archive (`.tar`, a regular file) or a folder output (the
    /// symlink `--out` made, or a generation folder itself). `reading`: the closing files whose
    /// bytes are kept (the others are only found); without the manifest, only its header is read
    /// (`push` and `status` need the delivery, not 1M manifest lines).
    package init(_ path: String, reading: Set<String> = closingFileNames) throws(Problem) {
        self.path = path
        var files: [String: [UInt8]] = [:]
        var manifestHeader: [(name: String, value: String)]?
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw Problem(InputCode.read, at: Location(file: path), "cannot read \(path): \(systemError())")
        }
        if (info.st_mode & S_IFMT) == S_IFDIR {
            var generation = path
            if let published = GenerationFolder.published(path) {
                // Only a generation of this output's own (`OUT.generations/g...`), never a folder
                // the symlink was pointed at.
                let full = PathText.normalized(published)
                guard PathText.folder(of: full) == PathText.normalized(path) + ".generations", Generations.isGenerationName(PathText.name(of: full)) else {
                    throw Problem(.mergeInput, at: Location(file: path), "\(path) is a symlink to \(published), which is not a generation of this output")
                }
                generation = published
            } else if access(path + "/" + OutputNames.manifestFile, F_OK) != 0 {
                throw Problem(.mergeInput, at: Location(file: path), "\(path) is not a complete appconfig output: it holds no \(OutputNames.manifestFile)")
            }
            mapping = nil
            source = -1
            container = .folder(generation: generation)
            var names: [String] = []
            for name in ["declarations.jsonl", "index.jsonl", "assets.live", OutputNames.manifestFile] where access(generation + "/" + name, F_OK) == 0 {
                names.append(name)
                files[name] = []
                if reading.contains(name) {
                    do { files[name] = try readFileBytes(generation + "/" + name, limit: Int(Int32.max) * 4) } catch { throw error.problem }
                } else if name == OutputNames.manifestFile {
                    manifestHeader = Manifest.header(of: generation + "/" + name)
                }
            }
            closingNames = names
        } else {
            let mapped: MappedFile?
            do { mapped = try MappedFile(path, limit: Int.max) } catch { throw error.problem }
            guard let mapped else { throw Problem(.mergeInput, at: Location(file: path), "\(path) is empty or not a regular file: not an appconfig output") }
            mapping = mapped
            source = open(path, O_RDONLY | O_CLOEXEC)
            var members: [Member] = []
            var names: [String] = []
            var secrets = false
            try Self.walk(mapped.view, path: path) { (member: Member, name: String, body: ByteView) throws(Problem) in
                if name.contains("/") {
                    guard names.isEmpty else {
                        throw Problem(.mergeInput, at: Location(file: path), "\(path): the member \(name) comes after the closing files: not an archive appconfig wrote")
                    }
                    members.append(member)
                    if name.utf8.starts(with: "secret-assets/".utf8) { secrets = true }
                } else {
                    guard Self.closingFileNames.contains(name), !names.contains(name) else {
                        throw Problem(.mergeInput, at: Location(file: path), "\(path) holds a member \(name): not an archive appconfig wrote")
                    }
                    names.append(name)
                    files[name] = reading.contains(name) ? Array(body) : []
                    if name == OutputNames.manifestFile && !reading.contains(name) {
                        manifestHeader = Manifest.header(in: Array(body[view: 0..<min(body.count, 1 << 16)])[...])
                    }
                }
            }
            container = .tar(members: members)
            holdsSecrets = secrets
            closingNames = names
            if let change = mapped.change() {
                throw Problem(.mergeInput, at: Location(file: path), "\(path) changed while it was read: \(change.problem.message)")
            }
        }
        self.files = files
        guard let manifestBytes = files[OutputNames.manifestFile] else {
            throw Problem(.mergeInput, at: Location(file: path), "\(path) holds no \(OutputNames.manifestFile): not an appconfig output, or one cut short")
        }
        guard files["index.jsonl"] != nil else {
            throw Problem(.mergeInput, at: Location(file: path), "\(path) holds no index.jsonl: not an appconfig output")
        }
        let manifestName = mapping != nil ? path + " (" + OutputNames.manifestFile + ")" : path + "/" + OutputNames.manifestFile
        if reading.contains(OutputNames.manifestFile) {
            manifest = try Manifest.parse(manifestBytes, file: manifestName, keepsPaths: true)
        } else {
            guard let header = manifestHeader else {
                throw Problem(.manifestSyntax, at: Location(file: manifestName, line: 1), "not an appconfig manifest (version 1 to 4), or its header is cut short")
            }
            manifest = Manifest(header: header, keys: [], entries: [])
        }
        guard let text = manifest.header.first(where: { $0.name == "shard" })?.value, let shard = Shard(parsing: text) else {
            throw Problem(.mergeInput, at: Location(file: manifestName), "\(manifestName) names no shard: it was written by an older appconfig; render it again")
        }
        self.shard = shard
    }

    deinit { if source >= 0 { close(source) } }

    /// A closing file's bytes (empty when the output has none).
    package func file(_ name: String) -> [UInt8] { files[name] ?? [] }

    /// Member `m`'s name.
    package func name(of m: Member) -> ByteView { mapping!.view[view: m.name] }

    /// Member `m`'s body.
    package func body(of m: Member) -> ByteView { mapping!.view[view: m.body] }

    /// Copies the archive's bytes in `range` (headers, bodies, padding) to `fd`, file to file in
    /// the kernel (`sendfile`), not faulted in through the mapping first.
    func copy(_ range: Range<Int>, to fd: Int32, path: String) throws(Problem) {
        var offset = off_t(range.lowerBound)
        var left = range.count
        while left > 0 {
            let n = sendfile(fd, source, &offset, left)
            if n > 0 { left -= n; continue }
            if n < 0 && errno == EINTR { continue }
            // A file system without sendfile between these two: through the mapping.
            try writeAll(fd, mapping!.view[view: Int(offset)..<range.upperBound], path: path)
            return
        }
    }

    /// A ustar numeric field: octal digits (at most 11), then NULs or spaces; nil for anything else
    /// (a sign, a base-256 field, digits past the field's end).
    static func octal(_ field: ByteView) -> Int? {
        var value = 0, digits = 0, ended = false
        for b in field {
            if b == 0 || b == 0x20 { ended = digits > 0 || ended; continue }
            guard !ended, b >= UInt8(ascii: "0"), b <= UInt8(ascii: "7"), digits < 11 else { return nil }
            value = value * 8 + Int(b - UInt8(ascii: "0"))
            digits += 1
        }
        return digits > 0 ? value : nil
    }

    /// A relative path that stays below the folder: not absolute, no `.` or `..` or empty part,
    /// no control character.
    package static func isSafeMemberName(_ name: String) -> Bool { isSafeMemberName(Array(name.utf8)) }

    /// The same, on a name's bytes (every member of an archive: no String per member).
    static func isSafeMemberName(_ name: some Collection<UInt8>) -> Bool {
        var partLength = 0, dots = 0
        for b in name {
            if b < 0x20 || b == 0x7F { return false }
            if b == UInt8(ascii: "/") {
                // An empty part (a leading `/`, `//`) or a `.` or `..` part.
                if partLength == 0 || dots == partLength { return false }
                partLength = 0
                dots = 0
            } else {
                partLength += 1
                if b == UInt8(ascii: ".") && dots == partLength - 1 && partLength <= 2 { dots += 1 }
            }
        }
        return partLength > 0 && dots != partLength
    }

    /// Walks an archive's ustar headers: each member with its name and body. Only what appconfig
    /// writes is taken (regular files, names of at most 100 bytes, two zero blocks at the end).
    private static func walk(_ b: ByteView, path: String, _ body: (Member, String, ByteView) throws(Problem) -> Void) throws(Problem) {
        let block = Tar.blockSize
        var offset = 0
        func fail(_ why: String) -> Problem {
            Problem(.mergeInput, at: Location(file: path), "\(path) is not an archive appconfig wrote: \(why) at byte \(offset)")
        }
        while true {
            guard offset + block <= b.count else { throw fail("it ends without its two zero blocks") }
            let header = b[view: offset..<(offset + block)]
            if header.allSatisfy({ $0 == 0 }) {
                guard offset + 2 * block <= b.count, b[(offset + block)..<(offset + 2 * block)].allSatisfy({ $0 == 0 }) else { throw fail("a lone zero block") }
                return
            }
            guard header[257..<262].elementsEqual("ustar".utf8), header[156] == UInt8(ascii: "0") || header[156] == 0 else {
                throw fail("a header that is not a ustar regular file")
            }
            // appconfig writes names of at most 100 bytes: a ustar prefix would name another path.
            guard header[view: 345..<500].allSatisfy({ $0 == 0 }) else { throw fail("a member name with a ustar prefix") }
            let nameLength = header[0..<100].firstIndex(of: 0) ?? 100
            guard nameLength > 0, let size = octal(header[view: 124..<136]) else { throw fail("a header without a name or a size in octal digits") }
            guard isSafeMemberName(header[0..<nameLength]) else {
                throw fail("the member name \(Problem.printable(String(decoding: header[0..<nameLength], as: UTF8.self))), which leaves the output's folder")
            }
            let name = String(decoding: header[0..<nameLength], as: UTF8.self)
            let length = block + size + Tar.padding(for: size)
            guard length <= b.count - offset else { throw fail("a member longer than the archive") }
            let bodyRange = (offset + block)..<(offset + block + size)
            try body(Member(offset: offset, length: length, name: offset..<(offset + nameLength), body: bodyRange), name, b[view: bodyRange])
            offset += length
        }
    }
}
