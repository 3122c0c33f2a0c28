#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The engine's one growable buffer: plain values appended at the end of one `malloc` block that
/// grows by `realloc`. Written by hand because an array cost what its size does not: `append` of
/// a few bytes was a hundred instructions, and growing it copied the whole table into fresh pages,
/// where `realloc` of a large block moves its pages (`mremap`) without copying.
///
/// A value, for the render loop: its output and string buffers are moved into a local for a device
/// and stay in registers across it (held by a class, every append reloaded and stored them).
/// Whoever holds one frees it once (`free`); `GrowingBuffer` is the same storage owned by a
/// reference, which frees it itself.
@usableFromInline package struct GrowingStorage<Element: BitwiseCopyable> {
    @usableFromInline var _base: UnsafeMutablePointer<Element>
    @usableFromInline var _count = 0
    @usableFromInline var _capacity: Int

    /// Valid until the next append that grows it.
    @inlinable package var base: UnsafeMutablePointer<Element> { _base }
    @inlinable package var count: Int { _count }
    @inlinable package var capacity: Int { _capacity }

    /// Room for `capacity` elements ahead (room never written is never touched).
    @usableFromInline package init(capacity: Int = 64) {
        _capacity = max(capacity, 1)
        guard let p = malloc(_capacity * MemoryLayout<Element>.stride) else { fatalError("out of memory (\(capacity) elements)") }
        _base = p.bindMemory(to: Element.self, capacity: _capacity)
    }

    /// Frees the memory; called once by the owner.
    @usableFromInline package func free() { releaseBlock(_base) }

    /// The elements at `start..<start + count`, to read (valid until the storage grows or goes).
    @inlinable @inline(__always)
    package func view(start: Int, count: Int) -> BufferView<Element> { BufferView(UnsafeBufferPointer(start: _base + start, count: count)) }

    /// The elements written so far, to read (valid until the storage grows or goes).
    @inlinable package var view: BufferView<Element> { view(start: 0, count: _count) }

    /// The elements written so far.
    @inlinable package var buffer: UnsafeBufferPointer<Element> { UnsafeBufferPointer(start: _base, count: _count) }

    @inlinable
    package subscript(i: Int) -> Element {
        precondition(i >= 0 && i < _count, "index \(i) out of 0..<\(_count)")
        return _base[i]
    }

    /// Element `i`, read or changed in place; checked in debug builds only (the render loop's
    /// template filters, which keep their indices within `count`).
    @inlinable package subscript(at i: Int) -> Element {
        @inline(__always) get {
            assert(i >= 0 && i < _count, "index \(i) out of 0..<\(_count)")
            return _base[i]
        }
        @inline(__always) nonmutating set {
            assert(i >= 0 && i < _count, "index \(i) out of 0..<\(_count)")
            _base[i] = newValue
        }
    }

    /// Moves the `count` elements at `source` to `target` (the two may overlap).
    @inlinable @inline(__always)
    package func move(from source: Int, to target: Int, count: Int) {
        assert(source >= 0 && target >= 0 && source + count <= _count && target + count <= _count)
        (_base + target).update(from: _base + source, count: count)
    }

    /// Appends `items`; returns where they start.
    @inlinable @inline(__always) @discardableResult
    package mutating func append(_ items: UnsafeBufferPointer<Element>) -> Int {
        let start = _count
        guard let from = items.baseAddress, items.count > 0 else { return start }
        if _count + items.count > _capacity { grow(to: _count + items.count) }
        UnsafeMutableRawPointer(_base + _count).copyMemory(from: from, byteCount: items.count * MemoryLayout<Element>.stride)
        _count += items.count
        return start
    }

    /// Appends a view's elements; returns where they start.
    @inlinable @inline(__always) @discardableResult
    package mutating func append(_ items: BufferView<Element>) -> Int { items.withUnsafeBufferPointer { append($0) } }

    @inlinable @inline(__always)
    package mutating func append(_ item: Element) {
        if _count == _capacity { grow(to: _count + 1) }
        (_base + _count).initialize(to: item)
        _count += 1
    }

    /// Makes room for `n` more elements and counts them as written; the caller writes every one of
    /// the slots returned, from as many threads as it likes, before anything reads them or
    /// appends. A large copy into fresh pages (which the kernel clears first, one at a time) goes
    /// as fast as the cores that share it.
    @inlinable @discardableResult
    package mutating func extend(by n: Int) -> WorkerSlots<Element> {
        reserve(n)
        defer { _count += n }
        return WorkerSlots(UnsafeMutableBufferPointer(start: _base + _count, count: n))
    }

    /// Room for `n` more elements ahead.
    @inlinable
    package mutating func reserve(_ n: Int) {
        if _count + n > _capacity { grow(to: _count + n, exactly: true) }
    }

    /// Drops the elements from `n` on (a rollback, or a buffer reused device after device).
    @inlinable
    package mutating func truncate(to n: Int) {
        precondition(n >= 0 && n <= _count)
        _count = n
    }

    /// Gives the pages wholly inside elements `range` back to the system; what they held is lost
    /// (zeros if read again), the count is unchanged. For a table moved into another in pieces: the
    /// two never stand whole at once.
    package func discardPages(_ range: Range<Int>) {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let start = Int(bitPattern: _base + range.lowerBound), end = Int(bitPattern: _base + range.upperBound)
        let first = (start + page - 1) / page * page, last = end / page * page
        guard last > first else { return }
        _ = madvise(UnsafeMutableRawPointer(bitPattern: first), last - first, MADV_DONTNEED)
    }

    /// Doubles (a run of appends grows it rarely), or exactly what a caller reserved.
    @usableFromInline
    mutating func grow(to needed: Int, exactly: Bool = false) {
        let target = exactly ? needed : max(needed, _capacity * 2)
        guard let p = realloc(_base, target * MemoryLayout<Element>.stride) else { fatalError("out of memory (\(target) elements)") }
        _base = p.bindMemory(to: Element.self, capacity: target)
        _capacity = target
    }
}

