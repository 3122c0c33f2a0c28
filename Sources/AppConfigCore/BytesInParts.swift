import Dispatch
import Synchronization
import Foundation

/// Runs `body(part, range)` for `count` items cut into contiguous ranges, one per core (one range
/// when there are fewer than `parallelFrom` items), the ranges at once on their own threads. Each
/// call may write only its own range's (or part's) slots; what it reads must not change meanwhile.
package func forEachRange(_ count: Int, parts: Int = Parallelism.threads, parallelFrom: Int = 1,
                         _ body: (_ part: Int, _ range: Range<Int>) -> Void) {
    let n = count >= parallelFrom ? max(1, min(parts, count)) : 1
    // Each call touches its own slots (the caller's promise above): no lock, no copy.
    nonisolated(unsafe) let body = body
    Parallelism.concurrentPerform(iterations: n) { i in body(i, (count * i / n)..<(count * (i + 1) / n)) }
}

/// Whether `body(part, range)` finds something in any of the ranges `forEachRange` cuts `count`
/// items into (each part stopping at its own first finding): a check of every item on every core.
package func anyRange(_ count: Int, parts: Int = Parallelism.threads, parallelFrom: Int = 1,
                      _ body: (_ part: Int, _ range: Range<Int>) -> Bool) -> Bool {
    var found = [Bool](repeating: false, count: max(1, parts))
    found.withWorkerSlots { found in
        forEachRange(count, parts: parts, parallelFrom: parallelFrom) { part, range in found[part] = body(part, range) }
    }
    return found.contains(true)
}

/// Bytes for `count` items, made `round` items at a time (a round cut into contiguous pieces,
/// each made into a buffer of its own that is kept from round to round) and handed to `emit` in
/// order: a file of a line per device in bounded memory. Made whole, the index and manifest were
/// the job's peak, and as much memory faulted in fresh. The next round is made while this one is
/// emitted (two sets of buffers, in turn), its pieces taken in turn by the threads that make it
/// and by the emitting one once it is done: with a thread for each, the emitting core idled
/// whenever writing a round took less than making one. A round of 8,192 lines (a megabyte or
/// so) is still in the caches when it is written; one of 32,768 was not.
package func bytesInRounds<E: Error>(count: Int, round: Int = 1 << 13, parts: Int = Parallelism.threads,
                                    make: (Range<Int>, inout [UInt8]) -> Void,
                                    emit: (ByteView) throws(E) -> Void) throws(E) {
    precondition(round > 0)
    let threads = max(1, parts)
    // Pieces enough for the threads to end a round together.
    let pieces = threads * 4
    let sets = [RoundBuffers(pieces: pieces), RoundBuffers(pieces: pieces)]
    let rounds = (count + round - 1) / round
    @Sendable func items(_ r: Int) -> Range<Int> { r * round..<min(count, (r + 1) * round) }
    // Read and written on several threads at once: each piece touches its own buffer.
    nonisolated(unsafe) let (make, emit) = (make, emit)
    nonisolated(unsafe) var failure: E?
    // Round r emitted while round r + 1 is made: from r = -1 (round 0 made, nothing to emit:
    // sets[1] is empty) to the last round (emitted, nothing to make).
    for r in -1..<rounds {
        let last = r + 1 == rounds
        let next = sets[(r + 1) & 1], nextItems = last ? 0..<0 : items(r + 1)
        let taken = Atomic<Int>(last ? pieces : 0)
        next.clear()
        next.buffers.withWorkerSlots { slots in
            Parallelism.concurrentPerform(iterations: last ? 1 : threads) { task in
                if task == 0 {
                    do throws(E) {
                        for buffer in sets[r & 1].buffers where !buffer.isEmpty {
                            try buffer.withView { b throws(E) in try emit(b) }
                        }
                    } catch {
                        failure = error
                    }
                }
                while true {
                    let piece = taken.wrappingAdd(1, ordering: .relaxed).oldValue
                    guard piece < pieces else { return }
                    make(RoundBuffers.range(of: piece, pieces, in: nextItems), &slots[piece])
                }
            }
        }
        if let failure { throw failure }
    }
}

/// A round's buffers, one per piece, kept from round to round (`bytesInRounds`).
private final class RoundBuffers: @unchecked Sendable {
    var buffers: [[UInt8]]

    init(pieces: Int) { buffers = [[UInt8]](repeating: [], count: pieces) }

    func clear() { for i in buffers.indices { buffers[i].removeAll(keepingCapacity: true) } }

    /// Piece `piece` of `pieces` of `items`.
    static func range(of piece: Int, _ pieces: Int, in items: Range<Int>) -> Range<Int> {
        (items.lowerBound + items.count * piece / pieces)..<(items.lowerBound + items.count * (piece + 1) / pieces)
    }
}
