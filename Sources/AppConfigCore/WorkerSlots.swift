/// A buffer handed to the workers of one `concurrentPerform`, each touching only its own elements
/// (its part, its rows): what lets them write results in place, with no lock, while the caller's
/// `withUnsafeMutableBufferPointer` keeps the storage alive.
public struct WorkerSlots<T>: @unchecked Sendable {
    public let buffer: UnsafeMutableBufferPointer<T>
    public init(_ buffer: UnsafeMutableBufferPointer<T>) { self.buffer = buffer }
}
