import AppConfigCore
import AppConfigOutput
import AppConfigCompiler
import AppConfigRender
import AppConfigSources
import AppConfigSpec
import Digest
import Foundation

/// The main job as a library call: spec and admin values in, compiled; inventory and directory
/// loaded and joined; every device of the shard rendered into the output; the output published
/// whole (or not at all); the report written. The command line only fills one in and runs it; an
/// MDM server written in Swift can do the same.
///
/// ```swift
/// var job = RenderJob(spec: "spec.xml", sources: FleetSources(inventory: "devices.csv", directory: .ldif("users.ldif")))
/// job.values = "values.json"
/// job.output = .tar("/srv/mdm/outbox/fleet.tar")
/// let summary = try job.run()
/// print(summary.devices.rendered, summary.failures.count)
/// ```
public struct RenderJob: Sendable {
    /// Where the plists go: `.directory(path)`, `.tar(path)`, `.tarStdout` or `.dryRun`
    /// (`OutputDestination`, whose kinds live beside their containers).
    public typealias Output = OutputDestination

    public var spec: String
    public var values: String?
    public var specOptions = SpecOptions()
    public var compileOptions = CompileOptions()
    public var sources: FleetSources
    public var batch = BatchOptions()
    public var output = Output.dryRun
    /// How the configuration reaches the device: bare plists (default), DDM, or MDM commands.
    public var delivery = DeliveryOptions()
    /// Generations kept beside a directory output.
    public var keepGenerations = 2
    /// The previous generation, `--changed-only`, `--remove-missing` and the publishing guards.
    public var nightly = NightlyPolicy()
    /// Render although the inventory names users and not one was found (`join.none`).
    public var allowUnjoined = false
    /// Where the secrets the credentials name come from (`--secret NAME=...`).
    public var secrets: [SecretSource] = []
    /// How long an `exec:` secret source may run (`--secret-timeout`, seconds).
    public var secretTimeout = SecretStore.defaultTimeout
    /// The key secret documents are named by (`--secret-asset-key`); nil: kept beside the output.
    public var secretAssetKey: SecretSource?
    /// Environment variables an `exec:` secret's command is not given besides the other secrets'
    /// (`--ldap-password-env`'s).
    public var withheldEnvironment: [String] = []
    /// A folder for `summary.json` and `errors.jsonl`.
    public var report: String?
    /// Leave values out of the error file.
    public var redact = false
    /// Make the night's plan (`RunSummary.plan`): a dry run's counts, removals and changes by cause.
    public var plan = false

    public init(spec: String, sources: FleetSources) {
        self.spec = spec
        self.sources = sources
    }

    /// Hooks for a front end: warnings as they come, each phase starting (for a progress display:
    /// `compile`, `inventory`, `directory`, `join`, `render`, `publish`), the render pass starting
    /// and ending.
    public struct Observer: Sendable {
        public var warning: @Sendable (Problem) -> Void = { _ in }
        public var phaseStarted: @Sendable (Phase) -> Void = { _ in }
        public var renderStarted: @Sendable (BatchRenderer) -> Void = { _ in }
        public var renderFinished: @Sendable () -> Void = {}
        public init() {}
    }

    /// Runs every phase. Throws a `Problem` (an input or the output failed: nothing published) or a
    /// `ProblemList` (the spec or values do not compile). Device failures do not throw: they are in
    /// the summary, whose `exitStatus` says what a script should see.
    public func run(cancellation: Cancellation = Cancellation(), observer: Observer = Observer()) throws -> RunSummary {
        // Every pass, not only the render, takes at most `batch.jobs` threads: this job's, not
        // another's in the same process.
        do {
            return try Parallelism.limited(to: batch.jobs) { () throws -> RunSummary in try runPhases(cancellation: cancellation, observer: observer) }
        } catch {
            writeFailureReport(error)
            throw error
        }
    }

    /// A run that ended in an error still leaves its account in `--report`: `summary.json` with
    /// the error and `"published": false`, `errors.jsonl` with the problems that stopped it. The
    /// previous night's files are replaced, never left to speak for tonight. Nothing is written
    /// when the report folder itself is what failed.
    func writeFailureReport(_ error: Error) {
        guard let report else { return }
        let problems: [Problem]
        switch error {
        case let p as Problem:
            // Not the report's own failure; not another run's lock (its report is that run's).
            if p.code == JobCode.reportWrite || p.code == OutputCode.outputLocked || p.code == JobCode.outputPath { return }
            // A job that could not start (bad options) replaces an account, never makes one.
            if let code = p.code.as(JobCode.self), JobCode.usage.contains(code), !FileManager.default.fileExists(atPath: report) { return }
            problems = [p]
        case let list as ProblemList: problems = list.problems
        default: problems = [Problem(OutputCode.outputWrite, "\(error)")]
        }
        var summary = RunSummary(spec: spec, bundleId: "", version: 0, programHash: "", format: batch.format.rawValue, shard: batch.shard.description)
        let first = problems.first { $0.severity == .error } ?? problems.first
        summary.error = first.map { RunSummary.RunError(code: $0.code.rawValue, message: $0.message) }
        summary.problems = problems
        for p in problems { summary.errorsByCode[p.code.rawValue, default: 0] += 1 }
        summary.dryRun = output == .dryRun
        try? RunReport.prepare(report)
        try? RunReport(summary: summary, redact: redact).write(to: report)
    }

