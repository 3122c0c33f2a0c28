import AppConfigCore
import AppConfigOutput
import AppConfigCompiler
import AppConfigSources
import AppConfigSpec
import Digest
import Foundation

/// The laps of a job's one clock: each phase's seconds, and the observer told of the next phase.
final class PhaseClock {
    let start = monotonicSeconds()
    private(set) var last: Double
    private(set) var seconds: [Phase: Double] = [:]
    private let observer: RenderJob.Observer

    init(observer: RenderJob.Observer) {
        self.observer = observer
        last = start
    }

    func lap(_ phase: Phase, next: Phase? = nil) {
        let now = monotonicSeconds()
        seconds[phase] = now - last
        last = now
        if let next { observer.phaseStarted(next) }
    }
}

/// What the compile step settles before any input is read: the app's and extensions'
/// configurations, the delivery, and the credentials with their secrets.
struct CompiledJob {
    let configuration: Configuration
    let extensions: [(id: String, configuration: Configuration)]
    let delivery: ResolvedDelivery
    /// The batch options as the delivery settles them (`ResolvedDelivery.rendering`).
    let rendering: BatchOptions
    /// Every credential of the app's values, its assignments and the extensions'.
    let credentials: [Credential]
    let secrets: SecretStore
    /// What secret documents are named by (nil: no credential holds a secret).
    let assetKey: SecretAssetKey?
    /// The manifest's `options` line (`RenderJob.optionsFingerprint`), made once: it hashes the
    /// extensions' files.
    let optionsFingerprint: String

    var program: Program { configuration.base }
    /// The app's configuration, then each extension's.
    var all: [Configuration] { [configuration] + extensions.map(\.configuration) }
}

/// Each device's variant: the app's assignments, and each extension's.
struct JobAssignments {
    let app: DeviceAssignments
    let extensions: [(id: String, assignments: DeviceAssignments)]
    var all: [DeviceAssignments] { [app] + extensions.map(\.assignments) }
}

extension RenderJob {
    /// The spec and values of the app and its extensions compiled, the delivery resolved, and
    /// where credentials can go checked and their secrets read: usage errors before any input.
    func compileStep(observer: Observer) throws -> CompiledJob {
        let configuration = try configuration(observer: observer)
        let delivery = try self.delivery.resolved(specBundleID: configuration.base.metadata.bundleId)
        guard let rendering = delivery.rendering(batch) else { throw Problem(.deliveryOption, delivery.delivery.formatRefusal) }
        let extensions = try extensionConfigurations(observer: observer)
        if let e = extensions.first(where: { $0.configuration.values?.assignments.contains { !$0.credentials.isEmpty } ?? false }) {
            throw Problem(.deliveryOption, "the values of --extension \(e.id) give credentials in assignments: an extension's credentials are its file's \"credentials\", for every device")
        }
        if let e = extensions.first(where: { !$0.configuration.exclusions.isEmpty }) {
            throw Problem(.deliveryOption, "the values of --extension \(e.id) give \"exclude\": the devices left out are the app's, in its own values file")
        }
        let all = [configuration] + extensions.map(\.configuration)
        let credentials = all.flatMap { c in (c.values?.credentials ?? []) + (c.values?.assignments.flatMap(\.credentials) ?? []) }
        if !credentials.isEmpty { try checkCredentialDelivery(credentials, delivery) }
        let store = credentials.isEmpty ? SecretStore() : try SecretStore(secrets, timeout: secretTimeout, withheld: withheldEnvironment)
        let assetKey = credentials.contains(where: \.holdsSecret) ? try SecretAssetKey.resolve(secretAssetKey, output: output, timeout: secretTimeout) : nil
        return CompiledJob(configuration: configuration, extensions: extensions, delivery: delivery, rendering: rendering, credentials: credentials,
                           secrets: store, assetKey: assetKey, optionsFingerprint: optionsFingerprint(delivery))
    }

