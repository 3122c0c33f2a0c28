import AppConfigSpec
import Digest
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `--delivery ddm`: for every device its plist as a data asset (`assets/<sha256>.plist`), its
/// three declarations (`declarations/<Identifier>.json`), its declaration set (at its folder path,
/// `.json`), and a line of `index.jsonl`; shared assets and declarations are stored once. Into a
/// generation folder (published by the same symlink switch as plists) or a tar (the same temporary
/// name and rename). Devices come in key order and chunks are finished in order, so the index and
/// the archive are the same bytes on every run.
public final class DDMSink: OutputSink, @unchecked Sendable {
    private enum Container {
        case folder(FolderSink, index: Int32)
        case tar(AtomicFile?, descriptor: Int32, name: String, index: Int32)
    }

    private let container: Container
    private let builder: DeclarationBuilder
    /// `--changed-only`: devices whose declaration set is unchanged are not written.
    private let filter: ChangeFilter?
    /// Chunks written in order by a writer thread; for a tar, what is written so far (content
    /// keys of shared members, index bytes).
    private let order: OrderedChunks<TarState>

    struct TarState: Sendable {
        var seen = Set<SHA256Digest>()
        var indexBytes = 0
    }

    /// Record kinds in a tar chunk: a device's member, a shared member (skipped when written
    /// before), a line of the index.
    private enum Record: UInt8 { case member, shared, index }

    public var wantsKeyOrder: Bool { true }

    /// Into a generation folder beside `path`.
    public init(folder path: String, keep: Int, delivery: ResolvedDelivery, filter: ChangeFilter? = nil) throws(Problem) {
        let folder = try FolderSink(path: path, keep: keep)
        self.filter = filter
        let fd: Int32
        do { fd = try folder.createAppending("index.jsonl") } catch {
            folder.discard()
            throw error
        }
        container = .folder(folder, index: fd)
        order = Self.writer(for: container)
        builder = DeclarationBuilder(delivery: delivery)
    }

    /// Into a tar archive at `path`, or streamed to `descriptor` when `path` is nil. The index is
    /// gathered in an unlinked temporary file beside it and appended as the last member.
    public init(tar path: String?, descriptor stream: Int32 = 1, delivery: ResolvedDelivery, filter: ChangeFilter? = nil) throws(Problem) {
        self.filter = filter
        if let path { AtomicFile.removeStale(beside: path) }
        let file = try path.map { p throws(Problem) in try AtomicFile(path: p) }
        // Beside the archive, or in the temporary folder for a stream.
        let scratch = (path ?? (FileManager.default.temporaryDirectory.path + "/appconfig")) + ".index-\(getpid())"
        let fd = open(scratch, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            file?.discard()
            throw Problem(.outputWrite, at: Location(file: scratch), "cannot create \(scratch): \(systemError())")
        }
        unlink(scratch)
        container = .tar(file, descriptor: file?.descriptor ?? stream, name: path ?? "-", index: fd)
        order = Self.writer(for: container)
        builder = DeclarationBuilder(delivery: delivery)
    }

    public var pathExtension: StaticString { ".json" }

    func path(of key: UnsafeBufferPointer<UInt8>) -> String { OutputNames.relativePath(key, extension: ".json") }

    /// The device's digest is its declaration set's (which names its asset and declarations).
    public func add(key: UnsafeBufferPointer<UInt8>, plist: UnsafeRawBufferPointer, to chunk: inout [UInt8]) throws(Problem) -> SHA256Digest {
        try add(key: key, plist: plist, indexFields: UnsafeBufferPointer(start: nil, count: 0), to: &chunk)
    }

    public func add(key: UnsafeBufferPointer<UInt8>, plist: UnsafeRawBufferPointer, indexFields: UnsafeBufferPointer<UInt8>, to chunk: inout [UInt8]) throws(Problem) -> SHA256Digest {
        let d = builder.build(plist: plist)
        var set: [UInt8] = []
        DeclarationBuilder.setFile(key: key, d, into: &set)
        let digest = SHA256Digest(of: set)
        if filter?.skips(key, digest) == true { return digest }
        let assetName = "assets/" + String(decoding: d.assetHash, as: UTF8.self) + ".plist"
        var line: [UInt8] = []
        DeclarationBuilder.indexLine(key: key, d, path: path(of: key), digest: digest, extra: indexFields, into: &line)
        switch container {
        case .folder(let folder, _):
            try folder.write(plist, to: assetName, once: true)
            for declaration in d.declarations {
                try folder.write(declaration.json, to: Self.declarationPath(declaration), once: true)
            }
            try folder.write(set, to: path(of: key))
            chunk += line
        case .tar:
            // The asset and its three declarations, as one shared record keyed by the asset's hash:
            // the declarations follow from the asset alone, so one is written exactly when the other is.
            Self.record(.shared, d.assetDigest, into: &chunk) { out in
                Tar.appendMember(named: assetName, bytes: plist, to: &out)
                for declaration in d.declarations {
                    declaration.json.withUnsafeBytes { Tar.appendMember(named: Self.declarationPath(declaration), bytes: $0, to: &out) }
                }
            }
            Self.record(.member, nil, into: &chunk) { out in
                Tar.appendMember(to: &out, path: { OutputNames.appendRelativePath(key, extension: ".json", to: &$0) },
                                 body: { $0 += set })
            }
            Self.record(.index, nil, into: &chunk) { $0 += line }
        }
        return digest
    }

