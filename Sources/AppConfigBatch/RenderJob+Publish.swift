import AppConfigCore
import AppConfigOutput
import AppConfigCompiler
import AppConfigRender
import AppConfigSources
import AppConfigSpec
import Digest
import Foundation

extension RenderJob {
    /// The sink for `output` and the delivery: the container (creating it makes the new
    /// generation folder or the temporary tar file) with the delivery's encoding.
    func makeSink(_ delivery: ResolvedDelivery, previous: Manifest? = nil, devices: Int = 0,
                  credentials: DDMEncoding.CredentialKinds = ([[]], [])) throws(Problem) -> DeviceSink {
        let encoding = Self.encoding(for: delivery, devices: devices, credentials: credentials, closesLines: output.writesClosingFilesAsMade)
        let container = try output.open(holdsSecrets: encoding.holdsSecrets, keep: keepGenerations)
        return try DeviceSink(container: container, encoding: encoding, previous: previous, changedOnly: nightly.changedOnly, devices: devices)
    }

    /// The sink for `output` and the delivery, for an embedder that runs the phases itself
    /// (`BatchRenderer.run(into:)`, then `publish(closing:)` or `discard()`).
    package func makeSink(_ delivery: ResolvedDelivery, devices: Int) throws(Problem) -> DeviceSink {
        try makeSink(delivery, previous: nil, devices: devices, credentials: ([[]], []))
    }

    /// What each device's files are, for the delivery.
    /// `closesLines`: the output writes a closing file as it is made (`DDMEncoding`'s lines are then made at the close).
    static func encoding(for delivery: ResolvedDelivery, devices: Int = 0, credentials: DDMEncoding.CredentialKinds = ([[]], []),
                         closesLines: Bool = false) -> any DeviceEncoding {
        switch delivery.delivery {
        case .plist: PlistEncoding()
        case .mdmSettings: MDMCommand(kind: .settings, delivery: delivery)
        case .mdmInstall: MDMCommand(kind: .install, delivery: delivery)
        case .ddm: DDMEncoding(delivery: delivery, devices: devices, credentials: credentials, closesLines: closesLines)
        }
    }

    /// The counts of a finished render pass.
    func summarize(program: Program, fleet: Fleet, result: BatchResult, assignments: DeviceAssignments) -> RunSummary {
        var s = RunSummary(spec: spec, bundleId: program.metadata.bundleId, version: program.metadata.version,
                           programHash: program.metadata.hashHex, format: batch.format.rawValue, shard: batch.shard.description)
        // A shard accounts for its own devices: the join's problems of other shards' rows are theirs.
        // A device the values file's `exclude` leaves out has no problem of its user: nothing is rendered for it.
        let excluded = Set(assignments.excludedRows.map(Int.init))
        let joinProblems = fleet.problems.filter { p in
            guard let row = p.location.row else { return true }
            if excluded.contains(row) { return false }
            return batch.shard.count == 1 || batch.shard.contains(hash: OutputNames.hash(fleet.inventory.value(row: row, slot: fleet.inventory.deviceKeySlot)))
        }
        s.problems = fleet.inventory.exportChecks + fleet.inventory.problems + (fleet.users?.problems ?? []) + joinProblems
        s.failures = result.failures
        s.devices.inventoryRows = fleet.inventory.dataRows
        s.devices.continuationRows = fleet.inventory.continuationRows
        s.devices.inventoryDevices = fleet.inventory.rowCount
        s.devices.inShard = result.devicesInShard
        s.devices.rendered = result.rendered
        s.devices.carried = result.carried
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
    func publish(_ sink: DeviceSink, _ generation: Generation, _ summary: inout RunSummary, diff: [UInt8]? = nil) throws(Problem) {
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
        if nightly.changedOnly, let counts = generation.changes?.counts, counts.added + counts.changed + counts.removed + counts.missing + counts.rekeyed == 0, output != .dryRun {
            summary.nothingChanged = true
            sink.discard()
            return
        }
        do {
            try generation.writeRemovals()
            let written = try sink.takeSharedWritten()
            let live = generation.liveFiles()
            if let live { summary.assetsNotLinked = try sink.carry(live, written: written, from: previousGeneration) }
            let kept = try generation.linkCarriedFiles(from: previousGeneration)
            summary.keptNotLinked = kept.notLinked
            // The report goes first, as the run will be once published: a full disk found here
            // publishes nothing (exit 1 means nothing was published), not the output then exit 1.
            if let report, output != .dryRun {
                var ahead = summary
                ahead.published = true
                ahead.output = outputPath ?? "-"
                var account = RunReport(summary: ahead, redact: redact, changes: generation.changes?.lines)
                account.diff = diff
                try account.write(to: report)
            }
            let path = try sink.publish(closing: generation.closingFiles(liveFiles: live, kept: kept.linked))
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
