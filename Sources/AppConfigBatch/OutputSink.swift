import AppConfigCore
import Digest

/// Where rendered devices go. The batch renderer hands each device's bytes to the sink from the
/// worker thread that rendered it, chunk by chunk; the job then publishes the sink's output whole,
/// with the generation's closing files (the index, then the manifest that marks it complete), or
/// discards it. Folder generation, tar file, tar stream, dry run and DDM are sinks.
public protocol OutputSink: AnyObject, Sendable {
    /// True when members must appear in device-key order (an archive): the renderer then sorts the
    /// rows and hands the chunks' bytes to `finish` to be written in chunk order.
    var wantsKeyOrder: Bool { get }

    /// The ending of a device's output file (`.plist`; `.json` for a DDM declaration set): its
    /// path in the generation is `OutputNames.appendRelativePath(key, extension:)`.
    var pathExtension: StaticString { get }

    /// Takes one rendered device and returns the SHA-256 of the output that stands for it. `chunk`
    /// is the calling worker's buffer for the current chunk: a sink that writes in chunk order
    /// appends the device's bytes there; one that writes each device at once uses it as scratch.
    /// A device the change filter finds unchanged is not written (`--changed-only`).
    func add(key: UnsafeBufferPointer<UInt8>, plist: UnsafeRawBufferPointer, to chunk: inout [UInt8]) throws(Problem) -> SHA256Digest

    /// The same with all the renderer knows of the device, for a sink that writes its own
    /// `index.jsonl` and more than one file per device (DDM).
    func add(_ device: RenderedDevice, to chunk: inout [UInt8]) throws(Problem) -> SHA256Digest

    /// Chunk `index` is complete. The sink takes its bytes (leaving `chunk` empty for reuse).
    func finish(chunk index: Int, _ chunk: inout [UInt8]) throws(Problem)

    /// Every chunk is handed over: returns when they are written, with the first write error.
    func closeChunks() throws(Problem)

    /// A worker failed: chunks not yet written are dropped, workers waiting in `finish` return.
    func abandonChunks()

    /// A device gone since the previous generation (`--changed-only`): what removes its
    /// configuration, where the delivery has one (an MDM removal command, an empty DDM set).
    func addRemoved(key: UnsafeBufferPointer<UInt8>) throws(Problem)

    /// Whether `addRemoved` writes a file of its own (an MDM removal command, a DDM set in the
    /// files layout) at the device's path: `changes.jsonl` then names it.
    var writesRemovalFiles: Bool { get }

    /// Every device is rendered and the run may be published: writes the closing files (in order:
    /// the manifest last), makes the output visible whole and returns where it is.
    func publish(closing files: [ClosingFile]) throws(Problem) -> String

    /// The run is not published (an interrupt, too many failures, an error): removes what was written.
    func discard()
}

/// A closing file of a generation (the index, the manifest), made when the sink writes it and
/// handed over in pieces as they are made: each is a line per device, and building them whole
/// first was the job's peak in memory. `write` makes the file and calls `emit` with its bytes in order, a piece
/// at a time; a piece is valid only during its call (its buffer is made again into the next).
public struct ClosingFile {
    public typealias Emit = (UnsafeBufferPointer<UInt8>) throws(Problem) -> Void
    public let name: String
    public let write: (_ emit: Emit) throws(Problem) -> Void

    public init(name: String, write: @escaping (_ emit: Emit) throws(Problem) -> Void) {
        self.name = name
        self.write = write
    }

    public init(_ name: String, _ bytes: [UInt8]) {
        self.init(name: name) { emit throws(Problem) in try Self.emit(bytes, to: emit) }
    }

    /// Hands `bytes` to `emit` as one piece.
    static func emit(_ bytes: [UInt8], to emit: Emit) throws(Problem) {
        try bytes.withUnsafeBufferPointer { b throws(Problem) in try emit(b) }
    }
}

