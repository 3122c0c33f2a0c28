/// What a night may publish: the guards that hold a bad run back (`--max-failures`, the failure,
/// change and removal ratios, `--force`), and what `--changed-only` and `--remove-missing`
/// change. The part of a job a generation needs, so that it does not hold the whole job.
public struct NightlyPolicy: Sendable, Equatable {
    public var changedOnly = false
    public var removeMissing = false
    public var force = false
    public var maxFailures: Int?
    public var maxFailureRatio = 0.05
    public var maxChangeRatio = 0.5
    public var maxRemovalRatio = 0.01

    public init() {}
}

extension RenderJob {
    /// The job's guards and nightly options, as a generation takes them.
    public var policy: NightlyPolicy {
        var p = NightlyPolicy()
        p.changedOnly = changedOnly
        p.removeMissing = removeMissing
        p.force = force
        p.maxFailures = maxFailures
        p.maxFailureRatio = maxFailureRatio
        p.maxChangeRatio = maxChangeRatio
        p.maxRemovalRatio = maxRemovalRatio
        return p
    }
}