    /// The generation to compare with (see `previousManifest`); a first night with
    /// `--changed-only` ships everything, and says so.
    func previousGeneration(observer: Observer) throws(Problem) -> Manifest? {
        let previous = try previousManifest(warning: observer.warning)
        if previous == nil && nightly.changedOnly {
            var note = Problem(.sinceMissing, "--changed-only: no previous generation to compare with (a first night): every device is published")
            note.severity = .warning
            observer.warning(note)
        }
        return previous
    }

    /// A night with nothing to do: the previous generation's manifest has this run's program,
    /// options and input fingerprints, so the output would be the same bytes. Nothing past the
    /// fingerprints is read, and nothing is rendered or published; the report says so. Not
    /// with `--rerender`, an LDAP directory (its content has no fingerprint) or credentials
    /// (their secrets come from outside the inputs).
    func unchangedNight(_ compiled: CompiledJob, fingerprints: FingerprintTask, clock: PhaseClock) throws(Problem) -> RunSummary? {
        if nightly.rerender || !compiled.credentials.isEmpty { return nil }
        if case .ldap = sources.directory { return nil }
        guard let previous = previousGeneration, let file = previous.manifestFile, let prior = Manifest.header(of: file) else { return nil }
        // What needs no hashing first (a changed night mostly shows here, and goes on at once):
        // the lines beside the files', and the files' sizes.
        let before = Dictionary(prior.map { ($0.name, $0.value) }, uniquingKeysWith: { a, _ in a })
        let cheap = manifestHeader(compiled, fingerprints: []).filter { before[$0.0] != $0.1 }
        if !cheap.isEmpty || fingerprints.files.contains(where: { !fingerprints.mayBe(before[$0.name], of: $0.path) }) { return nil }
        let header = manifestHeader(compiled, fingerprints: fingerprints.wait())
        guard prior.elementsEqual(header, by: { $0.name == $1.0 && $0.value == $1.1 }) else { return nil }
        // The previous manifest is trusted only whole: its end line counts and hashes its lines
        // (a manifest cut or edited is refused as on any night).
        try Manifest.checkWhole(file)
        // What died with an earlier run goes, as on any night (the lock is held).
        output.removeStale()
        let program = compiled.program
        var s = RunSummary(spec: spec, bundleId: program.metadata.bundleId, version: program.metadata.version,
                           programHash: program.metadata.hashHex, format: batch.format.rawValue, shard: batch.shard.description)
        s.inputsUnchanged = true
        s.nothingChanged = true
        s.since = nightly.since ?? outputPath
        s.dryRun = output == .dryRun
        clock.lap(.since)
        s.seconds = clock.seconds
        s.wallSeconds = clock.last - clock.start
        if let report { try RunReport(summary: s, redact: redact).write(to: report) }
        return s
    }

