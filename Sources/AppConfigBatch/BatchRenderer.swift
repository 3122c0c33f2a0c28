import AppConfigCore
import AppConfigOutput
import AppConfigCompiler
import AppConfigRender
import AppConfigSources
import Digest
import Dispatch
import Foundation
import Synchronization

/// The fleet's hot loop: devices in chunks across `jobs` threads, one Renderer and one slot buffer
/// per thread, each plist handed to the sink straight from the renderer's buffer. Memory stays
/// bounded: a folder sink writes each plist as it is made, a tar sink writes each chunk as soon as
/// the chunks before it are written.
public final class BatchRenderer: @unchecked Sendable {
    /// The program of devices that match no assignment.
    public let program: Program
    public let fleet: Fleet
    public let options: BatchOptions
    /// Each device's variant (its set of assignments), and per variant its program, image and slot plan.
    package let assignments: DeviceAssignments
    let images: [ProgramImage]
    let plans: [Fleet.SlotPlan]
    /// The rows of this shard, in inventory order.
    let rows: [Int32]
    /// Devices done so far (rendered or failed), for a progress display.
    public let progress = Atomic<Int>(0)
    /// App extensions' configurations (DDM `--extension`), each rendered for every device after
    /// the app's, named in failures by their composed identifier.
    let extensions: [(id: String, renderer: BatchRenderer)]
    /// Each device's credential documents (DDM with `credentials` in the values file).
    let credentials: CredentialRenderer?
    static let chunkSize = 512

    public convenience init(program: Program, fleet: Fleet, options: BatchOptions) throws(Problem) {
        try self.init(assignments: DeviceAssignments(base: program), fleet: fleet, options: options)
    }

    package convenience init(assignments: DeviceAssignments, fleet: Fleet, options: BatchOptions) throws(Problem) {
        try self.init(assignments: assignments, fleet: fleet, options: options, extensions: [])
    }

    /// `extensions`: each app extension's composed identifier and configuration, rendered for every
    /// device too (a device fails when any of them does).
    init(assignments: DeviceAssignments, fleet: Fleet, options: BatchOptions,
         extensions: [(id: String, assignments: DeviceAssignments)] = [], credentials: CredentialRenderer? = nil) throws(Problem) {
        self.credentials = credentials
        var children: [(String, BatchRenderer)] = []
        for e in extensions { children.append((e.id, try BatchRenderer(assignments: e.assignments, fleet: fleet, options: options))) }
        self.extensions = children
        self.assignments = assignments
        program = assignments.programs[0]
        self.fleet = fleet
        self.options = options
        images = assignments.programs.map(ProgramImage.init)
        var plans: [Fleet.SlotPlan] = []
        for p in assignments.programs { plans.append(try fleet.plan(for: p.slots)) }
        self.plans = plans
        let inventory = fleet.inventory
        var rows: [Int32] = []
        rows.reserveCapacity(inventory.rowCount / options.shard.count + 1)
        // The whole fleet needs no hash per device.
        for row in 0..<inventory.rowCount
        where options.shard.count == 1 || options.shard.contains(hash: OutputNames.hash(inventory.value(row: row, slot: inventory.deviceKeySlot))) {
            rows.append(Int32(row))
        }
        // The devices the values file's `exclude` leaves out (both lists in row order).
        if !assignments.excludedRows.isEmpty {
            var excluded = assignments.excludedRows[...]
            rows.removeAll { row in
                while let first = excluded.first, first < row { excluded.removeFirst() }
                return excluded.first == row
            }
        }
        self.rows = rows
    }

    /// The devices of this shard.
    public var deviceCount: Int { rows.count }

    /// Whether each device's inputs are digested (`InputDigest`): not when extensions or
    /// credentials render from more than the app's program reads.
    var digestsInputs: Bool { extensions.isEmpty && credentials == nil }

