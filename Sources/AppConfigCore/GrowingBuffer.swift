#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Plain values appended at the end of one `malloc` block that grows by `realloc`: the tables a
/// reader builds (a directory's values, hundreds of megabytes, in one per core then joined).
/// Written by hand because an array cost what its size does not: `append(contentsOf:)` of a few
/// bytes was a hundred instructions, and growing it copied the whole table into fresh pages, where `realloc` of a large block moves its
/// pages (`mremap`) without copying. A reference type: one owner writes it, then hands it on
/// (`UserTable` keeps the builder's); not for sharing between threads while it grows.
public final class GrowingBuffer<Element: BitwiseCopyable>: @unchecked Sendable {
    // Inlinable (as the appends are): a generic class's methods called across modules unspecialized
    // made reading an LDIF slower than the array did; and without dynamic exclusivity checks, which
    // were two runtime calls per access (one owner writes it: nothing to check).
    @usableFromInline @exclusivity(unchecked) var _base: UnsafeMutablePointer<Element>
    @usableFromInline @exclusivity(unchecked) var _count = 0
    @usableFromInline @exclusivity(unchecked) var _capacity: Int

    /// Valid until the next append that grows it.
    @inlinable public var base: UnsafeMutablePointer<Element> { _base }
    @inlinable public var count: Int { _count }
    @inlinable public var capacity: Int { _capacity }

    /// Room for `capacity` elements ahead (room never written is never touched).
    public init(capacity: Int = 64) {
        _capacity = max(capacity, 1)
        _base = Self.allocate(_capacity)
    }

    deinit { free(_base) }

    private static func allocate(_ n: Int) -> UnsafeMutablePointer<Element> {
        guard let p = malloc(n * MemoryLayout<Element>.stride) else { fatalError("out of memory (\(n) elements)") }
        return p.bindMemory(to: Element.self, capacity: n)
    }

    /// The elements written so far.
    @inlinable public var buffer: UnsafeBufferPointer<Element> { UnsafeBufferPointer(start: _base, count: _count) }

    @inlinable
    public subscript(i: Int) -> Element {
        precondition(i >= 0 && i < _count, "index \(i) out of 0..<\(_count)")
        return _base[i]
    }

    /// Appends `items`; returns where they start.
    @inlinable @inline(__always) @discardableResult
    public func append(_ items: UnsafeBufferPointer<Element>) -> Int {
        let start = _count
        guard let from = items.baseAddress, items.count > 0 else { return start }
        if _count + items.count > _capacity { grow(to: _count + items.count) }
        UnsafeMutableRawPointer(_base + _count).copyMemory(from: from, byteCount: items.count * MemoryLayout<Element>.stride)
        _count += items.count
        return start
    }

    @inlinable @inline(__always)
    public func append(_ item: Element) {
        if _count == _capacity { grow(to: _count + 1) }
        (_base + _count).initialize(to: item)
        _count += 1
    }

    /// Makes room for `n` more elements and counts them as written; the caller writes every one of
    /// them at the pointer returned, from as many threads as it likes, before anything reads them
    /// or appends. A large copy into fresh pages (which the kernel clears first, one at a time) goes
    /// as fast as the cores that share it.
    public func extend(by n: Int) -> UnsafeMutablePointer<Element> {
        reserve(n)
        defer { _count += n }
        return _base + _count
    }

    /// Room for `n` more elements ahead.
    public func reserve(_ n: Int) {
        if _count + n > _capacity { grow(to: _count + n, exactly: true) }
    }

    /// Drops the elements from `n` on (a rollback).
    public func truncate(to n: Int) {
        precondition(n >= 0 && n <= _count)
        _count = n
    }

    @usableFromInline
    func grow(to needed: Int, exactly: Bool = false) {
        let target = exactly ? needed : max(needed, _capacity * 2)
        guard let p = realloc(_base, target * MemoryLayout<Element>.stride) else { fatalError("out of memory (\(target) elements)") }
        _base = p.bindMemory(to: Element.self, capacity: target)
        _capacity = target
    }
}
