import AppConfigSpec
import Synchronization

/// Chunks finished in any order, handled in chunk order: each finished chunk waits until every
/// chunk before it is handled, then whoever finished last handles the run that is ready. Workers
/// take chunks in increasing order, so only a few chunks per thread ever wait in memory.
final class OrderedChunks<State: Sendable>: @unchecked Sendable {
    private let queue: Mutex<(next: Int, waiting: [Int: [UInt8]], state: State)>

    init(_ state: sending State) { queue = Mutex((0, [:], state)) }

    /// Hands chunk `index` over; `handle` runs, under the lock, for each chunk whose turn has come.
    func finish(_ index: Int, _ bytes: [UInt8], _ handle: (inout State, [UInt8]) throws(Problem) -> Void) throws(Problem) {
        try queue.withLock { q throws(Problem) in
            q.waiting[index] = bytes
            while let next = q.waiting.removeValue(forKey: q.next) {
                try handle(&q.state, next)
                q.next += 1
            }
        }
    }

    /// The state, once every chunk is handled.
    func withState<R: Sendable>(_ body: (inout State) throws(Problem) -> R) throws(Problem) -> R {
        try queue.withLock { q throws(Problem) in try body(&q.state) }
    }
}
