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
