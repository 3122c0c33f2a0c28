import AppConfigCore

/// `--shard I/N`: the devices whose key hashes to I modulo N. The same hash in every shard, so the
/// union of N shards is the single run.
public struct Shard: Sendable, Equatable, CustomStringConvertible {
    public var index: Int
    public var count: Int

    public init(index: Int, count: Int) {
        self.index = index
        self.count = count
    }

    public static let whole = Shard(index: 0, count: 1)

    public init?(parsing text: String) {
        let parts = text.split(separator: "/")
        guard parts.count == 2, let i = Int(parts[0]), let n = Int(parts[1]), n >= 1, i >= 0, i < n else { return nil }
        self.init(index: i, count: n)
    }

    @inline(__always)
    public func contains(hash: UInt64) -> Bool { count == 1 || Int(hash % UInt64(count)) == index }

    public var description: String { "\(index)/\(count)" }

    /// The shard a scheduler gives through the environment: a Kubernetes Indexed Job
    /// (`JOB_COMPLETION_INDEX`, with `--shard-count`), a Slurm array (`SLURM_ARRAY_TASK_ID`, with
    /// `--shard-count` or `SLURM_ARRAY_TASK_COUNT`), an AWS Batch array (`AWS_BATCH_JOB_ARRAY_INDEX`,
    /// with `--shard-count`). The index is the task's id itself, less `base` (`--shard-base 1` for
    /// arrays numbered from 1): never relative to `SLURM_ARRAY_TASK_MIN`, so that resubmitting one
    /// failed index (`sbatch --array=2`) renders shard 2 again, not shard 0. An index outside
    /// 0..N-1 (`--array=1-4` without a base, a stepped `--array=0-6:2`) is refused, never renders
    /// another slice. Nil when no scheduler variable is set.
    public static func fromEnvironment(_ env: [String: String], count: Int?, base: Int = 0) throws(Problem) -> Shard? {
        func make(_ indexName: String, _ index: String, _ n: Int?, slurm: Bool = false) throws(Problem) -> Shard {
            guard let n else { throw Problem(.shardIndex, "\(indexName) is set; give --shard-count N") }
            guard let id = Int(index), n >= 1 else {
                throw Problem(.shardIndex, "\(indexName)=\(index) is not a shard index below \(n)")
            }
            let i = id - base
            guard i >= 0, i < n else {
                let range = base == 0 ? "0 to \(n - 1)" : "\(base) to \(n - 1 + base) (--shard-base \(base))"
                let oneBased = slurm && base == 0 && i == n ? "; an array numbered from 1 (sbatch --array=1-\(n))? give --shard-base 1" : ""
                throw Problem(.shardIndex, "\(indexName)=\(index) is not a shard index below \(n): the tasks of \(n) shards are numbered \(range)" + oneBased)
            }
            return Shard(index: i, count: n)
        }
        if let i = env["JOB_COMPLETION_INDEX"] { return try make("JOB_COMPLETION_INDEX", i, count) }
        if let i = env["SLURM_ARRAY_TASK_ID"] {
            // Slurm says where its array starts: a 1-based array read as 0-based renders shards
            // 1..N-1 and fails the last, and shard 0 never runs.
            if let first = env["SLURM_ARRAY_TASK_MIN"].flatMap({ Int($0) }), first != base, first == 0 || first == 1 {
                throw Problem(.shardIndex, "SLURM_ARRAY_TASK_MIN=\(first): this array's tasks are numbered from \(first); give --shard-base \(first)")
            }
            return try make("SLURM_ARRAY_TASK_ID", i, count ?? env["SLURM_ARRAY_TASK_COUNT"].flatMap { Int($0) }, slurm: true)
        }
        if let i = env["AWS_BATCH_JOB_ARRAY_INDEX"] { return try make("AWS_BATCH_JOB_ARRAY_INDEX", i, count) }
        // A count without an index would render the whole fleet as one shard of N: refused.
        if let count {
            throw Problem(.shardIndex, "--shard-count \(count) needs the shard's index: none of JOB_COMPLETION_INDEX, "
                          + "SLURM_ARRAY_TASK_ID, AWS_BATCH_JOB_ARRAY_INDEX is set (or give --shard I/\(count))")
        }
        return nil
    }
}
