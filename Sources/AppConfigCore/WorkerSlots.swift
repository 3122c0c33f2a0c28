/// A buffer handed to the workers of one `concurrentPerform`, each touching only its own elements
/// (its part, its rows): what lets them write results in place, with no lock, while the caller's
/// `withUnsafeMutableBufferPointer` keeps the storage alive.
package struct WorkerSlots<T>: @unchecked Sendable {
    package let buffer: UnsafeMutableBufferPointer<T>
    package init(_ buffer: UnsafeMutableBufferPointer<T>) { self.buffer = buffer }
}
