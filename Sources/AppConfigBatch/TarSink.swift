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
    private let name: String
    /// The next chunk to write, and the finished chunks waiting for it.
    private let order = Mutex<(next: Int, waiting: [Int: [UInt8]])>((0, [:]))

    /// An archive written to `path`, published by a rename.
    public init(path: String) throws(Problem) {
        let file = try AtomicFile(path: path)
        self.file = file
        descriptor = file.descriptor
        name = path
    }

    /// An archive streamed to a descriptor (standard output); publishing only ends it.
    public init(streamingTo descriptor: Int32, name: String = "-") {
        file = nil
        self.descriptor = descriptor
        self.name = name
    }

    public var wantsKeyOrder: Bool { true }

    public func add(key: UnsafeBufferPointer<UInt8>, plist: UnsafeRawBufferPointer, to chunk: inout [UInt8]) throws(Problem) {
        Tar.appendHeader(key: key, size: plist.count, to: &chunk)
        chunk.append(contentsOf: plist)
        chunk.append(contentsOf: repeatElement(0, count: Tar.padding(for: plist.count)))
    }

    public func finish(chunk index: Int, _ chunk: inout [UInt8]) throws(Problem) {
        let bytes = chunk
        chunk = []
        try order.withLock { state throws(Problem) in
            state.waiting[index] = bytes
            while let next = state.waiting.removeValue(forKey: state.next) {
                try writeAll(descriptor, next, path: name)
                state.next += 1
            }
        }
    }

    public func publish() throws(Problem) -> String {
        try writeAll(descriptor, Tar.trailer, path: name)
        try file?.commit()
        return name
    }

    public func discard() { file?.discard() }
}