    /// A device gone from the fleet: its set is written empty.
    public func addRemoved(key: UnsafeBufferPointer<UInt8>) throws(Problem) {
        var set: [UInt8] = []
        JSONText.append(#"{"device":"#, to: &set)
        JSONText.appendString(key, to: &set)
        JSONText.append(",\"declarations\":[]}\n", to: &set)
        switch container {
        case .folder(let folder, let fd):
            try folder.write(set, to: path(of: key))
            try writeAll(fd, set, path: "index.jsonl")
        case .tar(_, let fd, let name, let indexFD):
            var member: [UInt8] = []
            Tar.appendMember(to: &member, path: { OutputNames.appendRelativePath(key, extension: ".json", to: &$0) }, body: { $0 += set })
            try writeAll(fd, member, path: name)
            try writeAll(indexFD, set, path: name + " (index)")
            try order.withState { $0.indexBytes += set.count }
        }
    }

    public func finish(chunk index: Int, _ chunk: inout [UInt8]) throws(Problem) { try order.finish(index, &chunk) }
    public func closeChunks() throws(Problem) { try order.close() }
    public func abandonChunks() { order.abandon() }

    /// What the writer thread does with each chunk in turn: a folder's are index lines; a tar's
    /// are records, whose members go to the archive (a shared one once) and lines to the index.
    private static func writer(for container: Container) -> OrderedChunks<TarState> {
        switch container {
        case .folder(_, let fd):
            return OrderedChunks(TarState()) { _, lines throws(Problem) in try writeAll(fd, lines, path: "index.jsonl") }
        case .tar(_, let fd, let name, let indexFD):
            return OrderedChunks(TarState()) { state, records throws(Problem) in
                var out: [UInt8] = []
                var lines: [UInt8] = []
                forEachRecord(records) { kind, key, body in
                    switch kind {
                    case .member: out.append(contentsOf: body)
                    case .shared: if state.seen.insert(key!).inserted { out.append(contentsOf: body) }
                    case .index: lines.append(contentsOf: body)
                    }
                }
                try writeAll(fd, out, path: name)
                try writeAll(indexFD, lines, path: name + " (index)")
                state.indexBytes += lines.count
            }
        }
    }

    /// The closing files but `index.jsonl` (this sink writes its own, with each device's
    /// declarations), then the archive's end or the folder's switch.
    public func publish(closing files: [ClosingFile]) throws(Problem) -> String {
        // This sink wrote its own index (with each device's declarations): the generation's is not made.
        let closing = files.filter { $0.name != "index.jsonl" }
        try order.close()
        switch container {
        case .folder(let folder, let fd):
            guard close(fd) == 0 else {
                throw Problem(.outputWrite, at: Location(file: folder.generation), "cannot write the index: \(systemError())")
            }
            return try folder.publish(closing: closing)
        case .tar(let file, let fd, let name, let indexFD):
            let size = try order.withState { $0.indexBytes }
            try writeAll(fd, Tar.header(named: "index.jsonl", size: size), path: name)
            try copy(indexFD, size: size, to: fd, name: name)
            try writeAll(fd, [UInt8](repeating: 0, count: Tar.padding(for: size)), path: name)
            close(indexFD)
            return try Tar.end(fd, name: name, closing: closing, file: file)
        }
    }

    public func discard() {
        order.abandon()
        switch container {
        case .folder(let folder, let fd):
            close(fd)
            folder.discard()
        case .tar(let file, _, _, let indexFD):
            close(indexFD)
            file?.discard()
        }
    }

    /// A device's digest as this sink computes it (its set file's), for a dry run.
    static func digest(_ delivery: ResolvedDelivery) -> DryRunSink.Digester {
        let builder = DeclarationBuilder(delivery: delivery)
        return { key, plist in
            var set: [UInt8] = []
            DeclarationBuilder.setFile(key: key, builder.build(plist: plist), into: &set)
            return SHA256Digest(of: set)
        }
    }

    static func declarationPath(_ d: DeviceDeclarations.Declaration) -> String {
        "declarations/" + String(decoding: d.identifier, as: UTF8.self) + ".json"
    }

    /// The index, from its temporary file into the archive.
    private func copy(_ from: Int32, size: Int, to: Int32, name: String) throws(Problem) {
        guard lseek(from, 0, SEEK_SET) == 0 else { throw Problem(.outputWrite, at: Location(file: name), "cannot read the index back: \(systemError())") }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var left = size
        while left > 0 {
            let n = buffer.withUnsafeMutableBytes { read(from, $0.baseAddress, min($0.count, left)) }
            guard n > 0 else { throw Problem(.outputWrite, at: Location(file: name), "cannot read the index back: \(systemError())") }
            try writeAll(to, Array(buffer[0..<n]), path: name)
            left -= n
        }
    }

    // MARK: Chunk records: kind, 32-byte digest (shared only), 4-byte length, bytes.

    private static func record(_ kind: Record, _ key: SHA256Digest?, into out: inout [UInt8], _ body: (inout [UInt8]) -> Void) {
        out.append(kind.rawValue)
        if let key { withUnsafeBytes(of: key) { out += $0 } }
        let lengthAt = out.count
        out += [0, 0, 0, 0]
        body(&out)
        let n = UInt32(out.count - lengthAt - 4)
        withUnsafeBytes(of: n) { for i in 0..<4 { out[lengthAt + i] = $0[i] } }
    }

    private static func forEachRecord(_ records: [UInt8], _ body: (Record, SHA256Digest?, ArraySlice<UInt8>) -> Void) {
        records.withUnsafeBytes { b in
            var i = 0
            while i < b.count {
                let kind = Record(rawValue: b[i])!
                i += 1
                var key: SHA256Digest?
                if kind == .shared {
                    key = b.loadUnaligned(fromByteOffset: i, as: SHA256Digest.self)
                    i += MemoryLayout<SHA256Digest>.size
                }
                let n = Int(b.loadUnaligned(fromByteOffset: i, as: UInt32.self))
                i += 4
                body(kind, key, records[i..<(i + n)])
                i += n
            }
        }
    }
}
