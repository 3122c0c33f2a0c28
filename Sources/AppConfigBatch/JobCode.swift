import AppConfigCore
import AppConfigOutput

/// Codes for problems of the job as a whole: its report, its shard, its settings (its output's
/// are `OutputCode`). Such a problem
/// stops the run; nothing is published.
public enum JobCode: String, Sendable, CaseIterable, ProblemCodeCatalog {
    /// The report folder or its files cannot be written.
    case reportWrite = "report.write"
    /// A delivery option missing or wrong (`--asset-base-url` not https, no bundle identifier...).
    case deliveryOption = "delivery.option"
    /// `--changed-only` with no previous generation to compare with: a first night, whose
    /// generation holds every device (a warning).
    case sinceMissing = "since.missing"
    /// A scheduler's shard index that is not a number below the shard count, or no count for it.
    case shardIndex = "shard.index"
    /// Assignments that cannot be matched against these sources: groups without a directory, more
    /// than 64 groups named, more distinct sets of assignments than a variant index holds.
    case assignmentMatch = "assignment.match"
    /// An assignment, or an exclusion, that matches no device of the fleet (a warning, with the
    /// values the fleet has and the closest one).
    case assignmentNoMatch = "assignment.no-match"
    /// A `--secret` that cannot be read: a bad source, a missing environment variable, an
    /// unreadable or malformed file, a command that fails (its first line of standard error).
    case secretSource = "secret.source"
    /// A `--secret` whose value is empty (an empty file, an empty variable, a command that wrote
    /// nothing): a device is never given an empty secret.
    case secretEmpty = "secret.empty"
    /// The previous generation was made another way: its manifest lacks the program, format,
    /// delivery or shard line, or names another format, delivery or shard than this run's.
    /// Compared with it, live devices would read as removed or unchanged.
    case sinceMismatch = "since.mismatch"
    /// An output or report path that cannot name one: empty, `.`, `..`, or ending in them.
    case outputPath = "output.path"
    /// `--explain DEVICE` names no device of the inventory (by device key or serial number).
    case explainUnknownDevice = "explain.unknown-device"
    /// `appconfig merge`: an input that is not a complete appconfig output (no manifest, an
    /// archive another tool wrote or cut short, an index that does not follow its manifest).
    case mergeInput = "merge.input"
    /// `appconfig merge`: the inputs are not every shard of one layout, each once (a shard
    /// missing, given twice, of another count, or two shards holding one device).
    case mergeShards = "merge.shards"
    /// `appconfig merge`: the shards were not made by one run's settings (another program,
    /// format, delivery or inputs in their manifests' headers).
    case mergeMismatch = "merge.mismatch"
    /// A setting of the job (an option, a job file's key) missing, unknown, given twice, or with a
    /// value it cannot take.
    case jobSetting = "job.setting"
    /// A variable the programs read that no device of the fleet has (a warning): no column or
    /// attribute feeds it (a console's username column not mapped), so every device loses the key
    /// or fails on it.
    case variableMissingEverywhere = "variable.missing-everywhere"

    public var defaultSeverity: Problem.Severity { .error }

    /// The codes that are a usage error (exit 2): the job as given cannot start.
    public static let usage: Set<JobCode> = [.shardIndex, .deliveryOption, .sinceMissing, .sinceMismatch, .secretSource, .secretEmpty, .explainUnknownDevice, .outputPath,
                                           .mergeInput, .mergeShards, .mergeMismatch, .jobSetting]
}

extension Problem {
    public init(_ code: JobCode, at location: Location = Location(), _ message: String) {
        self.init(code as any ProblemCodeCatalog, at: location, message)
    }
}

extension ProblemCode {
    public static func == (lhs: ProblemCode, rhs: JobCode) -> Bool { lhs.rawValue == rhs.rawValue }
    public static func != (lhs: ProblemCode, rhs: JobCode) -> Bool { lhs.rawValue != rhs.rawValue }
}
