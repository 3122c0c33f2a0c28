import AppConfigCore
import Digest
import Foundation

/// A ustar archive of the devices in device-key order, one member per device at its folder path,
/// then the closing files (the index, the manifest last). Workers render chunks in parallel and
/// append their members to their chunk buffer; a finished chunk is written as soon as every chunk
/// before it is, so writing overlaps rendering and at most a few chunks per thread wait in memory.
/// To a file (written under a temporary name and renamed when complete, its manifest then also
/// beside it as `FILE.manifest.tsv` for a quick `--since`) or to a stream (standard output: the
/// consumer sees it as it is written).
public final class TarSink: OutputSink, @unchecked Sendable {
    private let file: AtomicFile?
    private let descriptor: Int32
    private let name: String
    /// Makes each device's file from its rendered plist (an MDM command); nil writes the plist.
    private let encoder: DeviceFileEncoder?
    /// `--changed-only`: devices whose output is unchanged are not written.
    private let filter: ChangeFilter?
    /// Chunks written in chunk order, by a writer thread; then removal members.
    private let order: OrderedChunks<Void>

    /// An archive written to `path`, published by a rename. Temporaries that died with their run
    /// (`FILE.tmp-PID`, the caller holding the output's lock) are removed first.
    public init(path: String, encoder: DeviceFileEncoder? = nil, filter: ChangeFilter? = nil) throws(Problem) {
        AtomicFile.removeStale(beside: path)
        let file = try AtomicFile(path: path)
        self.file = file
        descriptor = file.descriptor
        name = path
        self.encoder = encoder
        self.filter = filter
        order = Self.writer(descriptor, path)
    }

    /// An archive streamed to a descriptor (standard output); publishing only ends it.
    public init(streamingTo descriptor: Int32, name: String = "-", encoder: DeviceFileEncoder? = nil, filter: ChangeFilter? = nil) {
        file = nil
        self.descriptor = descriptor
        self.name = name
        self.encoder = encoder
        self.filter = filter
        order = Self.writer(descriptor, name)
    }

    private static func writer(_ descriptor: Int32, _ name: String) -> OrderedChunks<Void> {
        OrderedChunks(()) { _, chunk throws(Problem) in try writeAll(descriptor, chunk, path: name) }
    }

    public var wantsKeyOrder: Bool { true }

    public func add(key: UnsafeBufferPointer<UInt8>, plist: UnsafeRawBufferPointer, to chunk: inout [UInt8]) throws(Problem) -> SHA256Digest {
        let start = chunk.count
        var digest = SHA256Digest(a: 0, b: 0, c: 0, d: 0)
        Tar.appendMember(to: &chunk, path: { OutputNames.appendRelativePath(key, to: &$0) }) { body in
            let bodyStart = body.count
            if let encoder { encoder.encode(key: key, plist: plist, into: &body) } else { body.append(contentsOf: plist) }
            digest = body.withUnsafeBytes { SHA256Digest(of: UnsafeRawBufferPointer(rebasing: $0[bodyStart...])) }
        }
        if filter?.skips(key, digest) == true { chunk.removeSubrange(start...) }
        return digest
    }

    public func finish(chunk index: Int, _ chunk: inout [UInt8]) throws(Problem) {
        try order.finish(index, &chunk)
    }

    public func closeChunks() throws(Problem) { try order.close() }
    public func abandonChunks() { order.abandon() }

    public var writesRemovalFiles: Bool { encoder != nil }

    public func addRemoved(key: UnsafeBufferPointer<UInt8>) throws(Problem) {
        guard let removal = encoder?.removal(key: key) else { return }
        var member: [UInt8] = []
        Tar.appendMember(to: &member, path: { OutputNames.appendRelativePath(key, to: &$0) }, body: { $0 += removal })
        try writeAll(descriptor, member, path: name)
    }

    public func publish(closing files: [ClosingFile]) throws(Problem) -> String {
        try order.close()
        return try Tar.end(descriptor, name: name, closing: files, file: file, copying: Manifest.fileName)
    }

    public func discard() {
        order.abandon()
        file?.discard()
    }
}
