/// Slots handed to the workers of one parallel pass (`forEachRange`, `concurrentPerform`), each
/// touching only its own (its part, its rows): results are written in place, with no lock, while
/// the array or arena they are borrowed from (`withWorkerSlots`, `BufferArena.slots`) is kept
/// alive. Also one worker's own tables written in place (a renderer's scratch, a tar header).
@usableFromInline package struct WorkerSlots<T>: @unchecked Sendable {
    @usableFromInline package let buffer: UnsafeMutableBufferPointer<T>

    @inlinable package init(_ buffer: UnsafeMutableBufferPointer<T>) { self.buffer = buffer }

    @inlinable package var count: Int { buffer.count }

    /// Slot `i`, read or changed in place (a worker's own).
    @inlinable package subscript(i: Int) -> T {
        unsafeAddress {
            assert(i >= 0 && i < buffer.count, "a slot outside the buffer")
            return UnsafePointer(buffer.baseAddress! + i)
        }
        nonmutating unsafeMutableAddress {
            assert(i >= 0 && i < buffer.count, "a slot outside the buffer")
            return buffer.baseAddress! + i
        }
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

extension Array {
    /// The array's elements as slots for the workers of one parallel pass, for the length of `body`.
    @inlinable
    package mutating func withWorkerSlots<R, E: Error>(_ body: (WorkerSlots<Element>) throws(E) -> R) throws(E) -> R {
        try withUnsafeMutableBufferPointer { b throws(E) in try body(WorkerSlots(b)) }
    }
}
