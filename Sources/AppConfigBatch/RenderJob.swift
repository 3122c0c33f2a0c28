import AppConfigBytes
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
        public var phaseStarted: @Sendable (String) -> Void = { _ in }
        public var renderStarted: @Sendable (BatchRenderer) -> Void = { _ in }
        public var renderFinished: @Sendable () -> Void = {}
        public init() {}
    }

    /// Runs every phase. Throws a `Problem` (an input or the output failed: nothing published) or a
    /// `ProblemList` (the spec or values do not compile). Device failures do not throw: they are in
    /// the summary, whose `exitStatus` says what a script should see.
    public func run(cancellation: Cancellation = Cancellation(), observer: Observer = Observer()) throws -> RunSummary {
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
        func lap(_ phase: String, next: String? = nil) {
            let now = monotonicSeconds()
            seconds[phase] = now - clock
            clock = now
            if let next { observer.phaseStarted(next) }
        }

        try checkPaths()
        observer.phaseStarted("compile")
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
        lap("compile")
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
        lap("since", next: "inventory")
        let inventory = try sources.loadInventory(extraColumns: configurations.flatMap(\.deviceColumns), matchColumns: configurations.flatMap(\.matchColumns))
        inventory.exportChecks.forEach(observer.warning)
        lap("inventory", next: "directory")
        let users = try sources.loadDirectory(for: inventory, warning: observer.warning)
        lap("directory", next: "join")
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
            lap("join", next: "render")
            assignments = DeviceAssignments(base: program)
            extensionAssignments = extensions.map { ($0.id, DeviceAssignments(base: $0.configuration.base)) }
        } else {
            lap("join", next: "assign")
            assignments = try DeviceAssignments.resolve(configuration, fleet: fleet, warning: observer.warning)
            for e in extensions { extensionAssignments.append((e.id, try DeviceAssignments.resolve(e.configuration, fleet: fleet, warning: observer.warning))) }
            lap("assign", next: "render")
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
        lap("render", next: "publish")

        var summary = summarize(program: program, fleet: fleet, result: result, assignments: assignments)
        let variables = (assignments.programs + extensionAssignments.flatMap(\.assignments.programs)).flatMap(\.slots)
        summary.mapping = SourceMapping(fleet: fleet, attributes: sources.attributes).line(for: variables)
        let generation = Generation(job: self, program: program, fleet: fleet, result: result, assignments: assignments,
                                    previous: previous, fingerprints: fingerprints.wait(), sink: sink)
        summary.changes = generation.changes?.counts
        summary.since = previous == nil ? nil : (since ?? outputPath)
        // A signal after the render's last chunk: nothing is published either.
        if cancellation.isCancelled { summary.interrupted = true }
        summary.seconds = seconds
        summary.wallSeconds = monotonicSeconds() - jobStart
        try publish(sink, generation, &summary)
        lap("publish")
        summary.seconds = seconds
        // The phases are laps of one clock: they add up to the job's time so far.
        summary.wallSeconds = clock - jobStart
        if let report {
            // Written once already, before the switch (a report that cannot be written publishes
            // nothing); now again with the whole job's times. If this second write fails the
            // first stands: it says what happened, only its times stop before the switch.
            let final = RunReport(summary: summary, redact: redact, changes: generation.changes?.lines)
            if summary.published { try? final.write(to: report) } else { try final.write(to: report) }
            lap("report")  // for the caller; summary.json is written before it ends
            summary.seconds = seconds
        }
        return summary
    }

    /// The output's and the report's paths name something this run can make beside its folder:
    /// `--out .` would lock `..lock` and publish a symlink over the working folder, `--out ""`
    /// rendered the whole fleet before failing. Checked before anything is read.
    func checkPaths() throws(Problem) {
        var named: [(String, String)] = []
        switch output {
        case .directory(let p): named.append(("--out", p))
        case .tar(let p): named.append(("--tar", p))
        case .tarStdout, .dryRun: break
        }
        if let report { named.append(("--report", report)) }
        for (option, path) in named {
            let last = PathText.name(of: path)
            if path.isEmpty || last == "." || last == ".." || last == "/" {
                throw Problem(.outputPath, at: Location(file: path),
                              "\(option) \"\(path)\" names no \(option == "--report" ? "folder" : "output") of its own; give a path such as ./out")
            }
        }
    }

    /// The folder or archive the run writes (locked for the run), nil for a stream or a dry run.
    var outputPath: String? {
        switch output {
        case .directory(let p), .tar(let p): p
        case .tarStdout, .dryRun: nil
        }
    }

    /// The folder of the previous generation, when it is one: where a DDM folder output links
    /// the live assets it did not write from.
    var previousFolder: String? {
        var isFolder: ObjCBool = false
        if let since { return FileManager.default.fileExists(atPath: since, isDirectory: &isFolder) && isFolder.boolValue ? since : nil }
        if case .directory(let path) = output { return FolderSink.published(path) }
        return nil
    }

    /// `since`, or for a folder output the generation published now; nil when there is none (a
    /// first night, when `--changed-only` writes every device).
    /// For DDM its paths are kept: they name the assets each device's set names.
    /// The generation to compare with: `--since`'s (refused when it was made another way), else
    /// the output's current one (when it was made another way, a night with nothing to compare
    /// with: a warning).
    func previousManifest(warning: (Problem) -> Void = { _ in }) throws(Problem) -> Manifest? {
        let paths = delivery.delivery == .ddm
        if let since {
            let manifest = try Manifest.load(since, indexed: changedOnly, keepsPaths: paths)
            if let difference = difference(from: manifest) {
                throw Problem(.sinceMismatch, at: Location(file: since), "the previous generation (\(since)) \(difference): compared, its devices would "
                              + "read as removed or changed; give --since a generation made the same way, or none")
            }
            return manifest
        }
        guard case .directory(let path) = output, let current = FolderSink.published(path) else { return nil }
        let manifest = try Manifest.load(current, indexed: changedOnly, keepsPaths: paths)
        if let difference = difference(from: manifest) {
            var note = Problem(.sinceMismatch, at: Location(file: current),
                               "the output's current generation (\(current)) \(difference): not compared; every device is written, none is removed")
            note.severity = .warning
            warning(note)
            return nil
        }
        return manifest
    }

    /// How a previous generation was made otherwise than this run makes its own, nil when it was
    /// not: a manifest without its program, format, delivery or shard line (a header with lines
    /// deleted read as every device unchanged), or another format, delivery or shard (another
    /// shard's manifest made live devices removals). The program may differ: that is a change of
    /// values, and the digests say which devices it changed.
    func difference(from manifest: Manifest) -> String? {
        let expected = [("format", batch.format.rawValue), ("delivery", delivery.delivery.rawValue), ("shard", batch.shard.description)]
        let header = Dictionary(manifest.header.map { ($0.name, $0.value) }, uniquingKeysWith: { a, _ in a })
        for name in ["program"] + expected.map(\.0) where header[name] == nil { return "has no \(name) line in its manifest" }
        for (name, value) in expected where header[name] != value { return "was made with \(name) \(header[name]!), this run's is \(value)" }
        return nil
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

    /// The sink for `output` and the delivery; creating it makes the new generation folder or the
    /// temporary tar file.
    func makeSink(_ delivery: ResolvedDelivery, encoder: MDMCommand?, filter: ChangeFilter?, devices: Int = 0,
                  credentials: DDMSink.CredentialKinds = ([[]], [])) throws(Problem) -> OutputSink {
        if delivery.delivery == .ddm {
            switch output {
            case .directory(let path):
                return try DDMSink(folder: path, keep: keepGenerations, delivery: delivery, devices: devices, filter: filter, credentials: credentials)
            case .tar(let path): return try DDMSink(tar: path, delivery: delivery, devices: devices, filter: filter, credentials: credentials)
            case .tarStdout: return try DDMSink(tar: nil, delivery: delivery, devices: devices, filter: filter, credentials: credentials)
            case .dryRun: return DryRunSink(digest: DDMSink.digest(delivery, credentials: credentials))
            }
        }
        switch output {
        case .directory(let path): return try FolderSink(path: path, keep: keepGenerations, encoder: encoder, filter: filter)
        case .tar(let path): return try TarSink(path: path, encoder: encoder, filter: filter)
        case .tarStdout: return TarSink(streamingTo: 1, encoder: encoder, filter: filter)
        case .dryRun:
            guard let encoder else { return DryRunSink() }
            return DryRunSink { device in
                var out: [UInt8] = []
                encoder.encode(key: device.key, plist: device.plist, into: &out)
                return SHA256Digest(of: out)
            }
        }
    }

    /// The MDM command that wraps each device's configuration, for the MDM deliveries.
    static func encoder(for delivery: ResolvedDelivery) -> MDMCommand? {
        switch delivery.delivery {
        case .mdmSettings: MDMCommand(kind: .settings, delivery: delivery)
        case .mdmInstall: MDMCommand(kind: .install, delivery: delivery)
        case .plist, .ddm: nil
        }
    }

    /// The counts of a finished render pass.
    func summarize(program: Program, fleet: Fleet, result: BatchResult, assignments: DeviceAssignments) -> RunSummary {
        var s = RunSummary(spec: spec, bundleId: program.metadata.bundleId, version: program.metadata.version,
                           programHash: program.metadata.hashHex, format: batch.format.rawValue, shard: batch.shard.description)
        // A shard accounts for its own devices: the join's problems of other shards' rows are theirs.
        let joinProblems = batch.shard.count == 1 ? fleet.problems : fleet.problems.filter { p in
            p.location.row.map { batch.shard.contains(hash: OutputNames.hash(fleet.inventory.value(row: $0, slot: fleet.inventory.deviceKeySlot))) } ?? true
        }
        s.problems = fleet.inventory.exportChecks + fleet.inventory.problems + (fleet.users?.problems ?? []) + joinProblems
        s.failures = result.failures
        s.devices.inventoryRows = fleet.inventory.dataRows
        s.devices.continuationRows = fleet.inventory.continuationRows
        s.devices.inventoryDevices = fleet.inventory.rowCount
        s.devices.inShard = result.devicesInShard
        s.devices.rendered = result.rendered
        s.devices.failed = result.failures.count
        s.devices.skipped = fleet.inventory.problems.filter { $0.severity == .error }.count
        s.devices.usersNotFound = joinProblems.filter { $0.code == SourceCode.userNotFound }.count
        s.devices.devicesWithoutUser = joinProblems.filter { $0.code == SourceCode.userKeyEmpty }.count
        s.devices.excluded = assignments.excludedRows.count
        for f in result.failures { for p in f.problems { s.errorsByCode[p.code.rawValue, default: 0] += 1 } }
        let inventory = fleet.inventory
        func identity(_ row: Int) -> RunSummary.DeviceIdentity {
            func text(_ slot: Int?) -> String? { slot.map { inventory.string(row: row, slot: $0) }.flatMap { $0.isEmpty ? nil : $0 } }
            return RunSummary.DeviceIdentity(serialNumber: text(inventory.variableSlots[.serialNumber]), userKey: text(inventory.userKeySlot),
                                             assignments: assignments.names.isEmpty ? nil : assignments.applied(toRow: row))
        }
        for row in result.failures.map(\.row) + s.problems.compactMap(\.location.row) where row < inventory.rowCount {
            s.identities[row] = identity(row)
        }
        for p in s.problems { s.errorsByCode[p.code.rawValue, default: 0] += 1 }
        s.devicesPerSecond = result.seconds > 0 ? Int(Double(result.devicesInShard) / result.seconds) : 0
        s.interrupted = result.interrupted
        if !assignments.names.isEmpty {
            s.assignments = assignments.counts(variants: result.variants)
            s.variants = assignments.sets.count
        }
        s.dryRun = output == .dryRun
        return s
    }

    /// The last phase: the output made visible whole, with its index and manifest, unless the run
    /// was interrupted or a guard holds it back; then it is removed and the previous output stays.
    func publish(_ sink: OutputSink, _ generation: Generation, _ summary: inout RunSummary) throws(Problem) {
        if summary.interrupted {
            sink.discard()
            return
        }
        if let reason = generation.refusal(summary) {
            summary.notPublished = reason
            sink.discard()
            return
        }
        // `--changed-only` and nothing added, changed, removed or missing: the generation would be empty,
        // and publishing it would push a good one out of `--keep`. The previous one stays.
        if changedOnly, let counts = generation.changes?.counts, counts.added + counts.changed + counts.removed + counts.missing + counts.rekeyed == 0, output != .dryRun {
            summary.nothingChanged = true
            sink.discard()
            return
        }
        do {
            try generation.writeRemovals()
            var live = LiveAssets()
            if let ddm = sink as? DDMSink {
                live = generation.liveAssets()
                summary.assetsNotLinked = try ddm.link(live, from: previousFolder)
            }
            let kept = try generation.linkCarriedFiles(from: previousFolder)
            summary.keptNotLinked = kept.notLinked
            // The report goes first, as the run will be once published: a full disk found here
            // publishes nothing (exit 1 means nothing was published), not the output then exit 1.
            if let report, output != .dryRun {
                var ahead = summary
                ahead.published = true
                ahead.output = outputPath ?? "-"
                try RunReport(summary: ahead, redact: redact, changes: generation.changes?.lines).write(to: report)
            }
            let path = try sink.publish(closing: generation.closingFiles(liveAssets: live, kept: kept.linked))
            if output != .dryRun {
                summary.published = true
                summary.output = path
            }
        } catch {
            sink.discard()
            throw error
        }
    }
}

