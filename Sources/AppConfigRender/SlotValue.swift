import AppConfigCore

/// One variable's value for one device: UTF-8 bytes in the caller's buffers (the inventory and
/// directory tables), borrowed for the duration of one render, or missing.
@frozen public struct SlotValue {
    /// The value's bytes (none when it is missing).
    public let bytes: ByteView
    /// No value at all, as against an empty one: a key's `missing` policy tells them apart.
    public let isMissing: Bool

    public static var missing: SlotValue { SlotValue(nil) }

    /// A value's bytes, or missing (nil).
    @inlinable @inline(__always)
    public init(_ view: ByteView?) {
        bytes = view ?? .empty
        isMissing = view == nil
    }

    /// The value's bytes, nil when it is missing.
    @inlinable @inline(__always)
    package var view: ByteView? { isMissing ? nil : bytes }
}
