/// Elements borrowed from storage another value owns (a mapped file, a table's pool, the render
/// buffer, an array for the length of a closure): how keys, values, encoded files and per-device
/// lists pass between readers, tables and writers instead of pointers. A view never owns or frees
/// its elements and is valid while its owner keeps them. Reading past its end traps in debug
/// builds; release builds trust the count, as the loops over every device of a fleet need.
@frozen
public struct BufferView<Element>: RandomAccessCollection, @unchecked Sendable {
    @usableFromInline let elements: UnsafeBufferPointer<Element>

    @inlinable @inline(__always)
    package init(_ elements: UnsafeBufferPointer<Element>) { self.elements = elements }

    /// A view of elements an embedder keeps alive for as long as the view is used: the one door
    /// from pointers into the engine's API (`Renderer.render` takes views of `SlotValue`s).
    @inlinable @inline(__always)
    public init(unsafeElements elements: UnsafeBufferPointer<Element>) { self.elements = elements }

    /// No elements.
    @inlinable package static var empty: BufferView { BufferView(UnsafeBufferPointer(start: nil, count: 0)) }

    @inlinable public var startIndex: Int { 0 }
    @inlinable public var endIndex: Int { elements.count }
    @inlinable public var count: Int { elements.count }
    @inlinable public var isEmpty: Bool { elements.isEmpty }

    @inlinable @inline(__always)
    public subscript(i: Int) -> Element {
        assert(i >= 0 && i < elements.count, "a read outside the view")
        return elements[i]
    }

    /// The elements in `range`, as a view of its own (indexed from 0).
    @inlinable @inline(__always)
    package subscript(view range: Range<Int>) -> BufferView {
        assert(range.lowerBound >= 0 && range.upperBound <= elements.count, "a range outside the view")
        return BufferView(UnsafeBufferPointer(rebasing: elements[range]))
    }

    /// Whether the two views are the same elements of the same storage (not only equal ones).
    @inlinable @inline(__always)
    package func isSame(as other: BufferView) -> Bool {
        elements.baseAddress == other.elements.baseAddress && elements.count == other.elements.count
    }

    /// The elements from `start` on, as a view of its own.
    @inlinable @inline(__always)
    package subscript(view range: PartialRangeFrom<Int>) -> BufferView { self[view: range.lowerBound..<elements.count] }

    @inlinable
    public func withContiguousStorageIfAvailable<R>(_ body: (UnsafeBufferPointer<Element>) throws -> R) rethrows -> R? {
        try body(elements)
    }

    /// The pointer, for the few named types that read at an address (scanners, hashes, syscalls).
    @inlinable @inline(__always)
    package func withUnsafeBufferPointer<R, E: Error>(_ body: (UnsafeBufferPointer<Element>) throws(E) -> R) throws(E) -> R {
        try body(elements)
    }
}

/// Bytes borrowed: a key, a value, an encoded file.
public typealias ByteView = BufferView<UInt8>

extension BufferView where Element: BitwiseCopyable {
    /// The elements' bytes as they lie in memory (a table written to a file as it is).
    @inlinable package var bytes: ByteView { ByteView(UnsafeRawBufferPointer(elements)) }

    /// `count` elements at `offset` of `bytes`, which must be aligned for them there (a table
    /// read from a mapped file as it was written), nil when they are not.
    @inlinable package init?(_ bytes: ByteView, at offset: Int, count: Int) {
        guard offset >= 0, count >= 0, offset + count * MemoryLayout<Element>.stride <= bytes.count else { return nil }
        guard count > 0, let base = bytes.elements.baseAddress else {
            self = .empty
            return
        }
        let start = UnsafeRawPointer(base) + offset
        guard Int(bitPattern: start) % MemoryLayout<Element>.alignment == 0 else { return nil }
        self.init(UnsafeBufferPointer(start: start.assumingMemoryBound(to: Element.self), count: count))
    }
}

extension BufferView where Element == UInt8 {
    @inlinable @inline(__always)
    package init(_ bytes: UnsafeRawBufferPointer) { self.init(bytes.assumingMemoryBound(to: UInt8.self)) }

    @inlinable @inline(__always)
    package init(_ bytes: UnsafeMutableBufferPointer<UInt8>) { self.init(UnsafeBufferPointer(bytes)) }

    /// The bytes, as raw bytes.
    @inlinable @inline(__always)
    package func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeRawBufferPointer(elements))
    }

    /// Equal bytes; `foldingASCIICase` compares A-Z as a-z.
    @inlinable @inline(__always)
    package func equals(_ other: ByteView, foldingASCIICase: Bool = false) -> Bool {
        bytesEqual(self, other, foldingASCIICase: foldingASCIICase)
    }

    /// Byte-wise order (memcmp, then length): how device keys sort in archives and manifests.
    @inlinable @inline(__always)
    package func precedes(_ other: ByteView) -> Bool { bytesPrecede(self, other) }

    /// The eight bytes at `offset`, as the machine reads a word (little-endian here): how the
    /// scanners test eight bytes at a time.
    @inlinable @inline(__always)
    package func word(at offset: Int) -> UInt64 { loadUnaligned(fromByteOffset: offset, as: UInt64.self) }

    /// A value of `type` from the bytes at `offset` (any alignment).
    @inlinable @inline(__always)
    package func loadUnaligned<T: BitwiseCopyable>(fromByteOffset offset: Int, as type: T.Type) -> T {
        assert(offset >= 0 && offset + MemoryLayout<T>.size <= elements.count, "a read outside the view")
        return UnsafeRawPointer(elements.baseAddress.unsafelyUnwrapped).loadUnaligned(fromByteOffset: offset, as: type)
    }

    /// A constant text's bytes.
    @inlinable @inline(__always)
    package init(_ text: StaticString) { self.init(UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount)) }

    /// Whether these bytes are `text`'s.
    @inlinable
    package func equals(_ text: StaticString) -> Bool { equals(ByteView(text)) }
}

extension Array {
    /// Starts reading element `i` into the cache (see `BufferView.prefetch(at:)`).
    @inlinable @inline(__always)
    package func prefetch(at i: Int) { withView { $0.prefetch(at: i) } }

    /// The array's elements as a view, for the length of `body`.
    @inlinable @inline(__always)
    public func withView<R, E: Error>(_ body: (BufferView<Element>) throws(E) -> R) throws(E) -> R {
        try withUnsafeBufferPointer { b throws(E) in try body(BufferView(b)) }
    }
}

extension Array where Element == UInt8 {
    /// A constant text's bytes appended.
    @inlinable @inline(__always)
    package mutating func append(_ text: StaticString) { append(ByteView(text)) }

    /// Every byte set to zero in place (a secret's bytes, once written).
    @inlinable
    package mutating func overwriteWithZeros() { withUnsafeMutableBufferPointer { $0.update(repeating: 0) } }

    /// The bytes of a view appended (one copy).
    @inlinable @inline(__always)
    package mutating func append(_ view: ByteView) { append(contentsOf: view.elements) }

    /// An array of a view's bytes.
    @inlinable
    package init(_ view: ByteView) { self.init(view.elements) }
}