    /// The directory checked (a wrong password or an unreachable server ends the run before the
    /// inventory is read), the inventory and the directory read, devices joined to their users.
    func fleetStep(_ compiled: CompiledJob, clock: PhaseClock, fingerprints: FingerprintTask,
                   observer: Observer) throws(Problem) -> LoadedFleet {
        var sources = self.sources
        // Group memberships are read only when an assignment matches on groups.
        let configurations = compiled.all
        sources.attributes.readsGroups = configurations.contains { ($0.assignments + $0.exclusions).contains { $0.conditions.contains { $0.subject == .group } } }
        // What any program reads or an assignment matches on (nil: everything, for credentials):
        // the inventory's columns and the user table's variables kept.
        let read = configurations.map(\.variablesRead).reduce(Set<Variable>() as Set<Variable>?) { all, one in one.flatMap { all?.union($0) } }
        sources.attributes.keptVariables = read?.userVariables
        try sources.checkDirectory(warning: observer.warning)
        clock.lap(.since, next: .inventory)
        // Last night's rows (`InventoryImage`) where the file's records have last night's bytes.
        let inventoryPlaces = inventoryImagePlaces
        let inventory = try sources.loadInventory(extraColumns: configurations.flatMap(\.deviceColumns), matchColumns: configurations.flatMap(\.matchColumns),
                                                  deviceVariables: read?.deviceVariables, keepingRecords: inventoryPlaces.save != nil,
                                                  image: inventoryPlaces.read.first { FileManager.default.fileExists(atPath: $0) })
        inventory.exportChecks.forEach(observer.warning)
        clock.lap(.inventory, next: .directory)
        let (users, image) = try loadDirectory(sources, for: inventory, fingerprints: fingerprints, observer: observer)
        // An --attribute no entry has: said once, not as a missing variable on every device.
        var said = Set<Variable>()
        if let users {
            for (v, attribute) in sources.attributes.given.sorted(by: { $0.key.rawValue < $1.key.rawValue }) where (users.attributeCounts[attribute.lowercased()] ?? 0) == 0 {
                var p = Problem(.variableMissingEverywhere, at: Location(file: users.source),
                                "--attribute \(v.rawValue)=\(attribute): no entry of \(users.source) has \(attribute); $(\(v.rawValue)) is missing for every user")
                p.severity = .warning
                observer.warning(p)
                said.insert(.user(v))
            }
        }
        clock.lap(.directory, next: .join)
        let fleet = Fleet(inventory: inventory, users: users)
        if var diagnosis = fleet.joinDiagnosis() {
            if diagnosis.code == .joinNone && !allowUnjoined {
                diagnosis.message += " (--allow-unjoined renders the devices without users)"
                throw diagnosis
            }
            diagnosis.severity = .warning
            observer.warning(diagnosis)
        }
        Self.missingEverywhere(configurations, in: fleet, except: said).forEach(observer.warning)
        return LoadedFleet(fleet: fleet, sources: sources, image: image, inventoryImage: InventoryImageUse(saveTo: inventoryPlaces.save, inventory: inventory))
    }

    /// A warning per variable the base programs read that not one device has: the mapping has no
    /// column or attribute for it (WS1's `{EnrollmentUser}` imported as `$(sAMAccountName)` with
    /// no column mapped to it lost the key on 40 of 40 devices, silently, where it was nullable).
    /// Rows are read until each variable is seen once: a variable some device has costs a few rows.
    static func missingEverywhere(_ configurations: [Configuration], in fleet: Fleet, except said: Set<Variable> = []) -> [Problem] {
        var variables: [Variable] = []
        for c in configurations { for v in c.base.slots where !variables.contains(v) && !said.contains(v) { variables.append(v) } }
        guard fleet.deviceCount > 0, !variables.isEmpty, let plan = try? fleet.plan(for: variables) else { return [] }
        var seen = [Bool](repeating: false, count: variables.count)
        var left = variables.count
        for row in 0..<fleet.deviceCount where left > 0 {
            fleet.forEachValue(row: row, plan: plan) { slot, bytes in
                if let bytes, !bytes.isEmpty, !seen[slot] { seen[slot] = true; left -= 1 }
            }
        }
        return variables.indices.filter { !seen[$0] }.map { i in
            var p = Problem(.variableMissingEverywhere, at: Location(file: fleet.inventory.file),
                            "$(\(variables[i])) is missing on every device (\(fleet.deviceCount)): no column or attribute gives it; every device loses or fails its keys (see the mapping: `appconfig sources`)")
            p.severity = .warning
            return p
        }
    }