/// `free` under another name: inside the type, `free` is its own method.
private func releaseBlock(_ p: UnsafeMutableRawPointer) { free(p) }

/// A `GrowingStorage` owned by a reference: the tables a reader builds (a directory's values,
/// hundreds of megabytes, in one per core then joined), which one owner writes and then hands on
/// (`UserTable` keeps the builder's); not for sharing between threads while it grows. Inlinable,
/// as the storage is: a generic class's methods called across modules unspecialized made reading
/// an LDIF slower than an array did; and without dynamic exclusivity checks, which were two runtime
/// calls per access (one owner writes it: nothing to check).
@usableFromInline package final class GrowingBuffer<Element: BitwiseCopyable>: @unchecked Sendable {
    @usableFromInline @exclusivity(unchecked) var storage: GrowingStorage<Element>

    @usableFromInline package init(capacity: Int = 64) { storage = GrowingStorage(capacity: capacity) }

    deinit { storage.free() }

    @inlinable package var base: UnsafeMutablePointer<Element> { storage.base }
    @inlinable package var count: Int { storage.count }
    @inlinable package var capacity: Int { storage.capacity }
    @inlinable package var buffer: UnsafeBufferPointer<Element> { storage.buffer }
    @inlinable package var view: BufferView<Element> { storage.view }
    @inlinable package subscript(i: Int) -> Element { storage[i] }
    @inlinable @inline(__always) @discardableResult
    package func append(_ items: UnsafeBufferPointer<Element>) -> Int { storage.append(items) }
    @inlinable @inline(__always) package func append(_ item: Element) { storage.append(item) }
    @inlinable @inline(__always) @discardableResult
    package func append(_ items: BufferView<Element>) -> Int { storage.append(items) }
    @inlinable package func extend(by n: Int) -> WorkerSlots<Element> { storage.extend(by: n) }
    @inlinable package func reserve(_ n: Int) { storage.reserve(n) }
    package func discardPages(_ range: Range<Int>) { storage.discardPages(range) }
    @inlinable package func truncate(to n: Int) { storage.truncate(to: n) }

    /// The elements' bytes, as memory holds them (a table saved to a file as it is).
    package var bytes: ByteView { ByteView(UnsafeRawBufferPointer(start: storage.base, count: storage.count * MemoryLayout<Element>.stride)) }
}
