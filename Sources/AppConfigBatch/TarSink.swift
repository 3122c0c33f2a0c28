import AppConfigSpec
import Synchronization

/// A ustar archive of the devices in device-key order, one member per device at its folder path.
/// Workers render chunks in parallel and append their members to their chunk buffer; a finished
/// chunk is written as soon as every chunk before it is, so writing overlaps rendering and at most
/// a few chunks per thread wait in memory. To a file (written under a temporary name and renamed
/// when complete) or to a stream (standard output: the consumer sees it as it is written).
public final class TarSink: OutputSink, @unchecked Sendable {
    private let file: AtomicFile?
    private let descriptor: Int32
    /// Makes each device's file from its rendered plist (an MDM command); nil writes the plist.
    private let encoder: DeviceFileEncoder?
    private let name: String
    /// Chunks written in chunk order.
    private let order = OrderedChunks(())

    /// An archive written to `path`, published by a rename.
    public init(path: String, encoder: DeviceFileEncoder? = nil) throws(Problem) {
        let file = try AtomicFile(path: path)
        self.file = file
        descriptor = file.descriptor
        name = path
        self.encoder = encoder
    }

    /// An archive streamed to a descriptor (standard output); publishing only ends it.
    public init(streamingTo descriptor: Int32, name: String = "-", encoder: DeviceFileEncoder? = nil) {
        file = nil
        self.descriptor = descriptor
        self.name = name
        self.encoder = encoder
    }

    public var wantsKeyOrder: Bool { true }

    public func add(key: UnsafeBufferPointer<UInt8>, plist: UnsafeRawBufferPointer, to chunk: inout [UInt8]) throws(Problem) {
        Tar.appendMember(to: &chunk, path: { OutputNames.appendRelativePath(key, to: &$0) }) { body in
            if let encoder { encoder.encode(key: key, plist: plist, into: &body) } else { body.append(contentsOf: plist) }
        }
    }

    public func finish(chunk index: Int, _ chunk: inout [UInt8]) throws(Problem) {
        let bytes = chunk
        chunk = []
        try order.finish(index, bytes) { _, next throws(Problem) in try writeAll(descriptor, next, path: name) }
    }

    public func publish() throws(Problem) -> String {
        try writeAll(descriptor, Tar.trailer, path: name)
        try file?.commit()
        return name
    }

    public func discard() { file?.discard() }
}
