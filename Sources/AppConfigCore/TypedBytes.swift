extension Array where Element == UInt8 {
    /// `withUnsafeBytes` that keeps the body's error type (the standard one throws `any Error`).
    @inlinable
    package func withBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try withUnsafeBufferPointer { b throws(E) in try body(UnsafeRawBufferPointer(b)) }
    }
}
