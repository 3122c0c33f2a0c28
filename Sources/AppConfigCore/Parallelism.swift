import Foundation
import Synchronization

/// How many threads the fleet's passes use: the machine's cores, unless the job says fewer
/// (`--jobs`, `BatchOptions.jobs`). One value, read by every loader and pass (the inventory's
/// parts, the directory's, the join, the export checks, the duplicate keys, the renderer, the
/// index and manifest rounds, the fingerprints), so that `--jobs 1` runs the whole job on one
/// core, not only its render. Process-wide: a job sets it when it starts.
public enum Parallelism {
    private static let limit = Atomic<Int>(0)

    /// The threads a pass may use now.
    public static var threads: Int {
        let n = limit.load(ordering: .relaxed)
        return n > 0 ? n : machine
    }

    /// The machine's cores.
    public static var machine: Int { ProcessInfo.processInfo.activeProcessorCount }

    /// At most `threads` from now on (nil or 0: the machine's cores).
    public static func limit(to threads: Int?) { limit.store(max(0, threads ?? 0), ordering: .relaxed) }
}

/// Work run on a thread of its own while the caller does other work, its result (or error) taken
/// with `value()`: one core reading last night's manifest while the others read tonight's inputs.
/// With one thread allowed (`Parallelism.threads`), it runs at once, on the caller's.
package final class WorkBeside<Value, Failure: Error>: @unchecked Sendable {
    private var result: Result<Value, Failure>?
    private let done = DispatchGroup()

    package init(_ work: @escaping () throws(Failure) -> Value) {
        guard Parallelism.threads > 1 else {
            result = Result { () throws(Failure) in try work() }
            return
        }
        nonisolated(unsafe) let work = work
        done.enter()
        Thread.detachNewThread { [self] in
            result = Result { () throws(Failure) in try work() }
            done.leave()
        }
    }

    /// Waits for the work; its value, or its error thrown.
    package func value() throws(Failure) -> Value {
        done.wait()
        return try result!.get()
    }
}