    /// The job's steps in order, each timed as its phase: compile, lock and previous generation,
    /// fleet (inventory, directory, join), assignments, render, publish, report.
    func runPhases(cancellation: Cancellation, observer: Observer) throws -> RunSummary {
        let clock = PhaseClock(observer: observer)
        try checkPaths()
        observer.phaseStarted(.compile)
        let compiled = try compileStep(observer: observer)
        defer { compiled.secrets.clear() }
        clock.lap(.compile)
        let lock = try output.lock()
        defer { withExtendedLifetime(lock) {} }
        if let report { try RunReport.prepare(report) }
        // The inputs' fingerprints; once started, waited for on every way out.
        let fingerprints = FingerprintTask(job: self)
        defer { fingerprints.finish() }
        if let unchanged = try unchangedNight(compiled, fingerprints: fingerprints, clock: clock) { return unchanged }
        // Last night's manifest is read on a core of its own while tonight's inputs are read; its
        // warnings are told after theirs, and its error, if any, comes first.
        let held = HeldWarnings()
        let previousWork = WorkBeside(yielding: true) { () throws(Problem) in try previousGeneration(observer: held.observer(observer)) }
        let fleetStepResult = Result { () throws(Problem) in try fleetStep(compiled, clock: clock, fingerprints: fingerprints, observer: observer) }
        let previousResult = Result { () throws(Problem) in try previousWork.value() }
        held.tell(observer)
        let previous = try previousResult.get()
        let loaded = try fleetStepResult.get()
        let fleet = loaded.fleet
        let assignments = try assignStep(compiled, fleet: fleet, clock: clock, observer: observer)
        fingerprints.start()
        let rendered = try renderStep(compiled, fleet: fleet, assignments: assignments, previous: previous,
                                      cancellation: cancellation, observer: observer)
        let (sink, result) = (rendered.sink, rendered.result)
        clock.lap(.render, next: .publish)

        let program = compiled.program
        // The summary made beside the generation's changes and entries: at 10M devices with 500k
        // problems each was a third of a second, one core idle.
        let summarizing = WorkBeside { () throws(Never) in summarize(program: program, fleet: fleet, result: result, assignments: assignments.app) }
        let generation = Generation(policy: nightly, header: manifestHeader(compiled, fingerprints: fingerprints.wait()), program: program, fleet: fleet, result: result,
                                    assignments: assignments.app, previous: previous, sink: sink)
        var summary = summarizing.value()
        let variables = assignments.all.flatMap(\.programs).flatMap(\.slots)
        summary.mapping = SourceMapping(fleet: fleet, attributes: loaded.sources.attributes).line(for: variables)
        summary.changes = generation.changes?.counts
        summary.since = previous == nil ? nil : (nightly.since ?? outputPath)
        let diff = nightDiff(compiled, fleet: fleet, assignments: assignments, previous: previous, changes: generation.changes, result: result)
        if plan { summary.plan = diff?.plan(since: summary.since ?? "") ?? "plan: no previous generation to compare with (a first night): every device is added" }
        let diffLines = diff?.lines()
        // A signal after the render's last chunk: nothing is published either.
        if cancellation.isCancelled { summary.interrupted = true }
        summary.seconds = clock.seconds
        summary.wallSeconds = monotonicSeconds() - clock.start
        summary.directoryImage = loaded.image.loadedFrom
        summary.directoryIncremental = loaded.image.incremental
        summary.inventoryIncremental = loaded.inventoryImage.incremental
        let saving = fleet.users.flatMap { loaded.image.startSaving($0) }
        let savingInventory = loaded.inventoryImage.startSaving(fleet.inventory)
        do {
            try publish(sink, generation, &summary, diff: diffLines)
        } catch {
            loaded.image.finish(saving, users: nil, published: false)
            loaded.inventoryImage.finish(savingInventory, inventory: fleet.inventory, published: false)
            throw error
        }
        loaded.image.finish(saving, users: fleet.users, published: summary.published)
        loaded.inventoryImage.finish(savingInventory, inventory: fleet.inventory, published: summary.published)
        clock.lap(.publish)
        summary.seconds = clock.seconds
        // The phases are laps of one clock: they add up to the job's time so far.
        summary.wallSeconds = clock.last - clock.start
        if let report {
            // Written once already, before the switch (a report that cannot be written publishes
            // nothing); now its summary again with the whole job's times (the problems and changes
            // are those written then). If this second write fails the first stands: it says what
            // happened, only its times stop before the switch.
            var final = RunReport(summary: summary, redact: redact, changes: generation.changes?.lines)
            final.diff = diffLines
            if summary.published { try? final.writeSummary(to: report) } else { try final.write(to: report) }
            clock.lap(.report)  // for the caller; summary.json is written before it ends
            summary.seconds = clock.seconds
        }
        return summary
    }

