import AppConfigCore
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
    /// Where the plists go.
    public enum Output: Sendable, Equatable {
        /// A folder tree, published whole: a new generation folder beside it, then one atomic symlink switch.
        case directory(String)
        /// A tar archive, written under a temporary name and renamed when complete.
        case tar(String)
        /// A tar stream on standard output (no atomicity: the consumer sees it as it is written).
        case tarStdout
        /// Resolve and check every device, write nothing.
        case dryRun
    }

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
    /// More failed devices than this: nothing is published.
    public var maxFailures: Int?
    /// A failed share above this: nothing is published (unless `force`).
    public var maxFailureRatio = 0.05
    /// The previous generation to compare with (a generation folder, its manifest or its tar); for a
    /// folder output, by default the one published now.
    public var since: String?
    /// Write only the devices added or changed since `since` (with the whole fleet's manifest).
    public var changedOnly = false
    /// With a previous generation, a changed + removed share above this: nothing is published
    /// (a sign of a wrong input), unless `force`.
    public var maxChangeRatio = 0.5
    /// Devices gone from tonight's inputs lose the app: their removal is written (an empty DDM set,
    /// an MDM removal command). Without it they keep their last configuration and are `missing`.
    public var removeMissing = false
    /// With `removeMissing`, a removed share of the previous devices above this: nothing is
    /// published (unless `force`).
    public var maxRemovalRatio = 0.01
    /// Publish even past `maxFailureRatio`, `maxChangeRatio` and `maxRemovalRatio`.
    public var force = false
    /// Render although the inventory names users and not one was found (`join.none`).
    public var allowUnjoined = false
    /// Where the secrets the credentials name come from (`--secret NAME=...`).
    public var secrets: [SecretSource] = []
    /// A folder for `summary.json` and `errors.jsonl`.
    public var report: String?
    /// Leave values out of the error file.
    public var redact = false

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
        // Every pass, not only the render, takes at most `batch.jobs` threads.
        Parallelism.limit(to: batch.jobs)
        do {
            return try runPhases(cancellation: cancellation, observer: observer)
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
            if p.code == JobCode.reportWrite || p.code == JobCode.outputLocked || p.code == JobCode.outputPath { return }
            // A job that could not start (bad options) replaces an account, never makes one.
            if let code = p.code.as(JobCode.self), JobCode.usage.contains(code), !FileManager.default.fileExists(atPath: report) { return }
            problems = [p]
        case let list as ProblemList: problems = list.problems
        default: problems = [Problem(JobCode.outputWrite, "\(error)")]
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

    func runPhases(cancellation: Cancellation, observer: Observer) throws -> RunSummary {
        let jobStart = monotonicSeconds()
        var clock = jobStart
        var seconds: [String: Double] = [:]
        func lap(_ phase: Phase, next: Phase? = nil) {
            let now = monotonicSeconds()
            seconds[phase.rawValue] = now - clock
            clock = now
            if let next { observer.phaseStarted(next) }
        }

        try checkPaths()
        observer.phaseStarted(.compile)
        let configuration = try configuration(observer: observer)
        let program = configuration.base
        let delivery = try self.delivery.resolved(specBundleID: program.metadata.bundleId)
        if delivery.delivery.isMDMCommand && batch.format != .xml {
            throw Problem(.deliveryOption, "MDM commands are XML plists: --delivery \(delivery.delivery.rawValue) takes --format xml")
        }
        let extensions = try extensionConfigurations(observer: observer)
        if let e = extensions.first(where: { $0.configuration.values?.assignments.contains { !$0.credentials.isEmpty } ?? false }) {
            throw Problem(.deliveryOption, "the values of --extension \(e.id) give credentials in assignments: an extension's credentials are its file's \"credentials\", for every device")
        }
        if let e = extensions.first(where: { !$0.configuration.exclusions.isEmpty }) {
            throw Problem(.deliveryOption, "the values of --extension \(e.id) give \"exclude\": the devices left out are the app's, in its own values file")
        }
        // Credentials: where they can go is a usage error, and the secrets are read, before any input.
        let allCredentials = configurations(configuration, extensions).flatMap { c in (c.values?.credentials ?? []) + (c.values?.assignments.flatMap(\.credentials) ?? []) }
        let store: SecretStore
        if !allCredentials.isEmpty {
            try checkCredentialDelivery(allCredentials, delivery)
            store = try SecretStore(secrets)
        } else {
            store = SecretStore()
        }
        defer { store.clear() }
        lap(.compile)
        let lock = try outputPath.map { p throws(Problem) in try OutputLock(output: p) }
        defer { withExtendedLifetime(lock) {} }
        if let report { try RunReport.prepare(report) }
        let previous = try previousManifest(warning: observer.warning)
        // A first night (no generation to compare with): --changed-only ships everything, and says so.
        if previous == nil && changedOnly {
            var note = Problem(.sinceMissing, "--changed-only: no previous generation to compare with (a first night): every device is published")
            note.severity = .warning
            observer.warning(note)
        }
        // Before the inventory is read: a wrong password or an unreachable server ends the run at once.
        var sources = self.sources
        // Group memberships are read only when an assignment matches on groups.
        let configurations = configurations(configuration, extensions)
        sources.attributes.readsGroups = configurations.contains { ($0.assignments + $0.exclusions).contains { $0.conditions.contains { $0.subject == .group } } }
        try sources.checkDirectory(warning: observer.warning)
        lap(.since, next: .inventory)
        let inventory = try sources.loadInventory(extraColumns: configurations.flatMap(\.deviceColumns), matchColumns: configurations.flatMap(\.matchColumns))
        inventory.exportChecks.forEach(observer.warning)
        lap(.inventory, next: .directory)
        let users = try sources.loadDirectory(for: inventory, warning: observer.warning)
        lap(.directory, next: .join)
        let fleet = Fleet(inventory: inventory, users: users)
        if var diagnosis = fleet.joinDiagnosis() {
            if diagnosis.code == .joinNone && !allowUnjoined {
                diagnosis.message += " (--allow-unjoined renders the devices without users)"
                throw diagnosis
            }
            diagnosis.severity = .warning
            observer.warning(diagnosis)
        }
        let assignments: DeviceAssignments
        var extensionAssignments: [(id: String, assignments: DeviceAssignments)] = []
        if configurations.allSatisfy({ $0.assignments.isEmpty && $0.exclusions.isEmpty }) {
            lap(.join, next: .render)
            assignments = DeviceAssignments(base: program)
            extensionAssignments = extensions.map { ($0.id, DeviceAssignments(base: $0.configuration.base)) }
        } else {
            lap(.join, next: .assign)
            assignments = try DeviceAssignments.resolve(configuration, fleet: fleet, warning: observer.warning)
            for e in extensions { extensionAssignments.append((e.id, try DeviceAssignments.resolve(e.configuration, fleet: fleet, warning: observer.warning))) }
            lap(.assign, next: .render)
        }

        // Credentials: each variant's, and each extension's.
        let credentials = Self.credentials(configuration, assignments)
        let extensionCredentials = extensions.map { $0.configuration.values?.credentials ?? [] }
        var credentialRenderer: CredentialRenderer?
        if !allCredentials.isEmpty {
            credentialRenderer = try CredentialRenderer(credentials: credentials, extensionCredentials: extensionCredentials, fleet: fleet, secrets: store)
        }
        func kinds(_ list: [Credential]) -> [(identifier: String, kind: Credential.Kind)] { list.map { ($0.identifier, $0.kind) } }
        let credentialKinds = (credentials.map(kinds), extensionCredentials.map(kinds))

        let encoder = Self.encoder(for: delivery)
        var options = batch
        options.xmlNesting = encoder?.nesting ?? 0
        if delivery.delivery == .ddm { options.maxOutputBytes = DeclarationBuilder.maxAssetBytes }
        let renderer = try BatchRenderer(assignments: assignments, fleet: fleet, options: options, extensions: extensionAssignments,
                                         credentials: credentialRenderer)
        let filter = previous.map { ChangeFilter(previous: $0, skipsUnchanged: changedOnly) }
        let sink = try makeSink(delivery, encoder: encoder, filter: filter, devices: renderer.deviceCount, credentials: credentialKinds)
        // The inputs' fingerprints, read while the devices render; waited for on every way out.
        let fingerprints = FingerprintTask(job: self)
        defer { _ = fingerprints.wait() }
        observer.renderStarted(renderer)
        let result: BatchResult
        do {
            result = try renderer.run(into: sink, cancellation: cancellation)
        } catch {
            sink.discard()
            throw error
        }
        observer.renderFinished()
        // What was rendered from a mapped inventory that changed since is not published.
        if let change = fleet.inventory.change() {
            sink.discard()
            throw change
        }
        lap(.render, next: .publish)

        var summary = summarize(program: program, fleet: fleet, result: result, assignments: assignments)
        let variables = (assignments.programs + extensionAssignments.flatMap(\.assignments.programs)).flatMap(\.slots)
        summary.mapping = SourceMapping(fleet: fleet, attributes: sources.attributes).line(for: variables)
        let header = [("format", batch.format.rawValue), ("delivery", delivery.delivery.rawValue), ("shard", batch.shard.description)]
        let generation = Generation(policy: policy, header: header + fingerprints.wait(), program: program, fleet: fleet, result: result,
                                    assignments: assignments, previous: previous, sink: sink)
        summary.changes = generation.changes?.counts
        summary.since = previous == nil ? nil : (since ?? outputPath)
        // A signal after the render's last chunk: nothing is published either.
        if cancellation.isCancelled { summary.interrupted = true }
        summary.seconds = seconds
        summary.wallSeconds = monotonicSeconds() - jobStart
        try publish(sink, generation, &summary)
        lap(.publish)
        summary.seconds = seconds
        // The phases are laps of one clock: they add up to the job's time so far.
        summary.wallSeconds = clock - jobStart
        if let report {
            // Written once already, before the switch (a report that cannot be written publishes
            // nothing); now again with the whole job's times. If this second write fails the
            // first stands: it says what happened, only its times stop before the switch.
            let final = RunReport(summary: summary, redact: redact, changes: generation.changes?.lines)
            if summary.published { try? final.write(to: report) } else { try final.write(to: report) }
            lap(.report)  // for the caller; summary.json is written before it ends
            summary.seconds = seconds
        }
        return summary
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

    private func configurations(_ app: Configuration, _ extensions: [(id: String, configuration: Configuration)]) -> [Configuration] {
        [app] + extensions.map(\.configuration)
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
