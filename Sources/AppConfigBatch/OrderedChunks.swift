import AppConfigSpec
import Synchronization

/// Chunks finished in any order, handled in chunk order: each finished chunk waits until every
/// chunk before it is handled, then whoever finished last handles the run that is ready. Workers
/// take chunks in increasing order, so only a few chunks per thread ever wait in memory.
///
/// Handled chunks' buffers are kept (emptied) for the workers' next chunks: a chunk is about a
/// megabyte, and a fresh one per chunk was a fresh mapping to fault in, page by page (1M devices:
/// 2 GB of zeroed pages, 7% of the job's CPU time in `clear_page`).
final class OrderedChunks<State: Sendable>: @unchecked Sendable {
    private let queue: Mutex<(next: Int, waiting: [Int: [UInt8]], state: State, spare: [[UInt8]])>
    private static var spareLimit: Int { 8 }

    init(_ state: sending State) { queue = Mutex((0, [:], state, [])) }

    /// Hands chunk `index` over, leaving `chunk` an empty buffer to fill next; `handle` runs,
    /// under the lock, for each chunk whose turn has come.
    func finish(_ index: Int, _ chunk: inout [UInt8], _ handle: (inout State, [UInt8]) throws(Problem) -> Void) throws(Problem) {
        let bytes = chunk
        chunk = []
        chunk = try queue.withLock { q throws(Problem) -> [UInt8] in
            q.waiting[index] = bytes
            while var next = q.waiting.removeValue(forKey: q.next) {
                try handle(&q.state, next)
                q.next += 1
                if q.spare.count < Self.spareLimit {
                    next.removeAll(keepingCapacity: true)
                    q.spare.append(next)
                }
            }
            return q.spare.popLast() ?? []
        }
    }

    /// The state, once every chunk is handled.
    func withState<R: Sendable>(_ body: (inout State) throws(Problem) -> R) throws(Problem) -> R {
        try queue.withLock { q throws(Problem) in try body(&q.state) }
    }
}
