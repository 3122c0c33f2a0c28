import AppConfigBatch
import AppConfigRender
import ArgumentParser

// `render`'s options, a group per `JobSettings` group: each builds its settings group directly
// (nil: not given, so that a job file's setting stands), and a test holds the long options and
// the job file's keys to one set. A new setting is its field in `JobSettings`, its consumer, and
// its option here.

/// `JobSettings.Rendering`: format, threads, shard, checks.
struct RenderingOptions: ParsableArguments {
    @Option(help: "binary or xml (default: binary; xml for the MDM deliveries, which send XML).") var format: OutputFormat?
    @Option(help: "Threads (default: the machine's cores).") var jobs: Int?
    @Option(help: "Render shard I of N (devices by a stable hash of their key), e.g. 0/3.") var shard: String?
    @Option(name: .customLong("shard-count"), help: "The number of shards, for an index from JOB_COMPLETION_INDEX, SLURM_ARRAY_TASK_ID or AWS_BATCH_JOB_ARRAY_INDEX.")
    var shardCount: Int?
    @Option(name: .customLong("shard-base"), help: "The first task id of the scheduler's array: 0 (default) or 1 (sbatch --array=1-N). The shard is the task id less this.")
    var shardBase: Int?
    @Flag(inversion: .prefixedNo, help: "Decode every output again with libplist and compare it with an independent evaluation (slower).") var verify: Bool?
    @Flag(name: .customLong("allow-unjoined"), inversion: .prefixedNo, help: "Render although no device found its user in the directory (by default an error: the wrong --user-attribute?).")
    var allowUnjoined: Bool?

    var settings: JobSettings.Rendering {
        var s = JobSettings.Rendering()
        (s.format, s.jobs, s.shard, s.shardCount, s.shardBase, s.verify, s.allowUnjoined) = (format, jobs, shard, shardCount, shardBase, verify, allowUnjoined)
        return s
    }
}

/// `JobSettings.Destination`: a folder, a tar, or nowhere.
struct DestinationOptions: ParsableArguments {
    @Option(help: "Write a folder tree here (published whole: OUT is a symlink to the newest complete generation).") var out: String?
    @Option(help: "Write a tar archive here ('-' for standard output).") var tar: String?
    @Flag(name: .customLong("dry-run"), inversion: .prefixedNo, help: "Resolve and check every device, write nothing, print the report.") var dryRun: Bool?
    @Option(help: "Complete generations kept beside --out, the current one included (default: 2).") var keep: Int?

    var settings: JobSettings.Destination {
        var s = JobSettings.Destination()
        (s.out, s.tar, s.dryRun, s.keep) = (out, tar, dryRun, keep)
        return s
    }
}

/// The secrets of `JobSettings.DeliverySettings` (render's alone: `compile` previews name them).
struct SecretOptions: ParsableArguments {
    @Option(name: .customLong("secret"), help: "A secret a credential names: NAME=env:VAR, NAME=file:PATH (one value, or a .csv/.json keyed by a variable) or NAME=exec:COMMAND; repeatable.")
    var secrets: [String] = []
    @Option(name: .customLong("no-secret"), help: "Leave out a job file's --secret NAME=...; repeatable.")
    var noSecrets: [String] = []
    @Option(name: .customLong("secret-timeout"), help: "Seconds an exec: secret source may run before it is killed with its process group (default: 60).")
    var secretTimeout: Double?
    @Option(name: .customLong("secret-asset-key"), help: "DDM: the key secret documents are named by, env:VAR, file:PATH or exec:COMMAND (default: OUT.secret-asset-key, made on the first night; shards of one run share one).")
    var secretAssetKey: String?
    @Flag(name: .customLong("secret-asset-hash"), inversion: .prefixedNo, help: "DDM: write Hash-SHA-256 into secret documents' declarations too (by default left out: with the user name beside it, it would let a reader test guesses of the secret).")
    var secretAssetHash: Bool?

    /// The delivery settings with the secrets said here.
    func settings(_ delivery: JobSettings.DeliverySettings) -> JobSettings.DeliverySettings {
        var s = delivery
        (s.secrets, s.secretTimeout, s.secretAssetKey, s.secretAssetHash) = (Entries(given: secrets), secretTimeout, secretAssetKey, secretAssetHash)
        return s
    }
}