    /// Each device's variant for the app and each extension (a phase of its own only when a
    /// values file has assignments or exclusions).
    func assignStep(_ compiled: CompiledJob, fleet: Fleet, clock: PhaseClock, observer: Observer) throws -> JobAssignments {
        if compiled.all.allSatisfy({ $0.assignments.isEmpty && $0.exclusions.isEmpty }) {
            clock.lap(.join, next: .render)
            return JobAssignments(app: DeviceAssignments(base: compiled.program),
                                  extensions: compiled.extensions.map { ($0.id, DeviceAssignments(base: $0.configuration.base)) })
        }
        clock.lap(.join, next: .assign)
        let app = try DeviceAssignments.resolve(compiled.configuration, fleet: fleet, warning: observer.warning)
        var extensions: [(id: String, assignments: DeviceAssignments)] = []
        for e in compiled.extensions { extensions.append((e.id, try DeviceAssignments.resolve(e.configuration, fleet: fleet, warning: observer.warning))) }
        clock.lap(.assign, next: .render)
        return JobAssignments(app: app, extensions: extensions)
    }

    /// Every device of the shard rendered into a new sink. On an error (or an inventory changed
    /// under the run) the sink is discarded.
    func renderStep(_ compiled: CompiledJob, fleet: Fleet, assignments: JobAssignments, previous: Manifest?,
                    cancellation: Cancellation, observer: Observer) throws -> RenderedGeneration {
        // Credentials: each variant's, and each extension's.
        let credentials = Self.credentials(compiled.configuration, assignments.app)
        let extensionCredentials = compiled.extensions.map { $0.configuration.values?.credentials ?? [] }
        var credentialRenderer: CredentialRenderer?
        if !compiled.credentials.isEmpty {
            credentialRenderer = try CredentialRenderer(credentials: credentials, extensionCredentials: extensionCredentials, fleet: fleet,
                                                        secrets: compiled.secrets, assetKey: compiled.assetKey)
        }
        func kinds(_ list: [Credential]) -> [(identifier: String, kind: Credential.Kind)] { list.map { ($0.identifier, $0.kind) } }
        let credentialKinds = (credentials.map(kinds), extensionCredentials.map(kinds))

        let renderer = try BatchRenderer(assignments: assignments.app, fleet: fleet, options: compiled.rendering, extensions: assignments.extensions,
                                         credentials: credentialRenderer)
        let sink = try makeSink(compiled.delivery, previous: previous, devices: renderer.deviceCount, credentials: credentialKinds)
        observer.renderStarted(renderer)
        let result: BatchResult
        do {
            result = try renderer.run(into: sink, cancellation: cancellation, previous: previous,
                                         carryingUnchanged: carriesUnchanged(previous, compiled))
            observer.renderFinished()
            credentialRenderer?.expiryWarnings().forEach(observer.warning)
            // What was rendered from a mapped inventory or directory image that changed since is not published.
            if let change = fleet.inventory.change() ?? fleet.users?.change() { throw change }
        } catch {
            sink.discard()
            throw error
        }
        return RenderedGeneration(sink: sink, result: result)
    }

    /// Whether a `--changed-only` night carries unchanged devices from the previous manifest (their
    /// input digest is last night's: their output is too, and is not written); false renders every
    /// device: a whole night (it writes every device's bytes), `--rerender`, `--verify` (every
    /// output checked), DDM (a set names its assets, which a carried device would not make), or a
    /// previous generation made with other render settings.
    func carriesUnchanged(_ previous: Manifest?, _ compiled: CompiledJob) -> Bool {
        guard nightly.changedOnly, !nightly.rerender, !batch.verify, compiled.delivery.delivery != .ddm, let previous else { return false }
        return previous.header.first(where: { $0.name == "render" })?.value == renderSettings(compiled.delivery)
    }
}

/// What the fleet step read: the devices joined to their users, the sources as loaded (the
/// attributes the directory mapped), and what became of the directory's saved image.
struct LoadedFleet {
    let fleet: Fleet
    let sources: FleetSources
    let image: DirectoryImageUse
    let inventoryImage: InventoryImageUse
}

/// What the render step made: the sink holding tonight's files (not yet published) and each
/// device's digest, variant and entry in the previous manifest.
struct RenderedGeneration {
    let sink: DeviceSink
    let result: BatchResult
}