    /// Renders the shard's devices into `sink`. A sink error stops every worker and is thrown; the
    /// sink is neither published nor discarded here (the job decides). `previous`: the one manifest
    /// a night compares with (the sink's `--changed-only` filter's too, when it has one): each
    /// device's entry in it is found by one merge in key order (`BatchResult.previousEntries`), and
    /// then its keys are let go but for the entries no device of tonight's has
    /// (`Manifest.releaseKeys(matchedBy:)`: the others' are tonight's keys, in the inventory; at 10M
    /// devices they were a quarter of a gigabyte held to the end). `carryingUnchanged`: devices with
    /// tonight's input digest there are not rendered, their output digest taken from it (a
    /// `--changed-only` night made with this run's render settings, which does not write them).
    package func run(into sink: DeviceSink, cancellation: Cancellation = Cancellation(), previous: Manifest? = nil,
                     carryingUnchanged: Bool = false) throws(Problem) -> BatchResult {
        let start = monotonicSeconds()
        // Key order for every sink: archives need it, and the index and manifest are in it.
        let rows = rowsInKeyOrder()
        let variants = assignments.variants(ofRows: rows)
        let digests = DigestSlots(count: rows.count)
        let digestsInputs = self.digestsInputs
        var inputDigests = digestsInputs ? [UInt64](repeating: InputDigest.none, count: rows.count, parts: options.jobs) : []
        let carry = digestsInputs && carryingUnchanged ? previous : nil
        precondition(sink.changedOnlyManifest.map { $0 === previous } ?? true, "one previous manifest a night: the sink compares with it")
        // Each device's entry in last night's manifest, found by one merge in key order.
        let keySlot = fleet.inventory.deviceKeySlot
        // The keys read through views: a closure over the fleet and the rows retained and released them per device.
        let previousEntries = previous.map { m in
            fleet.inventory.withColumn(keySlot) { keys in rows.withView { rows in
                m.entryIndices(count: rows.count, key: { keys.value(row: Int(rows[$0])) }) { i, step in
                    if step == 0 { keys.prefetchRange(row: Int(rows[i])) } else { keys.prefetchValue(row: Int(rows[i])) }
                }
            } }
        } ?? []
        previous?.releaseKeys(matchedBy: previousEntries)
        let chunks = (rows.count + Self.chunkSize - 1) / Self.chunkSize
        let next = Atomic<Int>(0)
        let jobs = max(1, min(options.jobs, chunks))
        let workers = (0..<jobs).map { _ in Worker(images: images, plans: plans, options: options) }
        // Each extension's variants and workers: a worker of its own renders into buffers of its
        // own, so the app's plist stays valid while the extensions' are made.
        let extensionVariants = extensions.map { $0.renderer.assignments.variants(ofRows: rows) }
        let extensionWorkers = (0..<jobs).map { _ in extensions.map { Worker(images: $0.renderer.images, plans: $0.renderer.plans, options: options) } }
        let firstError = Mutex<Problem?>(nil)
        // A night that carries devices: every device's input digest first, in row order.
        let rowDigests = carry == nil ? [] : inputDigestsInRowOrder(workers: workers)
        // Each position is written by the worker of its chunk. The device keys read through a
        // column: through `fleet.inventory`, each device's key retained and released the table.
        fleet.inventory.withColumn(keySlot) { keys in
        inputDigests.withWorkerSlots { inputs in
        rowDigests.withView { rowDigests in
        assignments.withIndexFields { indexFields in Parallelism.concurrentPerform(iterations: jobs) { w in
            let worker = workers[w]
            while !cancellation.isCancelled {
                let chunk = next.add(1, ordering: .relaxed).oldValue
                guard chunk < chunks else { break }
                let slice = rows[(chunk * Self.chunkSize)..<min((chunk + 1) * Self.chunkSize, rows.count)]
                do throws(Problem) {
                    for (position, row) in zip(slice.indices, slice) {
                        let variant = variants.isEmpty ? 0 : Int(variants[position])
                        if rowDigests.isEmpty {
                            prefetch(ahead: position, rows: rows, variants: variants, plans: worker.plans)
                        } else if position + 8 < rows.count {
                            rowDigests.prefetch(at: Int(rows[position + 8]))
                        }
                        let device = DevicePlace(row: Int(row), position: position, variant: variant,
                                                 previousEntry: previousEntries.isEmpty ? -1 : previousEntries[position])
                        if digestsInputs {
                            let digest = rowDigests.isEmpty ? inputDigest(device, worker: worker) : rowDigests[device.row]
                            inputs[position] = digest
                            // Last night's inputs: last night's output, which this night does not write.
                            if let carry, device.previousEntry >= 0, carry.inputs(at: Int(device.previousEntry)) == digest {
                                digests.set(position, carry.digest(at: Int(device.previousEntry)))
                                worker.rendered += 1
                                worker.carried += 1
                                continue
                            }
                        }
                        try render(device, key: keys.value(row: device.row), worker: worker, extensionPass: (extensionWorkers[w], extensionVariants),
                                   indexFields: indexFields[variant], slotsFilled: digestsInputs && rowDigests.isEmpty, into: sink, digests: digests)
                    }
                    try sink.finish(chunk: chunk, &worker.chunk, digests: digests)
                } catch {
                    firstError.withLock { if $0 == nil { $0 = error } }
                    cancellation.cancel()
                    // The chunk this worker held never comes: workers waiting on the writer return.
                    sink.abandonChunks()
                    break
                }
                progress.add(slice.count, ordering: .relaxed)
            }
        } }
        }
        }
        }
        if let error = firstError.withLock({ $0 }) { throw error }
        // Writing overlaps rendering: the pass ends when the writer has written the last chunk.
        try sink.closeChunks()
        var result = BatchResult(devicesInShard: rows.count)
        for w in workers {
            result.rendered += w.rendered
            result.carried += w.carried
            result.failures += w.failures
        }
        result.inputDigests = inputDigests
        result.failures.sort { $0.row < $1.row }
        result.order = rows
        result.previousEntries = previousEntries
        result.digests = digests
        result.variants = variants
        result.seconds = monotonicSeconds() - start
        result.interrupted = cancellation.isCancelled
        return result
    }

