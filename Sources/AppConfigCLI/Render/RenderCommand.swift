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

    @Argument(help: "A JSON job file of options (see docs/render.md); the command line's options override it.") var jobFile: String?
    @Option(help: "The AppConfig spec (XML).") var spec: String?
    @Option(help: "The admin values (JSON, XML or binary plist).") var values: String?
    @OptionGroup var sources: SourceOptions
    @OptionGroup var rendering: RenderingOptions
    @OptionGroup var delivery: DeliveryArguments
    @OptionGroup var secrets: SecretOptions
    @OptionGroup var destination: DestinationOptions
    @OptionGroup var nightly: NightlyOptions
    @OptionGroup var guards: GuardOptions
    @OptionGroup var reporting: ReportOptions
    @OptionGroup var console: ConsoleOptions
    @OptionGroup var policy: PolicyOptions

    /// What the command line said (nil: not given, so that a job file's setting stands).
    var commandLine: JobSettings {
        var s = JobSettings()
        s.inputs = policy.settings(spec: spec, values: values)
        (s.sources, s.ldap) = (sources.settings, sources.ldap.settings)
        (s.rendering, s.destination, s.delivery) = (rendering.settings, destination.settings, secrets.settings(delivery.settings))
        (s.nightly, s.guards, s.report, s.console) = (nightly.settings, guards.settings, reporting.settings, console.settings)
        return s
    }

    /// The job file's settings (if one is given) with the command line's over them, less the
    /// secrets `--no-secret` names.
    func settings() throws -> JobSettings {
        var settings = try overlaidSettings()
        if !secrets.noSecrets.isEmpty, let entries = settings.delivery.secrets {
            let kept = entries.items.filter { item in !secrets.noSecrets.contains { item.hasPrefix($0 + "=") } }
            settings.delivery.secrets = kept.isEmpty ? nil : Entries(kept)
        }
        return settings
    }

    private func overlaidSettings() throws -> JobSettings {
        let commandLine = commandLine
        guard let jobFile else { return commandLine }
        var file: JobSettings
        do {
            file = try JobSettings(jobFile: jobFile)
        } catch {
            let l = error.location
            throw ValidationError("job file" + (l.line > 0 ? " \(l.file):\(l.line):\(l.column): " : ": ") + error.message)
        }
        // `--dry-run` on the command line checks tonight's job without touching its outputs: the
        // job file's report folder (last night's account) is left alone unless the file asks for
        // the dry run, or the command line gives a `--report`.
        if commandLine.destination.dryRun == true || commandLine.console.plan == true, file.destination.dryRun != true, commandLine.report.report == nil, let folder = file.report.report {
            file.report.report = nil
            writeStandardError("appconfig: --dry-run: the job file's report folder \(folder) is left as it is (give --report to write one)\n")
        }
        return try settingsProblems { try file.overlaid(by: commandLine) }
    }

    /// The job these settings describe.
    func job(_ settings: JobSettings) throws -> RenderJob {
        if let exit = settings.console.partialExit, exit != 0 && exit != Int(ExitStatus.partial) { throw ValidationError("--partial-exit is 0 or 3") }
        let job = try reportingProblems { try settingsProblems { try RenderJob(settings: settings) } }
        warnIfInsecure(job.sources)
        return job
    }

    /// The job the command line (and its job file) describes.
    func job() throws -> RenderJob { try job(try settings()) }

    func run() throws {
        let settings = try settings()
        // An input the job file names that cannot be read: the key that named it is said (the
        // settings hold the file's paths where the command line gave none).
        if let jobFile {
            let line = commandLine
            let given: [(String, String?)] = [("spec", line.inputs.spec), ("values", line.inputs.values), ("inventory", line.sources.inventory), ("directory", line.sources.directory)]
            if let problem = settings.unreadableInput(ofJobFile: jobFile, except: Set(given.filter { $0.1 != nil }.map(\.0))) {
                _ = try reportingProblems { () throws -> Int in throw problem }
            }
        }
        let job = try job(settings)
        if let explain = settings.console.explain {
            let (text, failed) = try reportingProblems { try job.explain(explain, observer: warningsObserver()) }
            writeStandardOutput(text, terminator: "")
            if failed { throw ExitCode(ExitStatus.failed) }
            return
        }
        let cancellation = Cancellation()
        // SIGINT and SIGTERM end every phase: while rendering and publishing the workers stop at
        // their next chunk and the job discards its output; in the phases before (a --since FIFO
        // nobody writes, an LDAP server retried, a long compile) nothing is written yet, so the
        // process ends at once, exit 130.
        // (A command run in process leaves the process's signals alone.)
        let rendering = Atomic<Bool>(false), console = Console.current
        let signals = (console.isProcess ? [SIGINT, SIGTERM] : []).map { sig -> DispatchSourceSignal in
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler {
                cancellation.cancel()
                // An exec: secret's command ends with the job.
                ProcessSecrets.children.killAll()
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
        let meter = settings.console.quiet != true && console.isProcess && isatty(2) != 0 ? ProgressMeter(after: ProgressMeter.delay) : nil
        // On a terminal, a warning first clears the progress line it would otherwise run into.
        let clear = meter == nil ? "" : "\r\u{1B}[K"
        observer.warning = { console.err(clear + $0.description + "\n") }
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
        printSummary(summary, job: job, seconds: monotonicSeconds() - started)
        let status = summary.exitStatus == ExitStatus.partial ? Int32(settings.console.partialExit ?? Int(ExitStatus.partial)) : summary.exitStatus
        // Everything is written: a process ends here, and the kernel takes its memory back whole.
        // Freed object by object, a 10M fleet's summary (its 500k problems) took a fifth of a
        // second of one core after the output was published. `exit` flushes standard output.
        if console.isProcess { Foundation.exit(status) }
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
        let console = Console.current
        observer.warning = { console.err($0.description + "\n") }
        return observer
    }

    /// The summary goes to stdout, unless stdout carries the tar stream. The headline's time is
    /// the whole job's; the phases follow it.
    func printSummary(_ s: RunSummary, job: RenderJob, seconds: Double) {
        let report = job.report
        func say(_ line: String) { if job.output == .tarStdout { writeStandardError(line + "\n") } else { writeStandardOutput(line) } }
        if let plan = s.plan { say(plan) }
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
            say(Self.removalLine(c, delivery: job.delivery.delivery, held: s.notPublished != nil || s.dryRun))
        }
        if s.assetsNotLinked > 0 {
            say("assets: \(s.assetsNotLinked) live assets of kept sets are not in this generation (the previous one is not a folder, or lacks them): keep serving them; assets.live lists every one")
        }
        if s.keptNotLinked > 0 {
            say("kept: \(s.keptNotLinked) devices keep their previous configuration (failed or missing tonight) but their files are not in this generation (the previous one is not a folder, or lacks them): keep serving those files")
        }
        if let counts = s.assignments, !counts.isEmpty {
            // Devices per assignment, most first: a variant that an input row broke shows at once.
            say("assignments: " + counts.sorted { ($1.value, $0.key) < ($0.value, $1.key) }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
        }
        if !s.errorsByCode.isEmpty {
            say("errors: " + s.errorsByCode.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
        }
        if let c = s.changes, let since = s.since {
            say("since \(since): \(c.added) added, \(c.changed) changed, \(c.removed) removed, \(c.missing) missing, \(c.unchanged) unchanged"
                + (s.devices.carried > 0 ? " (\(s.devices.carried) not rendered: their inputs are last night's)" : "")
                + (c.rekeyed > 0 ? ", \(c.rekeyed) re-keyed (the same device under a key that differs only in case)" : ""))
        }
        if let mapping = s.mapping { say(mapping) }
        let phases = Phase.allCases.compactMap { phase in
            s.seconds[phase].map { "\(phase.rawValue) \(String(format: "%.2f", $0)) s" + (phase == .render ? " (\(formatRate(Double(s.devicesPerSecond)))devices/s)" : "") }
        }
        say("phases: " + phases.joined(separator: ", "))
        if let report { say("report: \(report)/summary.json, \(report)/errors.jsonl" + (s.changes != nil ? ", \(report)/changes.jsonl, \(report)/diff.jsonl" : "")) }
        if s.interrupted { say("interrupted: nothing was published") }
        if s.nothingChanged { say("nothing changed since \(s.since ?? "the previous generation"): nothing new was published") }
        if let reason = s.notPublished { say("\(reason): " + (s.dryRun ? "it would not be published" : "nothing was published")) }
    }
}
