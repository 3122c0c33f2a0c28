import AppConfigCore

/// A closing file of a generation (the index, the manifest), made when the sink writes it and
/// handed over in pieces as they are made: each is a line per device, and building them whole
/// first was the job's peak in memory. `write` makes the file and calls `emit` with its bytes in order, a piece
/// at a time; a piece is valid only during its call (its buffer is made again into the next).
public struct ClosingFile {
    public typealias Emit = (ByteView) throws(Problem) -> Void
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
    public static func emit(_ bytes: [UInt8], to emit: Emit) throws(Problem) {
        try bytes.withView { b throws(Problem) in try emit(b) }
    }
}