    /// Each device's input digest (`InputDigest`) by row, made in row order across `workers`: a
    /// night that carries most devices reads the inventory in its own order (in key order its rows
    /// are scattered, each value a cache miss), then in key order renders only the devices whose
    /// digest is not last night's.
    private func inputDigestsInRowOrder(workers: [Worker]) -> [UInt64] {
        let variants = assignments.variants(ofRows: rows)
        var digests = [UInt64](repeating: InputDigest.none, count: fleet.inventory.rowCount, parts: workers.count)
        digests.withWorkerSlots { digests in
            forEachRange(rows.count, parts: workers.count, parallelFrom: 4096) { part, range in
                let worker = workers[part]
                for k in range {
                    // Users are where the directory put them: read ahead as the render does.
                    prefetch(ahead: k, rows: rows, variants: variants, plans: worker.plans)
                    let device = DevicePlace(row: Int(rows[k]), position: k, variant: variants.isEmpty ? 0 : Int(variants[k]), previousEntry: -1)
                    digests[device.row] = inputDigest(device, worker: worker)
                }
            }
        }
        return digests
    }

    /// Starts the reads of the devices a few positions after `position` (`Fleet.prefetch`): 12
    /// ahead their ranges, 8 ahead their values, 4 ahead their users' values.
    @inline(__always)
    private func prefetch(ahead position: Int, rows: [Int32], variants: [UInt16], plans: [Fleet.SlotPlan.Sources]) {
        func step(_ step: Int, _ distance: Int) {
            let p = position + distance
            guard p < rows.count else { return }
            fleet.prefetch(row: Int(rows[p]), plan: plans[variants.isEmpty ? 0 : Int(variants[p])], step: step)
        }
        step(0, 12)
        step(1, 8)
        step(2, 4)
    }

    /// A device of the pass: its inventory row, its place in key order, its variant.
    struct DevicePlace {
        var row: Int
        var position: Int
        var variant: Int
        /// In the manifest the sink compares with (`--changed-only`), or -1.
        var previousEntry: Int32
    }

    /// The device's slots filled from the fleet, and the digest of what they hold with its
    /// variant's program (`InputDigest`). The slots stay filled for `render(slotsFilled: true)`.
    @inline(__always)
    func inputDigest(_ device: DevicePlace, worker: Worker) -> UInt64 {
        fillSlots(row: device.row, variant: device.variant, worker: worker)
        return InputDigest.of(programHash: worker.programHashes[device.variant],
                              slots: worker.slots.view(prefix: worker.slotCounts[device.variant]))
    }

