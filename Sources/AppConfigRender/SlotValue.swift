import AppConfigCore

/// One variable's value for one device: UTF-8 bytes in the caller's buffers (the inventory and
/// directory tables), borrowed for the duration of one render. `count < 0` means missing.
@frozen public struct SlotValue {
    public var start: UnsafePointer<UInt8>?
    public var count: Int

    public init(start: UnsafePointer<UInt8>?, count: Int) {
        self.start = start
        self.count = count
    }

    public static var missing: SlotValue { SlotValue(start: nil, count: -1) }

    /// A value's bytes, or missing (nil).
    @inlinable @inline(__always)
    package init(_ view: ByteView?) {
        if let view {
            self = view.withUnsafeBufferPointer { SlotValue(start: $0.baseAddress, count: $0.count) }
        } else {
            self = .missing
        }
    }

    /// The value's bytes, nil when it is missing.
    @inlinable @inline(__always)
    package var view: ByteView? { count < 0 ? nil : ByteView(UnsafeBufferPointer(start: start, count: count)) }
}
