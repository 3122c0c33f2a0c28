/// One owner for a set of raw tables of plain values: each is allocated through the arena and all
/// are freed together when the arena goes. The program image and each renderer keep their hot-loop
/// tables here, as flat buffers (no Swift array retain/release or nested bounds checks per access).
package final class BufferArena: @unchecked Sendable {
    private var blocks: [UnsafeMutableRawPointer] = []

    package init() {}

    /// A table holding a copy of `values` (at least one element, so the base address is never nil).
    package func table<T: BitwiseCopyable>(_ values: [T]) -> UnsafeMutableBufferPointer<T> {
        let b = allocate(T.self, count: values.count)
        // The bytes copied at once (left generic, `initialize(from:)` went value by value).
        values.withUnsafeBytes { if let from = $0.baseAddress { UnsafeMutableRawPointer(b.baseAddress!).copyMemory(from: from, byteCount: $0.count) } }
        return UnsafeMutableBufferPointer(rebasing: b[0..<values.count])
    }

    /// A copy of `values` in the arena, to read (valid while the arena is).
    package func view<T: BitwiseCopyable>(_ values: [T]) -> BufferView<T> { BufferView(UnsafeBufferPointer(table(values))) }

    /// A table of `count` copies of `value` (`WorkerSlots.fillDoubling`). A large table is filled
    /// in parts on every core, where its pages are first touched and zeroed by the kernel: one
    /// core filling a 10M fleet's digest slots (340 MB) was a third of a second, the other idle.
    package func table<T: BitwiseCopyable>(count: Int, repeating value: T) -> UnsafeMutableBufferPointer<T> {
        let b = UnsafeMutableBufferPointer(rebasing: allocate(T.self, count: count)[0..<count])
        let slots = WorkerSlots(b)
        if count < 1 << 16 { slots.fillDoubling(with: value) } else { forEachRange(count) { _, range in slots[slots: range].fillDoubling(with: value) } }
        return b
    }

    /// A table of `count` copies of `value`, as slots for the workers that fill it in place.
    package func slots<T: BitwiseCopyable>(count: Int, repeating value: T) -> WorkerSlots<T> {
        WorkerSlots(table(count: count, repeating: value))
    }

    /// A copy of `values`, as slots to change in place (an inventory's bytes, unescaped in place).
    package func slots<T: BitwiseCopyable>(copying values: [T]) -> WorkerSlots<T> { WorkerSlots(table(values)) }

    /// `count` slots whose values the caller writes before anything reads them (a file read into
    /// memory: pages never written are never touched).
    package func slots<T: BitwiseCopyable>(uninitialized count: Int, of _: T.Type = T.self) -> WorkerSlots<T> {
        WorkerSlots(UnsafeMutableBufferPointer(rebasing: allocate(T.self, count: count)[0..<count]))
    }

    /// Takes ownership of a buffer made with `allocate` (freed with the arena). An owner that adopts
    /// its buffer first thing frees it even when its initializer throws half way.
    package func adopt<T>(_ buffer: UnsafeMutableBufferPointer<T>) {
        if let base = buffer.baseAddress { blocks.append(UnsafeMutableRawPointer(base)) }
    }

    private func allocate<T>(_: T.Type, count: Int) -> UnsafeMutableBufferPointer<T> {
        let b = UnsafeMutableBufferPointer<T>.allocate(capacity: max(count, 1))
        blocks.append(UnsafeMutableRawPointer(b.baseAddress!))
        return b
    }

    deinit { for block in blocks { block.deallocate() } }
}
