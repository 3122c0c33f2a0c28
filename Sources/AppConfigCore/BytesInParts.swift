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
/// manifest were the job's peak, and as much memory faulted in fresh. The next round is made on
/// other threads while this one is emitted (two sets of buffers, in turn): made then written one
/// after the other, the cores idled while a round was hashed and written.
package func bytesInRounds<E: Error>(count: Int, round: Int = 1 << 15, parts: Int = Parallelism.threads,
                                    make: (Range<Int>, inout [UInt8]) -> Void,
                                    emit: (ByteView) throws(E) -> Void) throws(E) {
    precondition(round > 0)
    let sets = [RoundBuffers(parts: max(1, parts)), RoundBuffers(parts: max(1, parts))]
    let rounds = (count + round - 1) / round
    @Sendable func items(_ r: Int) -> Range<Int> { r * round..<min(count, (r + 1) * round) }
    // Read and written on two threads at once: each task touches its own round's buffers.
    nonisolated(unsafe) let (make, emit) = (make, emit)
    nonisolated(unsafe) var failure: E?
    if rounds > 0 { sets[0].make(items(0), make) }
    for r in 0..<rounds {
        DispatchQueue.concurrentPerform(iterations: r + 1 < rounds ? 2 : 1) { task in
            if task == 1 { return sets[(r + 1) & 1].make(items(r + 1), make) }
            do throws(E) {
                for buffer in sets[r & 1].buffers where !buffer.isEmpty {
                    try buffer.withView { b throws(E) in try emit(b) }
                }
            } catch {
                failure = error
            }
        }
        if let failure { throw failure }
    }
}

/// A round's buffers, one per part, kept from round to round (`bytesInRounds`).
private final class RoundBuffers: @unchecked Sendable {
    var buffers: [[UInt8]]

    init(parts: Int) { buffers = [[UInt8]](repeating: [], count: parts) }

    func make(_ items: Range<Int>, _ make: (Range<Int>, inout [UInt8]) -> Void) {
        for i in buffers.indices { buffers[i].removeAll(keepingCapacity: true) }
        buffers.withWorkerSlots { slots in
            forEachRange(items.count, parts: slots.count) { part, range in
                make((items.lowerBound + range.lowerBound)..<(items.lowerBound + range.upperBound), &slots[part])
            }
        }
    }
}