    /// Renders one row, whose device key is `key`, into the sink (which sets its output's digest
    /// in `digests`), or records its failure.
    /// `slotsFilled`: the worker's slots already hold the device's values (`inputDigest`).
    @inline(__always)
    func render(_ device: DevicePlace, key: ByteView, worker: Worker, extensionPass: (workers: [Worker], variants: [[UInt16]]),
                indexFields: ByteView, slotsFilled: Bool = false, into sink: DeviceSink, digests: DigestSlots) throws(Problem) {
        let row = device.row
        var problems: [Problem] = []
        guard let bytes = renderPlist(row: row, variant: device.variant, worker: worker, slotsFilled: slotsFilled, problems: &problems) else {
            worker.failures.append(DeviceFailure(row: row, problems: problems))
            return
        }
        if extensions.isEmpty && credentials == nil {
            var rendered = RenderedDevice(key: key, plist: bytes, indexFields: indexFields, position: device.position)
            rendered.previousEntry = device.previousEntry
            try sink.add(rendered, to: &worker.chunk, digests: digests)
            worker.rendered += 1
            return
        }
        if worker.extensionPlists.count != extensions.count { worker.extensionPlists = Array(repeating: .empty, count: extensions.count) }
        for (i, e) in extensions.enumerated() {
            let variants = extensionPass.variants[i]
            var own: [Problem] = []
            if let b = e.renderer.renderPlist(row: row, variant: variants.isEmpty ? 0 : Int(variants[device.position]),
                                              worker: extensionPass.workers[i], problems: &own) {
                worker.extensionPlists[i] = b
            } else {
                worker.extensionPlists[i] = .empty
                problems += own.map { p in
                    var p = p
                    p.message = "extension \(e.id): " + p.message
                    return p
                }
            }
        }
        var documents = credentials?.render(row: row, variant: device.variant, problems: &problems) ?? []
        // A secret's bytes are cleared once written, whatever happens.
        defer { for i in documents.indices { documents[i].document.overwriteWithZeros() } }
        guard problems.isEmpty else {
            worker.failures.append(DeviceFailure(row: row, problems: problems))
            return
        }
        try documents.withView { docs throws(Problem) in try worker.extensionPlists.withView { plists throws(Problem) in
            var rendered = RenderedDevice(key: key, plist: bytes, extensions: plists, indexFields: indexFields, position: device.position)
            rendered.credentials = docs
            rendered.variant = device.variant
            rendered.previousEntry = device.previousEntry
            try sink.add(rendered, to: &worker.chunk, digests: digests)
        } }
        worker.rendered += 1
    }

    /// The worker's slots filled with the device's values for its variant's program.
    @inline(__always)
    func fillSlots(row: Int, variant: Int, worker: Worker) {
        fleet.forEachValue(row: row, plan: worker.plans[variant]) { slot, bytes in
            worker.slots[slot] = SlotValue(bytes)
        }
    }

    /// One device's plist from this renderer's program for its variant, valid until the worker
    /// renders again; nil with its problems added to `problems`.
    @inline(__always)
    func renderPlist(row: Int, variant: Int, worker: Worker, slotsFilled: Bool = false, problems: inout [Problem]) -> ByteView? {
        if !slotsFilled { fillSlots(row: row, variant: variant, worker: worker) }
        let view = worker.slots.view(prefix: worker.slotCounts[variant])
        let renderer = worker.renderer(variant)
        let bytes: ByteView
        do {
            bytes = try renderer.render(view) { [fleet] v in fleet.source(of: v, row: row) }
        } catch {
            problems += renderer.deviceProblems.map { withoutUser(placed($0, row: row), row: row) }
            return nil
        }
        if let verifier = worker.verifier(variant), let mismatch = verifier.check(bytes, slots: view) {
            problems.append(placed(mismatch, row: row))
            return nil
        }
        if let max = options.maxOutputBytes, bytes.count > max {
            problems.append(placed(Problem(.assetTooLarge, at: Location(),
                                           "the configuration is \(bytes.count) bytes, more than the \(max) bytes Apple allows app config data (a DDM data asset)"),
                                   row: row))
            return nil
        }
        return bytes
    }

    /// A user variable missing on a device that has no user (its user key empty: a shared iPad, a
    /// kiosk) says so: "missing for this device" alone sent admins looking in the directory.
    private func withoutUser(_ problem: Problem, row: Int) -> Problem {
        guard problem.code == DeviceCode.missingVariable, case .user? = problem.variable, let slot = fleet.inventory.userKeySlot,
              fleet.inventory.value(row: row, slot: slot).isEmpty else { return problem }
        var p = problem
        let column = fleet.inventory.header[fleet.inventory.keptColumns[slot]]
        p.message += " (the device has no user: its \"\(column)\" is empty)"
        return p
    }

    /// A device's problem placed at its row (file, line, device) where the renderer did not say
    /// where its value came from; the key and any DN are kept.
    private func placed(_ problem: Problem, row: Int) -> Problem {
        guard problem.location.device == nil else { return problem }
        var p = problem
        var location = fleet.inventory.location(of: row)
        location.key = p.location.key
        location.dn = p.location.dn
        p.location = location
        return p
    }
}