/// `JobSettings.Nightly`: what the night compares with and what it writes of the change.
struct NightlyOptions: ParsableArguments {
    @Option(help: "The previous generation to compare with (a generation folder, its manifest.tsv, or its tar); default with --out: the one published now.")
    var since: String?
    @Flag(name: .customLong("changed-only"), inversion: .prefixedNo, help: "Write only the devices added or changed since the previous generation (and the whole fleet's manifest).")
    var changedOnly: Bool?
    @Flag(inversion: .prefixedNo, help: "Render every device: also when the previous generation was made from the same inputs and options (by default such a night reads only their fingerprints and publishes nothing), and under --changed-only the devices whose inputs are unchanged (by default their last output stands, not rendered).")
    var rerender: Bool?
    @Flag(name: .customLong("remove-missing"), inversion: .prefixedNo, help: "Devices gone from the inputs since the previous generation lose the app: an empty DDM set, an MDM removal command (by default they keep their last configuration and are listed as missing).")
    var removeMissing: Bool?

    var settings: JobSettings.Nightly {
        var s = JobSettings.Nightly()
        (s.since, s.changedOnly, s.rerender, s.removeMissing) = (since, changedOnly, rerender, removeMissing)
        return s
    }
}

/// `JobSettings.Guards`: what holds a run back.
struct GuardOptions: ParsableArguments {
    @Option(name: .customLong("max-failures"), help: "Fail the run (status 1, nothing published) when more devices fail.") var maxFailures: Int?
    @Option(name: .customLong("max-failure-ratio"), help: "Publish nothing (status 1) when a larger share of the devices fails (default: 0.05).") var maxFailureRatio: Double?
    @Option(name: .customLong("max-change-ratio"), help: "Publish nothing (status 1) when a larger share of the previous devices changed or went (default: 0.5).") var maxChangeRatio: Double?
    @Option(name: .customLong("max-removal-ratio"), help: "With --remove-missing: publish nothing (status 1) when a larger share of the previous devices would lose the app (default: 0.01).")
    var maxRemovalRatio: Double?
    @Flag(inversion: .prefixedNo, help: "Publish past --max-failure-ratio, --max-change-ratio and --max-removal-ratio.") var force: Bool?

    var settings: JobSettings.Guards {
        var s = JobSettings.Guards()
        (s.maxFailures, s.maxFailureRatio, s.maxChangeRatio, s.maxRemovalRatio, s.force) = (maxFailures, maxFailureRatio, maxChangeRatio, maxRemovalRatio, force)
        return s
    }
}

/// `JobSettings.Report`: the run's account.
struct ReportOptions: ParsableArguments {
    @Option(help: "Write summary.json and errors.jsonl into this folder (on every exit: a fatal error is recorded too). A --dry-run writes here only when --report is given on its command line or in a job file that asks for the dry run.") var report: String?
    @Flag(inversion: .prefixedNo, help: "Leave values out of the error file.") var redact: Bool?

    var settings: JobSettings.Report {
        var s = JobSettings.Report()
        (s.report, s.redact) = (report, redact)
        return s
    }
}

/// `JobSettings.Console`: what the terminal shows, and the exit status.
struct ConsoleOptions: ParsableArguments {
    @Flag(inversion: .prefixedNo, help: "No progress display.") var quiet: Bool?
    @Option(name: .customLong("partial-exit"), help: "The exit status of a published run in which some devices failed or were skipped (default 3; schedulers such as Slurm, Kubernetes and AWS Batch count any status but 0 as a failure: give 0 there).")
    var partialExit: Int?
    @Option(help: "Show one device (by device key or serial number) as the job renders it: its row, its user, its assignments, each variable with its value and source, and its plist. Nothing is written; exit 1 when the device fails.")
    var explain: String?
    @Flag(help: "The night's plan, a dry run: its counts (added, changed, missing, removed), the removals, and each change key by key grouped by its cause (assignments, values, inputs); diff.jsonl in --report holds every device's.")
    var plan = false

    var settings: JobSettings.Console {
        var s = JobSettings.Console()
        (s.quiet, s.partialExit, s.explain, s.plan) = (quiet, partialExit, explain, plan ? true : nil)
        return s
    }
}
