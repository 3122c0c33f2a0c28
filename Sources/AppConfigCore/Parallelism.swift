import Foundation
import Synchronization

/// How many threads the fleet's passes use: the machine's cores, unless the job says fewer
/// (`--jobs`, `BatchOptions.jobs`). One value, read by every loader and pass (the inventory's
/// parts, the directory's, the join, the export checks, the duplicate keys, the renderer, the
/// index and manifest rounds, the fingerprints), so that `--jobs 1` runs the whole job on one
/// core, not only its render. A job binds it for its own run (`limited(to:_:)`), a task-local
/// value: two jobs in one embedding process each keep theirs. The threads a pass fans out to
/// (`concurrentPerform`, `WorkBeside`) are given the caller's.
public enum Parallelism {
    @TaskLocal private static var bound: Int = 0

    /// The threads a pass may use now.
    public static var threads: Int {
        let n = bound
        return n > 0 ? n : machine
    }

    /// The machine's cores.
    public static var machine: Int { ProcessInfo.processInfo.activeProcessorCount }

    /// Runs `body` with at most `threads` for every pass it makes (nil or 0: the machine's cores).
    public static func limited<R, E: Error>(to threads: Int?, _ body: () throws(E) -> R) throws(E) -> R {
        let result: Result<R, E> = $bound.withValue(max(0, threads ?? 0)) { Result { () throws(E) in try body() } }
        return try result.get()
    }

    /// Lowers the calling thread's priority (Linux: `setpriority` of the thread itself, nice 10):
    /// a thread of its own whose work can wait (see `WorkBeside(yielding:)`).
    fileprivate static func yieldToOthers() {
        #if os(Linux)
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 10)
        #endif
    }

    /// `DispatchQueue.concurrentPerform`, each iteration under the caller's limit.
    package static func concurrentPerform(iterations: Int, execute work: (Int) -> Void) {
        let n = bound
        // The iterations end before this returns: the closure does not outlive the call.
        withoutActuallyEscaping(work) { work in
            nonisolated(unsafe) let work = work
            DispatchQueue.concurrentPerform(iterations: iterations) { i in $bound.withValue(n) { work(i) } }
        }
    }
}

/// Work run on a thread of its own while the caller does other work, its result (or error) taken
/// with `value()`: one core reading last night's manifest while the others read tonight's inputs.
/// With one thread allowed (`Parallelism.threads`), it runs at once, on the caller's.
package final class WorkBeside<Value, Failure: Error>: @unchecked Sendable {
    private var result: Result<Value, Failure>?
    private let done = DispatchGroup()

    /// `yielding`: the thread runs at a lower priority (nice 10), taking the cores when the job's
    /// passes leave one idle: work whose result is wanted later (last night's manifest, the
    /// inputs' fingerprints) took a third of two cores from the passes that read tonight's inputs.
    package init(yielding: Bool = false, _ work: @escaping () throws(Failure) -> Value) {
        guard Parallelism.threads > 1 else {
            result = Result { () throws(Failure) in try work() }
            return
        }
        nonisolated(unsafe) let work = work
        let threads = Parallelism.threads
        done.enter()
        Thread.detachNewThread { [self] in
            if yielding { Parallelism.yieldToOthers() }
            result = Parallelism.limited(to: threads) { Result { () throws(Failure) in try work() } }
            done.leave()
        }
    }

    /// Waits for the work; its value, or its error thrown.
    package func value() throws(Failure) -> Value {
        done.wait()
        return try result!.get()
    }
}
