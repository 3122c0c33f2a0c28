import Dispatch
import Foundation

/// Runs `body(part, range)` for `count` items cut into contiguous ranges, one per core (one range
/// when there are fewer than `parallelFrom` items), the ranges at once on their own threads. Each
/// call may write only its own range's (or part's) slots; what it reads must not change meanwhile.
package func forEachRange(_ count: Int, parts: Int = Parallelism.threads, parallelFrom: Int = 1,
                         _ body: (_ part: Int, _ range: Range<Int>) -> Void) {
    let n = count >= parallelFrom ? max(1, min(parts, count)) : 1
    // Each call touches its own slots (the caller's promise above): no lock, no copy.
    nonisolated(unsafe) let body = body
    DispatchQueue.concurrentPerform(iterations: n) { i in body(i, (count * i / n)..<(count * (i + 1) / n)) }
}

/// Bytes for `count` items, made `round` items at a time (a round cut into contiguous ranges, one
/// per core, each made into a buffer of its own that is kept from round to round) and handed to
/// `emit` in order: a file of a line per device in bounded memory. Made whole, the index and
/// manifest were the job's peak, and as much memory faulted in fresh.
package func bytesInRounds<E: Error>(count: Int, round: Int = 1 << 16, parts: Int = Parallelism.threads,
                                    make: (Range<Int>, inout [UInt8]) -> Void,
                                    emit: (ByteView) throws(E) -> Void) throws(E) {
    precondition(round > 0)
    var buffers = [[UInt8]](repeating: [], count: max(1, parts))
    var start = 0
    while start < count {
        let end = min(count, start + round)
        for i in buffers.indices { buffers[i].removeAll(keepingCapacity: true) }
        buffers.withWorkerSlots { slots in
            forEachRange(end - start, parts: slots.count) { part, range in
                make((start + range.lowerBound)..<(start + range.upperBound), &slots[part])
            }
        }
        for buffer in buffers where !buffer.isEmpty {
            try buffer.withView { b throws(E) in try emit(b) }
        }
        start = end
    }
}
