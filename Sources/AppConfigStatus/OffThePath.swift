import AppConfigCore
import Dispatch

/// Work taken off a status run's critical path, on a thread of its own.
enum OffThePath {
    /// Runs `body` beside the caller; `wait()` returns its failure, if any. The state file is
    /// written while the join runs: at 1M devices its write is mostly the kernel's copy and the
    /// disk's flush, seconds a core of the join need not wait for.
    final class Work: @unchecked Sendable {
        private let done = DispatchSemaphore(value: 0)
        private var failure: Problem?

        init(_ body: @escaping @Sendable () throws(Problem) -> Void) {
            DispatchQueue.global().async {
                do throws(Problem) { try body() } catch { self.failure = error }
                self.done.signal()
            }
        }

        /// Waits for it (once); its failure, if it failed.
        func wait() -> Problem? {
            done.wait()
            return failure
        }
    }

    /// Frees `value` on another thread. The tables a run reads (1M devices, 3M declarations, 1M
    /// folds) are tens of millions of small allocations: freed on the caller's thread they took
    /// 6 s of one core after the answer was ready (the command line then exits; an embedder gets
    /// the memory back moments later). Clang's `-disable-free` is the same trade.
    static func release<T>(_ value: consuming T) {
        let box = Box(value)
        DispatchQueue.global(qos: .utility).async { box.drop() }
    }

    private final class Box<T>: @unchecked Sendable {
        private var value: T?
        init(_ value: consuming T) { self.value = value }
        func drop() { value = nil }
    }
}