    /// The night's changes key by key (`NightDiff`), when it compares with a previous generation
    /// and someone will read them (`--plan`, or a report's diff.jsonl).
    func nightDiff(_ compiled: CompiledJob, fleet: Fleet, assignments: JobAssignments, previous: Manifest?, changes: ChangeSet?, result: BatchResult) -> NightDiff? {
        guard let previous, let changes, plan || report != nil else { return nil }
        // The changed devices that were there last night, in key order (the render's order).
        var changed: [(row: Int, entry: Int)] = []
        if result.previousEntries.count == result.order.count {
            for (position, row) in result.order.enumerated() where result.previousEntries[position] >= 0 && changes.changedRows.contains(row) {
                changed.append((Int(row), Int(result.previousEntries[position])))
            }
        }
        var folder = previousGeneration?.folder
        if folder == nil, let since = nightly.since, PathText.name(of: since) == OutputNames.manifestFile { folder = PathText.folder(of: since) }
        let app = assignments.app
        return NightDiff(changes: changes, previous: previous, changed: changed, previousFolder: folder, fleet: fleet,
                         spec: compiled.configuration.spec, delivery: compiled.delivery.delivery, baseProgram: compiled.program,
                         program: { app.programs[app.variant(ofRow: $0)] }, assignmentsOf: { app.names.isEmpty ? [] : app.applied(toRow: $0) })
    }

    /// Phase 1: the spec and values compiled (the program of devices without assignments);
    /// warnings go to the observer.
    public func compile(observer: Observer = Observer()) throws(ProblemList) -> Program {
        try configuration(observer: observer).base
    }

    /// The spec and values read and checked, with the base program; warnings go to the observer.
    public func configuration(observer: Observer = Observer()) throws(ProblemList) -> Configuration {
        let configuration = try Configuration.load(specFile: spec, valuesFile: values, options: compileOptions, specOptions: specOptions)
        configuration.warnings.forEach(observer.warning)
        return configuration
    }

    /// Each variant's credentials: the values file's, with those of the variant's assignments.
    static func credentials(_ configuration: Configuration, _ assignments: DeviceAssignments) -> [[Credential]] {
        guard let values = configuration.values else { return [[]] }
        guard !values.assignments.isEmpty else { return [values.credentials] }
        return assignments.sets.map { values.credentials(applying: DeviceAssignments.members(of: $0, among: values.assignments.count)) }
    }

    /// Credentials go only where they can be delivered whole: DDM, with a place for secret-bearing
    /// documents (a usage error otherwise, before anything is written).
    func checkCredentialDelivery(_ credentials: [Credential], _ delivery: ResolvedDelivery) throws(Problem) {
        guard delivery.delivery == .ddm else {
            throw Problem(.deliveryOption, "the values file has credentials: they are delivered as DDM credential assets (--delivery ddm), not with --delivery \(delivery.delivery.rawValue)")
        }
        if delivery.secretAssetBaseURL == nil, credentials.contains(where: \.holdsSecret) {
            throw Problem(.deliveryOption, "credentials that hold secrets need --secret-asset-base-url https://… (where secret-assets/ is served, with MDM authentication)")
        }
    }


    /// Each `--extension`'s spec and values read and checked (its spec: its own, or the app's).
    func extensionConfigurations(observer: Observer) throws(ProblemList) -> [(id: String, configuration: Configuration)] {
        var out: [(String, Configuration)] = []
        for e in delivery.extensions {
            let c = try Configuration.load(specFile: e.spec ?? spec, valuesFile: e.values, options: compileOptions, specOptions: specOptions)
            c.warnings.forEach(observer.warning)
            out.append((e.composedID, c))
        }
        return out
    }
}

/// Warnings of work done beside the job's phases, held and told after theirs, in their order:
/// what a run prints does not depend on which thread finished first.
final class HeldWarnings: @unchecked Sendable {
    private var held: [Problem] = []
    private let lock = NSLock()

    /// `observer`, its warnings held here.
    func observer(_ observer: RenderJob.Observer) -> RenderJob.Observer {
        var o = observer
        o.warning = { [self] p in lock.withLock { held.append(p) } }
        return o
    }

    func tell(_ observer: RenderJob.Observer) { lock.withLock { held }.forEach(observer.warning) }
}
