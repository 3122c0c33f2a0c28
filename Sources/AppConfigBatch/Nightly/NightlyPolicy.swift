/// What a night compares with and may publish: the previous generation, what `--changed-only`
/// and `--remove-missing` change, and the guards that hold a bad run back (`--max-failures`, the
/// failure, change and removal ratios, `--force`). A generation takes this group of the job, not
/// the whole job.
public struct NightlyPolicy: Sendable, Equatable {
    /// The previous generation to compare with (a generation folder, its manifest or its tar); for a
    /// folder output, by default the one published now.
    public var since: String?
    /// Render and publish even when the previous generation's manifest has this run's program,
    /// options and input fingerprints (by default such a night publishes nothing: `inputsUnchanged`).
    public var rerender = false
    /// Write only the devices added or changed since the previous generation (with the whole fleet's manifest).
    public var changedOnly = false
    /// Devices gone from tonight's inputs lose the app: their removal is written (an empty DDM set,
    /// an MDM removal command). Without it they keep their last configuration and are `missing`.
    public var removeMissing = false
    /// Publish even past `maxFailureRatio`, `maxChangeRatio` and `maxRemovalRatio`.
    public var force = false
    /// More failed devices than this: nothing is published.
    public var maxFailures: Int?
    /// A failed share above this: nothing is published (unless `force`).
    public var maxFailureRatio = 0.05
    /// With a previous generation, a changed + removed share above this: nothing is published
    /// (a sign of a wrong input), unless `force`.
    public var maxChangeRatio = 0.5
    /// With `removeMissing`, a removed share of the previous devices above this: nothing is
    /// published (unless `force`).
    public var maxRemovalRatio = 0.01

    public init() {}
}
