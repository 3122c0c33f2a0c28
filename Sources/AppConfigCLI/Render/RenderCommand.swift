import AppConfigBatch
import AppConfigCore
import AppConfigRender
import AppConfigSources
import ArgumentParser
import Dispatch
import Foundation
import Synchronization

/// `appconfig render`: the main job. Maps its options to a `RenderJob`, runs it, prints the summary.
struct RenderCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "render",
        abstract: "Render one plist per device: spec and admin values, inventory and directory in; a folder or a tar out.",
        discussion: """
            appconfig render JOBFILE [options] reads the options from a JSON job file (see docs/render.md); \
            options on the command line override it.

            Exit status: 0 every device rendered; 3 some failed or were skipped (no more than \
            --max-failures); 1 a fatal error, or more failures than --max-failures (nothing is \
            published); 2 usage; 130 interrupted (nothing is published).
            """
    )

    @Option(help: "The AppConfig spec (XML).") var spec: String
    @Option(help: "The admin values (JSON, XML or binary plist).") var values: String?
    @OptionGroup var sources: SourceOptions
    @Option(help: "binary or xml (default: binary; xml for the MDM deliveries, which send XML).") var format: OutputFormat?
    @OptionGroup var delivery: DeliveryArguments
    @Option(help: "Write a folder tree here (published whole: OUT is a symlink to the newest complete generation).") var out: String?
    @Option(help: "Write a tar archive here ('-' for standard output).") var tar: String?
    @Option(help: "Write summary.json and errors.jsonl into this folder (on every exit: a fatal error is recorded too). A --dry-run writes here only when --report is given on its command line or in a job file that asks for the dry run.") var report: String?
    /// A job file's `report` set aside by `--dry-run` on the command line (`JobFile.expand`).
    @Option(name: .customLong("job-file-report"), help: .hidden) var jobFileReport: String?
    @Option(name: .customLong("secret"), help: "A secret a credential names: NAME=env:VAR, NAME=file:PATH (one value, or a .csv/.json keyed by a variable) or NAME=exec:COMMAND; repeatable.")
    var secrets: [String] = []
    @Option(help: "Threads (default: the machine's cores).") var jobs: Int?
    @Option(help: "Render shard I of N (devices by a stable hash of their key), e.g. 0/3.") var shard: String?
    @Option(name: .customLong("shard-count"), help: "The number of shards, for an index from JOB_COMPLETION_INDEX, SLURM_ARRAY_TASK_ID or AWS_BATCH_JOB_ARRAY_INDEX.")
    var shardCount: Int?
    @Option(name: .customLong("shard-base"), help: "The first task id of the scheduler's array: 0 (default) or 1 (sbatch --array=1-N). The shard is the task id less this.")
    var shardBase = 0
    @Option(name: .customLong("partial-exit"), help: "The exit status of a published run in which some devices failed or were skipped (default 3; schedulers such as Slurm, Kubernetes and AWS Batch count any status but 0 as a failure: give 0 there).")
    var partialExit: Int32 = ExitStatus.partial
    @Option(name: .customLong("max-failures"), help: "Fail the run (status 1, nothing published) when more devices fail.") var maxFailures: Int?
    @Option(name: .customLong("max-failure-ratio"), help: "Publish nothing (status 1) when a larger share of the devices fails.") var maxFailureRatio = 0.05
    @Option(help: "The previous generation to compare with (a generation folder, its manifest.tsv, or its tar); default with --out: the one published now.")
    var since: String?
    @Flag(name: .customLong("changed-only"), inversion: .prefixedNo, help: "Write only the devices added or changed since the previous generation (and the whole fleet's manifest).")
    var changedOnly = false
    @Option(name: .customLong("max-change-ratio"), help: "Publish nothing (status 1) when a larger share of the previous devices changed or went.") var maxChangeRatio = 0.5
    @Flag(inversion: .prefixedNo, help: "Render and publish even when the previous generation was made from the same inputs and options (by default such a night reads only their fingerprints and publishes nothing).")
    var rerender = false
    @Flag(name: .customLong("remove-missing"), inversion: .prefixedNo, help: "Devices gone from the inputs since the previous generation lose the app: an empty DDM set, an MDM removal command (by default they keep their last configuration and are listed as missing).")
    var removeMissing = false
    @Option(name: .customLong("max-removal-ratio"), help: "With --remove-missing: publish nothing (status 1) when a larger share of the previous devices would lose the app.")
    var maxRemovalRatio = 0.01
    @Flag(inversion: .prefixedNo, help: "Publish past --max-failure-ratio, --max-change-ratio and --max-removal-ratio.") var force = false
    @Flag(name: .customLong("allow-unjoined"), inversion: .prefixedNo, help: "Render although no device found its user in the directory (by default an error: the wrong --user-attribute?).")
    var allowUnjoined = false
    @Option(help: "Complete generations kept beside --out (the current one included).") var keep = 2
    @Flag(inversion: .prefixedNo, help: "Decode every output again with libplist and compare it with an independent evaluation (slower).") var verify = false
    @Option(help: "Show one device (by device key or serial number) as the job renders it: its row, its user, its assignments, each variable with its value and source, and its plist. Nothing is written; exit 1 when the device fails.")
    var explain: String?

    @Flag(name: .customLong("dry-run"), inversion: .prefixedNo, help: "Resolve and check every device, write nothing, print the report.") var dryRun = false
    @Flag(inversion: .prefixedNo, help: "Leave values out of the error file.") var redact = false
    @Flag(inversion: .prefixedNo, help: "No progress display.") var quiet = false
    @OptionGroup var policy: PolicyOptions

    func validate() throws {
        if !dryRun && explain == nil && (out == nil) == (tar == nil) { throw ValidationError("give one of --out DIR and --tar FILE (or --dry-run, or --explain DEVICE)") }
        if let jobs, jobs < 1 { throw ValidationError("--jobs must be at least 1") }
        if shardBase != 0 && shardBase != 1 { throw ValidationError("--shard-base is 0 or 1") }
        if partialExit != 0 && partialExit != ExitStatus.partial { throw ValidationError("--partial-exit is 0 or 3") }
        if let shard, Shard(parsing: shard) == nil { throw ValidationError("--shard takes I/N with 0 <= I < N, not \"\(shard)\"") }
        if delivery.delivery.isMDMCommand && format == .binary {
            throw ValidationError("MDM commands are XML plists: --delivery \(delivery.delivery.rawValue) takes --format xml")
        }
        if keep < 1 { throw ValidationError("--keep must be at least 1") }
        if ![maxFailureRatio, maxChangeRatio, maxRemovalRatio].allSatisfy((0...1).contains) {
            throw ValidationError("--max-failure-ratio, --max-change-ratio and --max-removal-ratio take a share from 0 to 1")
        }
    }

    /// The format: as given, else XML for MDM commands and binary otherwise.
    var outputFormat: OutputFormat { format ?? (delivery.delivery.isMDMCommand ? .xml : .binary) }

    /// The job these options describe.
    func job() throws -> RenderJob {
        var job = RenderJob(spec: spec, sources: try sources.fleetSources())
        job.values = values
        job.specOptions.lenient = policy.lenient
        job.compileOptions = try policy.compileOptions()
        job.batch.format = outputFormat
        job.delivery = try delivery.options()
        job.batch.jobs = jobs ?? Parallelism.machine
        job.batch.verify = verify
        job.batch.shard = try reportingProblems {
            try shard.flatMap(Shard.init(parsing:)) ?? Shard.fromEnvironment(ProcessInfo.processInfo.environment, count: shardCount, base: shardBase) ?? .whole
        }
        job.output = dryRun || explain != nil ? .dryRun : out.map { .directory($0) } ?? (tar == "-" ? .tarStdout : .tar(tar!))
        job.allowUnjoined = allowUnjoined
        job.nightly.maxFailures = maxFailures
        job.nightly.maxFailureRatio = maxFailureRatio
        job.nightly.since = since
        job.nightly.changedOnly = changedOnly
        job.nightly.rerender = rerender
        job.nightly.maxChangeRatio = maxChangeRatio
        job.nightly.removeMissing = removeMissing
        job.nightly.maxRemovalRatio = maxRemovalRatio
        job.nightly.force = force
        job.keepGenerations = keep
        job.report = report
        if let jobFileReport, report == nil {
            writeStandardError("appconfig: --dry-run: the job file's report folder \(jobFileReport) is left as it is (give --report to write one)\n")
        }
        job.secrets = try reportingProblems { try secrets.map { try SecretSource(parsing: $0) } }
        job.redact = redact
        return job
    }

    func run() throws {
        let job = try job()
        if let explain {
            let (text, failed) = try reportingProblems { try job.explain(explain, observer: warningsObserver()) }
            print(text, terminator: "")
            if failed { throw ExitCode(ExitStatus.failed) }
            return
        }
        let cancellation = Cancellation()
        // SIGINT and SIGTERM end every phase: while rendering and publishing the workers stop at
        // their next chunk and the job discards its output; in the phases before (a --since FIFO
        // nobody writes, an LDAP server retried, a long compile) nothing is written yet, so the
        // process ends at once, exit 130.
        let rendering = Atomic<Bool>(false)
        let signals = [SIGINT, SIGTERM].map { sig -> DispatchSourceSignal in
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler {
                cancellation.cancel()
                if !rendering.load(ordering: .acquiring) {
                    writeStandardError("\nappconfig: interrupted: nothing was published\n")
                    _exit(ExitStatus.interrupted)
                }
            }
            source.resume()
            return source
        }
        defer { signals.forEach { $0.cancel() } }
        var observer = RenderJob.Observer()
        let meter = !quiet && isatty(2) != 0 ? ProgressMeter(after: ProgressMeter.delay) : nil
        // On a terminal, a warning first clears the progress line it would otherwise run into.
        let clear = meter == nil ? "" : "\r\u{1B}[K"
        observer.warning = { writeStandardError(clear + $0.description + "\n") }
        observer.phaseStarted = { phase in
            // From the render on, the job itself stops and cleans up.
            if phase == .render { rendering.store(true, ordering: .releasing) }
            meter?.phase(phase)
        }
        if let meter {
            observer.renderStarted = { batch in meter.rendering(total: batch.deviceCount) { batch.progress.load(ordering: .relaxed) } }
        }
        let started = monotonicSeconds()
        let summary: RunSummary
        do {
            summary = try reportingProblems { try job.run(cancellation: cancellation, observer: observer) }
            meter?.finish()
        } catch {
            meter?.finish()
            throw error
        }
        printSummary(summary, seconds: monotonicSeconds() - started)
        let status = summary.exitStatus == ExitStatus.partial ? partialExit : summary.exitStatus
        if status != ExitStatus.ok { throw ExitCode(status) }
    }

    /// The summary's second line when devices went since the previous generation: how many lose
    /// the app (or would), or keep their configuration for want of `--remove-missing`.
    static func removalLine(_ c: ChangeCounts, delivery: Delivery, held: Bool) -> String {
        if c.removed > 0 {
            let what = switch delivery {
            case .ddm: "the app and its data (an empty declaration set)"
            case .mdmInstall: "the app and its data (RemoveApplication)"
            case .mdmSettings: "the app's configuration (a Settings removal command)"
            case .plist: "their entries in the manifest (bare plists have no removal)"
            }
            return "removal: \(c.removed) devices gone from the inputs \(held ? "would lose" : "lose") \(what)"
        }
        return "missing: \(c.missing) devices are not in tonight's inputs; they keep their last configuration (--remove-missing removes the app from them)"
    }

    /// Warnings on standard error, for a command without a progress display.
    func warningsObserver() -> RenderJob.Observer {
        var observer = RenderJob.Observer()
        observer.warning = { writeStandardError($0.description + "\n") }
        return observer
    }

    /// The summary goes to stdout, unless stdout carries the tar stream. The headline's time is
    /// the whole job's; the phases follow it.
    func printSummary(_ s: RunSummary, seconds: Double) {
        func say(_ line: String) { if tar == "-" { writeStandardError(line + "\n") } else { print(line) } }
        if s.inputsUnchanged {
            say("nothing changed since \(s.since ?? "the previous generation"): its manifest has this run's program, options and input "
                + "fingerprints; nothing was rendered or published (--rerender renders anyway) in \(String(format1: seconds)) s")
            if let report { say("report: \(report)/summary.json") }
            return
        }
        say("\(s.dryRun ? "checked" : "rendered") \(s.devices.rendered) of \(s.devices.inShard) devices (\(s.format)"
            + (s.shard != Shard.whole.description ? ", shard \(s.shard)" : "") + ")"
            + (s.output.map { " to \($0)" } ?? "") + " in \(String(format1: seconds)) s"
            + " (\(formatRate(seconds > 0 ? Double(s.devices.inShard) / seconds : 0))devices/s); \(s.devices.failed) failed, \(s.devices.skipped) skipped"
            + (s.devices.excluded > 0 ? ", \(s.devices.excluded) excluded" : ""))
        if let c = s.changes, c.removed > 0 || c.missing > 0 {
            say(Self.removalLine(c, delivery: delivery.delivery, held: s.notPublished != nil || s.dryRun))
        }
        if s.assetsNotLinked > 0 {
            say("assets: \(s.assetsNotLinked) live assets of kept sets are not in this generation (the previous one is not a folder, or lacks them): keep serving them; assets.live lists every one")
        }
        if s.keptNotLinked > 0 {
            say("kept: \(s.keptNotLinked) devices keep their previous configuration (failed or missing tonight) but their files are not in this generation (the previous one is not a folder, or lacks them): keep serving those files")
        }
        if !s.errorsByCode.isEmpty {
            say("errors: " + s.errorsByCode.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
        }
        if let c = s.changes, let since = s.since {
            say("since \(since): \(c.added) added, \(c.changed) changed, \(c.removed) removed, \(c.missing) missing, \(c.unchanged) unchanged"
                + (c.rekeyed > 0 ? ", \(c.rekeyed) re-keyed (the same device under a key that differs only in case)" : ""))
        }
        if let mapping = s.mapping { say(mapping) }
        let phases = Phase.allCases.compactMap { phase in
            s.seconds[phase.rawValue].map { "\(phase.rawValue) \(String(format: "%.2f", $0)) s" + (phase == .render ? " (\(formatRate(Double(s.devicesPerSecond)))devices/s)" : "") }
        }
        say("phases: " + phases.joined(separator: ", "))
        if let report { say("report: \(report)/summary.json, \(report)/errors.jsonl" + (s.changes != nil ? ", \(report)/changes.jsonl" : "")) }
        if s.interrupted { say("interrupted: nothing was published") }
        if s.nothingChanged { say("nothing changed since \(s.since ?? "the previous generation"): nothing new was published") }
        if let reason = s.notPublished { say("\(reason): " + (s.dryRun ? "it would not be published" : "nothing was published")) }
    }
}
