import AppConfigSpec

/// Where rendered devices go. The batch renderer hands each device's bytes to the sink from the
/// worker thread that rendered it, chunk by chunk; the job then publishes the sink's output whole,
/// or discards it. Folder generation, tar file, tar stream and dry run are sinks; so are the
/// delivery formats.
public protocol OutputSink: AnyObject, Sendable {
    /// True when members must appear in device-key order (an archive): the renderer then sorts the
    /// rows and hands the chunks' bytes to `finish` to be written in chunk order.
    var wantsKeyOrder: Bool { get }

    /// Takes one rendered device. `chunk` is the calling worker's buffer for the current chunk: a
    /// sink that writes in chunk order appends the device's bytes there; one that writes each device
    /// at once (a folder) leaves it alone.
    func add(key: UnsafeBufferPointer<UInt8>, plist: UnsafeRawBufferPointer, to chunk: inout [UInt8]) throws(Problem)

    /// Chunk `index` is complete. The sink takes its bytes (leaving `chunk` empty for reuse).
    func finish(chunk index: Int, _ chunk: inout [UInt8]) throws(Problem)

    /// Every device is rendered and the run may be published: makes the output visible whole and
    /// returns where it is.
    func publish() throws(Problem) -> String

    /// The run is not published (an interrupt, too many failures, an error): removes what was written.
    func discard()
}

extension OutputSink {
    public var wantsKeyOrder: Bool { false }
    public func finish(chunk index: Int, _ chunk: inout [UInt8]) throws(Problem) { chunk.removeAll(keepingCapacity: true) }
}

/// `--dry-run`: every device is resolved and checked; nothing is written.
public final class DryRunSink: OutputSink {
    public init() {}
    public func add(key: UnsafeBufferPointer<UInt8>, plist: UnsafeRawBufferPointer, to chunk: inout [UInt8]) throws(Problem) {}
    public func publish() throws(Problem) -> String { "" }
    public func discard() {}
}