/// One rendered device, as the batch renderer hands it to a sink: every buffer is valid only
/// during the call.
public struct RenderedDevice {
    public var key: UnsafeBufferPointer<UInt8>
    /// The app's configuration.
    public var plist: UnsafeRawBufferPointer
    /// Each app extension's configuration, in `ResolvedDelivery.extensions` order (DDM).
    public var extensions: UnsafeBufferPointer<UnsafeRawBufferPointer>
    /// JSON members with their leading commas (the assignments that applied): the end of the
    /// device's `index.jsonl` line.
    public var indexFields: UnsafeBufferPointer<UInt8>
    /// The device's place in device-key order (`BatchResult.order`).
    public var position: Int
    /// Its variant (the set of assignments that matched it; 0: none).
    public var variant = 0
    /// Its credential documents (DDM with `credentials`), cleared after the call.
    public var credentials = UnsafeBufferPointer<RenderedCredential>(start: nil, count: 0)

    public init(key: UnsafeBufferPointer<UInt8>, plist: UnsafeRawBufferPointer,
                extensions: UnsafeBufferPointer<UnsafeRawBufferPointer> = UnsafeBufferPointer(start: nil, count: 0),
                indexFields: UnsafeBufferPointer<UInt8> = UnsafeBufferPointer(start: nil, count: 0), position: Int = 0) {
        self.key = key
        self.plist = plist
        self.extensions = extensions
        self.indexFields = indexFields
        self.position = position
    }
}

extension OutputSink {
    public func add(_ device: RenderedDevice, to chunk: inout [UInt8]) throws(Problem) -> SHA256Digest {
        try add(key: device.key, plist: device.plist, to: &chunk)
    }
    public var wantsKeyOrder: Bool { false }
    public var pathExtension: StaticString { ".plist" }
    public func finish(chunk index: Int, _ chunk: inout [UInt8]) throws(Problem) { chunk.removeAll(keepingCapacity: true) }
    public func closeChunks() throws(Problem) {}
    public func abandonChunks() {}
    public func addRemoved(key: UnsafeBufferPointer<UInt8>) throws(Problem) {}
    public var writesRemovalFiles: Bool { false }
}

/// Which devices are unchanged since a previous generation: their digest there equals tonight's.
/// Shared by the workers (read-only).
public final class ChangeFilter: Sendable {
    public let previous: Manifest
    /// `--changed-only`: unchanged devices are not written.
    public let skipsUnchanged: Bool

    public init(previous: Manifest, skipsUnchanged: Bool) {
        self.previous = previous
        self.skipsUnchanged = skipsUnchanged
    }

    /// True when the device is to be left out: `--changed-only` and the same digest as before.
    @inline(__always)
    public func skips(_ key: UnsafeBufferPointer<UInt8>, _ digest: SHA256Digest) -> Bool {
        skipsUnchanged && previous.digest(forKey: key) == digest
    }
}

/// `--dry-run`: every device is resolved and checked; nothing is written. Each device's digest is
/// the one its delivery would have (for the change counts of `--dry-run --since`).
public final class DryRunSink: OutputSink {
    public typealias Digester = @Sendable (RenderedDevice) -> SHA256Digest
    private let digester: Digester?

    /// `digest` makes a device's digest from what was rendered for it; nil: the plist's own.
    public init(digest: Digester? = nil) { digester = digest }

    public func add(key: UnsafeBufferPointer<UInt8>, plist: UnsafeRawBufferPointer, to chunk: inout [UInt8]) throws(Problem) -> SHA256Digest {
        try add(RenderedDevice(key: key, plist: plist), to: &chunk)
    }
    public func add(_ device: RenderedDevice, to chunk: inout [UInt8]) throws(Problem) -> SHA256Digest {
        digester?(device) ?? SHA256Digest(of: device.plist)
    }
    public func publish(closing files: [ClosingFile]) throws(Problem) -> String { "" }
    public func discard() {}
}
