/// Elements borrowed to be changed in place, while the array, arena or file they are borrowed
/// from (`withWorkerSlots`, `BufferArena.slots`, `MappedFile.bytes`) is kept alive: slots handed
/// to the workers of one parallel pass (`forEachRange`, `concurrentPerform`), each touching only
/// its own (its part, its rows), with no lock; one worker's own tables (a renderer's scratch, a tar
/// header); a file's bytes decoded in place by its reader (`MutableByteView`).
@usableFromInline package struct WorkerSlots<T>: @unchecked Sendable {
    @usableFromInline package let buffer: UnsafeMutableBufferPointer<T>

    @inlinable package init(_ buffer: UnsafeMutableBufferPointer<T>) { self.buffer = buffer }

    @inlinable package var count: Int { buffer.count }

    /// Slot `i`, read or changed in place (a worker's own). Checked in debug builds only, as a
    /// view is.
    @inlinable package subscript(i: Int) -> T {
        @inline(__always) unsafeAddress {
            assert(i >= 0 && i < buffer.count, "a slot outside the buffer")
            return UnsafePointer(buffer.baseAddress.unsafelyUnwrapped + i)
        }
        @inline(__always) nonmutating unsafeMutableAddress {
            assert(i >= 0 && i < buffer.count, "a slot outside the buffer")
            return buffer.baseAddress.unsafelyUnwrapped + i
        }
    }

    /// The slots in `range`, as slots of their own (indexed from 0).
    @inlinable @inline(__always)
    package subscript(slots range: Range<Int>) -> WorkerSlots {
        assert(range.lowerBound >= 0 && range.upperBound <= buffer.count, "slots outside the buffer")
        return WorkerSlots(UnsafeMutableBufferPointer(rebasing: buffer[range]))
    }

    /// The slots from `start` on, as slots of their own.
    @inlinable @inline(__always)
    package subscript(slots range: PartialRangeFrom<Int>) -> WorkerSlots { self[slots: range.lowerBound..<buffer.count] }

    /// Every slot, read as a view (while no worker changes them).
    @inlinable package var view: BufferView<T> { BufferView(UnsafeBufferPointer(buffer)) }

    /// Moves the `count` slots at `source` to `target` (the two may overlap).
    @inlinable @inline(__always)
    package func move(from source: Int, to target: Int, count: Int) {
        assert(source >= 0 && target >= 0 && source + count <= buffer.count && target + count <= buffer.count, "slots outside the buffer")
        guard count > 0 else { return }
        (buffer.baseAddress.unsafelyUnwrapped + target).update(from: buffer.baseAddress.unsafelyUnwrapped + source, count: count)
    }

    /// The first `count` slots, read as a view (while no worker changes them).
    @inlinable package func view(prefix count: Int) -> BufferView<T> {
        BufferView(UnsafeBufferPointer(rebasing: buffer[0..<count]))
    }

    /// `source` copied into the slots from `offset` on (a worker's own).
    @inlinable package func copy(_ source: BufferView<T>, to offset: Int) {
        assert(offset >= 0 && offset + source.count <= buffer.count, "slots outside the buffer")
        source.withUnsafeBufferPointer { s in
            guard let from = s.baseAddress, s.count > 0 else { return }
            (buffer.baseAddress! + offset).update(from: from, count: s.count)
        }
    }

    /// Every slot set to `value`.
    @inlinable package func fill(with value: T) { buffer.update(repeating: value) }

    /// Sorts the slots in `range` (a worker's own run).
    @inlinable package func sort(_ range: Range<Int>, by areInIncreasingOrder: (T, T) -> Bool) {
        var run = UnsafeMutableBufferPointer(rebasing: buffer[range])
        run.sort(by: areInIncreasingOrder)
    }
}

/// Bytes a reader decodes in place (a CSV field's doubled quotes, an LDIF line's folds, base64):
/// they only ever shrink, so every value stays a range of the file's own bytes.
package typealias MutableByteView = WorkerSlots<UInt8>

/// `count` slots set to `value`, for the length of `body` (on the stack when they are few): a
/// worker's row before it joins a table.
@inlinable
package func withTemporarySlots<T: BitwiseCopyable, R>(count: Int, repeating value: T, _ body: (WorkerSlots<T>) throws -> R) rethrows -> R {
    try withUnsafeTemporaryAllocation(of: T.self, capacity: count) { b in
        b.initialize(repeating: value)
        return try body(WorkerSlots(b))
    }
}

extension WorkerSlots where T: BitwiseCopyable {
    /// Every slot set to `value`: the first written, then the written ones copied after
    /// themselves, doubling (left generic, `update(repeating:)` copied each value through the
    /// type's value witness, a call per byte of a byte table).
    package func fillDoubling(with value: T) {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        base.initialize(to: value)
        var filled = 1
        while filled < buffer.count {
            let n = min(filled, buffer.count - filled)
            UnsafeMutableRawPointer(base + filled).copyMemory(from: base, byteCount: n * MemoryLayout<T>.stride)
            filled += n
        }
    }
}

extension Array where Element: BitwiseCopyable {
    /// `count` elements written by the workers of one pass (`forEachRange`), each every slot of
    /// its range: a large array's pages are first touched, and zeroed by the kernel, on every
    /// core at once. Made with `repeating:` first, one core zeroed them while the others waited:
    /// a second of a 10M night's key order.
    package init(count: Int, parts: Int = Parallelism.threads, parallelFrom: Int = 1 << 16,
                 fillingEach body: (_ range: Range<Int>, _ slots: WorkerSlots<Element>) -> Void) {
        self.init(unsafeUninitializedCapacity: count) { buffer, initialized in
            let slots = WorkerSlots(buffer)
            forEachRange(count, parts: parts, parallelFrom: parallelFrom) { _, range in body(range, slots) }
            initialized = count
        }
    }

    /// `count` copies of `value`, written in `parts` on as many cores (as `init(count:fillingEach:)`).
    package init(repeating value: Element, count: Int, parts: Int) {
        self.init(count: count, parts: parts) { range, slots in slots[slots: range].fillDoubling(with: value) }
    }
}

extension Array {
    /// The array's elements as slots for the workers of one parallel pass, for the length of `body`.
    @inlinable
    package mutating func withWorkerSlots<R, E: Error>(_ body: (WorkerSlots<Element>) throws(E) -> R) throws(E) -> R {
        try withUnsafeMutableBufferPointer { b throws(E) in try body(WorkerSlots(b)) }
    }
}
