import AppConfigCore
import AppConfigOutput
import AppConfigCompiler
import AppConfigSources
import AppConfigSpec
import Digest
import Dispatch
import Foundation

/// What a finished render pass makes of its generation: the changes since the previous one, the
/// guards that hold a bad run back, the removals of `--changed-only`, and the closing files (the
/// index, the manifest of the whole fleet, written last).
struct Generation {
    /// The guards, `--changed-only` and `--remove-missing`: all of the job a generation needs.
    let policy: NightlyPolicy
    /// The manifest's header: program, format, delivery, shard, the inputs' and options' fingerprints.
    let header: [(String, String)]
    let program: Program
    let fleet: Fleet
    let result: BatchResult
    let previous: Manifest?
    let sink: DeviceSink
    let changes: ChangeSet?
    let assignments: DeviceAssignments
    /// The new manifest's devices, in key order (made once: the manifest, the index and the live
    /// assets read them).
    private let entries: [Entry]

    init(policy: NightlyPolicy, header: [(String, String)], program: Program, fleet: Fleet, result: BatchResult,
         assignments: DeviceAssignments, previous: Manifest?, sink: DeviceSink) {
        self.assignments = assignments
        self.policy = policy
        self.header = header
        self.program = program
        self.fleet = fleet
        self.result = result
        self.previous = previous
        self.sink = sink
        changes = previous.map { ChangeSet(previous: $0, fleet: fleet, order: result.order, digests: result.digests, matched: result.previousEntries,
                                           removeMissing: policy.removeMissing,
                                           removalExtension: sink.writesRemovalFiles ? sink.pathExtension : nil) }
        entries = Self.entries(order: result.order, variants: result.variants, rendered: { result.digests[$0] != nil },
                               carried: changes?.carried ?? [:], missing: changes?.missing ?? [])
    }

    /// Hands `body` the entries and the device keys, as views read with no reference counting.
    /// Starting to read the keys ahead is `prefetchKeys`.
    private func withKeys<R>(_ entries: [Entry], _ body: (BufferView<Entry>, InventoryTable.Column) -> R) -> R {
        let inventory = fleet.inventory
        return inventory.withColumn(inventory.deviceKeySlot) { keys in entries.withView { body($0, keys) } }
    }

    /// Starts reading the keys of the entries after `i`: 8 places ahead its range, 4 ahead its bytes.
    /// In key order the rows are scattered over the inventory: each key read was a cache and TLB
    /// miss, most of the time that made the index and the manifest.
    @inline(__always)
    private func prefetchKeys(after i: Int, in entries: BufferView<Entry>, _ keys: InventoryTable.Column) {
        // A device missing tonight (row -1) has no key in the inventory.
        if i + 8 < entries.count, entries[i + 8].row >= 0 { keys.prefetchRange(row: Int(entries[i + 8].row)) }
        if i + 4 < entries.count, entries[i + 4].row >= 0 { keys.prefetchValue(row: Int(entries[i + 4].row)) }
    }

    /// A device of the new manifest: rendered tonight (`source` its position in key order), or
    /// carried from the previous manifest (`source` its entry there): failed tonight, or missing
    /// from tonight's inputs (`row` -1).
    /// Its digests are read where they are (`digest(of:)`, `inputs(of:)`): copied into each entry
    /// they were half a gigabyte at 10M devices, beside the render's own.
    typealias Entry = (row: Int32, carried: Bool, variant: UInt16, source: Int32)

    /// An entry's output digest: tonight's at its position, or its previous manifest line's.
    @inline(__always)
    private func digest(of e: Entry) -> SHA256Digest { e.carried ? previous!.digest(at: Int(e.source)) : result.digests[Int(e.source)]! }

    /// An entry's path name, when tonight's render made it (a carried device's is made from its key).
    @inline(__always)
    private func name(of e: Entry) -> OutputNames.PathName? { e.carried ? nil : result.digests.name(at: Int(e.source)) }

    /// An entry's input digest, the same way.
    @inline(__always)
    private func inputs(of e: Entry) -> UInt64 {
        e.carried ? previous!.inputs(at: Int(e.source)) : result.inputDigests.isEmpty ? InputDigest.none : result.inputDigests[Int(e.source)]
    }

    /// The new manifest's devices in key order: tonight's, and the previous generation's that
    /// tonight failed or lacks (kept: removal is never implicit).
    /// `rendered`: whether the device at a position was (else it has an entry only if `carried`).
    static func entries(order: [Int32], variants: [UInt16], rendered: (Int) -> Bool, carried: [Int: Int],
                        missing: [(before: Int, previous: Int)], parts: Int = Parallelism.threads) -> [Entry] {
        let n = order.count
        // In parts on every core, each writing from where its entries would start if none before
        // it were dropped (a device that failed with nothing to carry), then moved down to where
        // the parts before it end: one core made 10M entries into fresh pages while the other
        // waited. A part has its positions and the devices missing before them (the last, those
        // after every position).
        let parts = max(1, min(parts, n))
        let befores = missing.map(\.before)
        let firstMissing = (0...parts).map { p in p == parts ? missing.count : befores.count(below: n * p / parts) }
        return [Entry](unsafeUninitializedCapacity: n + missing.count) { out, initialized in
            let out = WorkerSlots(out)
            var written = [Int](repeating: 0, count: parts)
            written.withWorkerSlots { written in
                forEachRange(n, parts: parts) { p, positions in
                    var (at, m) = (positions.lowerBound + firstMissing[p], firstMissing[p])
                    func missingOnes(before end: Int) {
                        while m < firstMissing[p + 1] && missing[m].before < end {
                            out[at] = (-1, true, 0, Int32(missing[m].previous))
                            (at, m) = (at + 1, m + 1)
                        }
                    }
                    // Read in order: by row, in key order, a cache miss per line.
                    for position in positions {
                        missingOnes(before: position + 1)
                        let row = order[position], variant = variants.isEmpty ? 0 : variants[position]
                        if rendered(position) {
                            out[at] = (row, false, variant, Int32(position))
                            at += 1
                        } else if let index = carried[position] {
                            out[at] = (row, true, variant, Int32(index))
                            at += 1
                        }
                    }
                    missingOnes(before: .max)
                    written[p] = at - positions.lowerBound - firstMissing[p]
                }
            }
            var end = written[0]
            for p in 1..<parts {
                out.move(from: n * p / parts + firstMissing[p], to: end, count: written[p])
                end += written[p]
            }
            initialized = end
        }
    }

    /// Why this run must not be published, or nil.
    func refusal(_ s: RunSummary) -> String? {
        if s.devices.rendered == 0 { return "no device rendered" }
        if let max = policy.maxFailures, s.devices.failed > max { return "more than \(max) devices failed (--max-failures)" }
        let failedShare = s.devices.inShard == 0 ? 0 : Double(s.devices.failed) / Double(s.devices.inShard)
        if !policy.force && failedShare > policy.maxFailureRatio {
            var reason = "\(s.devices.failed) of \(s.devices.inShard) devices failed (\(percent(failedShare)), more than --max-failure-ratio \(policy.maxFailureRatio))"
            if s.errorsByCode["device.missing-variable", default: 0] > 0 {
                reason += (s.devices.devicesWithoutUser > 0 ? "; \(s.devices.devicesWithoutUser) devices have no user" : "")
                    + "; --missing empty|omit renders devices whose variables are missing, --force publishes anyway"
            }
            return reason
        }
        if let changes, let previous, !policy.force, policy.removeMissing {
            let share = previous.count == 0 ? 0 : Double(changes.counts.removed) / Double(previous.count)
            if share > policy.maxRemovalRatio {
                return "\(changes.counts.removed) of \(previous.count) devices would lose the app (\(percent(share)), "
                    + "more than --max-removal-ratio \(policy.maxRemovalRatio): a wrong input? --force publishes it)"
            }
        }
        if let changes, let previous, !policy.force {
            let share = changes.counts.changeShare(previousCount: previous.count)
            if share > policy.maxChangeRatio {
                return "\(changes.counts.changed) changed and \(changes.counts.removed) removed of \(previous.count) devices (\(percent(share)), "
                    + "more than --max-change-ratio \(policy.maxChangeRatio): a wrong input? --force publishes it)"
            }
        }
        return nil
    }

    private func percent(_ x: Double) -> String { String(Int((x * 1000).rounded()) / 10) + "." + String(Int((x * 1000).rounded()) % 10) + "%" }

    /// `--remove-missing`: what removes the configuration of each device gone since the previous generation.
    func writeRemovals() throws(Problem) {
        guard policy.removeMissing, let changes else { return }
        for key in changes.removedKeys {
            try key.withView { k throws(Problem) in try sink.addRemoved(key: k) }
        }
    }

    /// A whole generation (not `--changed-only`) into a folder holds every device its manifest
    /// lists: the files of the devices carried from the previous generation (failed tonight, or
    /// missing from tonight's inputs) are hard-linked from it, as a DDM generation links its live
    /// assets. Without them a folder served as it is dropped a device whose user was missing for
    /// a night, although its manifest (and `--remove-missing`'s rule) kept it. Returns the entries
    /// linked (the index lists them) and how many could not be (the previous generation is not a
    /// folder, or lacks the file: it was `--changed-only`).
    func linkCarriedFiles(from previousGeneration: PublishedGeneration?) throws(Problem) -> (linked: Set<Int>, notLinked: Int) {
        guard !policy.changedOnly, sink.container.carriesFilesForward, let previous else { return ([], 0) }
        var linked = Set<Int>(), notLinked = 0
        let ending = sink.pathExtension
        for (i, e) in entries.enumerated() where e.carried {
            var path: [UInt8] = []
            if e.row >= 0 {
                withKeys(entries) { _, keys in OutputNames.appendRelativePath(keys.value(row: Int(e.row)), extension: ending, to: &path) }
            } else {
                previous.withKey(at: Int(e.source)) { OutputNames.appendRelativePath($0, extension: ending, to: &path) }
            }
            let relative = String(decoding: path, as: UTF8.self)
            if let previousGeneration, try sink.container.carry(relative, from: previousGeneration, secret: false) {
                linked.insert(i)
            } else {
                notLinked += 1
            }
        }
        return (linked, notLinked)
    }

    /// `index.jsonl` (the devices this generation holds: device, path, SHA-256, and with
    /// assignments the names that applied; `kept`: the entries carried whose files were linked)
    /// and the manifest of the whole fleet (the devices rendered, and those that failed tonight
    /// with their previous entry), both in device-key order, each made when the sink writes it,
    /// in rounds of lines made on every core.
    func closingFiles(liveFiles live: (any LiveFiles)? = nil, kept: Set<Int> = []) -> [ClosingFile] {
        let encoding = sink.encoding
        // The encoding whose manifest paths the lines name (DDM's assets), nil for own files'.
        let paths = encoding.namesManifestPaths ? encoding : nil
        let index = ClosingFile(name: "index.jsonl") { [self] emit throws(Problem) in
            // A night that writes only what changed lists only that; its lines far apart, keys
            // are read ahead only when most are listed (at 1M devices, reading every key ahead to
            // list 1% cost a 1% night 0.03 s of CPU).
            let changedRows = policy.changedOnly ? changes?.changedRows : nil
            let readsAhead = changedRows.map { $0.count * 2 >= entries.count } ?? true
            try assignments.withIndexFields { fields throws(Problem) in
                try bytesInRounds(count: entries.count, make: { range, index in
                    // Room for lines longer than most (a line is its key twice and some hundred
                    // bytes): kept from round to round, room never written is never touched.
                    index.reserveCapacity(range.count * (256 + fields.maxCount))
                    withKeys(entries) { entries, keys in for i in range {
                        if readsAhead { prefetchKeys(after: i, in: entries, keys) }
                        let e = entries[i]
                        if e.carried && !kept.contains(i) || changedRows?.contains(e.row) == false { continue }
                        if e.row < 0 {
                            // Missing tonight, its file kept: its key is the previous manifest's.
                            previous!.withKey(at: Int(e.source)) {
                                encoding.appendIndexLine(key: $0, name: nil, digest: digest(of: e), fields: fields[0], to: &index)
                            }
                            continue
                        }
                        encoding.appendIndexLine(key: keys.value(row: Int(e.row)), name: name(of: e), digest: digest(of: e),
                                                 fields: fields[Int(e.variant)], to: &index)
                    } }
                }, emit: emit)
            }
            try emitRemovals(to: emit)
        }
        let manifest = ClosingFile(name: OutputNames.manifestFile) { [self] write throws(Problem) in
            try ClosingFile.emit(Manifest.headerText(header), to: write)
            // The device lines, hashed as they go: the trailer's check (`Manifest.trailer`).
            let hasher = Manifest.LinesCheck()
            let emit: ClosingFile.Emit = { piece throws(Problem) in
                hasher.update(piece)
                try write(piece)
            }
            let copies = paths == nil ? linesToCopy : nil
            try bytesInRounds(count: entries.count, make: { range, lines in
                lines.reserveCapacity(range.count * 224)  // ~77 bytes and the key twice; see the index
                withKeys(entries) { entries, keys in
                    // Entries `run` have the previous manifest's lines from `runFrom` on: copied at once.
                    var run = range.lowerBound..<range.lowerBound, runFrom = 0
                    for i in range {
                        let e = entries[i]
                        if let copies {
                            let p = sameLine(e)
                            if p >= 0 && !run.isEmpty && p == runFrom + run.count {
                                run = run.lowerBound..<(i + 1)
                                continue
                            }
                            copyLines(copies, run, from: runFrom, entries, keys, to: &lines)
                            (run, runFrom) = p >= 0 ? (i..<(i + 1), p) : (i..<i, 0)
                            if p >= 0 { continue }
                        }
                        if e.row >= 0 { prefetchKeys(after: i, in: entries, keys) }
                        appendManifestLine(e, keys, paths: paths, to: &lines)
                    }
                    if let copies { copyLines(copies, run, from: runFrom, entries, keys, to: &lines) }
                }
            }, emit: emit)
            // Lines copied from a file written to since could be anything: nothing is published.
            if let copies, !copies.unchanged {
                throw Problem(InputCode.changed, at: Location(file: copies.path),
                              "\(copies.path) changed while its lines were copied into tonight's manifest: nothing is published")
            }
            try ClosingFile.emit(Manifest.trailer(count: entries.count, check: hasher.finish()), to: write)
        }
        // An encoding that writes its own index (a DDM set per line) has it among its line files,
        // or makes it here with its declarations.
        if let ddm = encoding as? DDMEncoding, let records = ddm.records {
            return declarationLines(ddm, records) + (live.map { [$0.closingFile()] } ?? []) + [manifest]
        }
        let ownIndex = encoding.lineFiles.contains(.index)
        return (ownIndex ? [] : [index]) + (live.map { [$0.closingFile()] } ?? []) + [manifest]
    }

    /// The removals written (`--remove-missing`), after the devices: each with its path. (An
    /// encoding that writes its own index as devices come lists its removals there.)
    private func emitRemovals(to emit: ClosingFile.Emit) throws(Problem) {
        guard let removed = changes?.removedKeys, !removed.isEmpty else { return }
        var lines: [UInt8] = []
        for key in removed { key.withView { lines += sink.encoding.removal(of: $0).indexLine ?? [] } }
        try ClosingFile.emit(lines, to: emit)
    }

    /// DDM's `declarations.jsonl` and `index.jsonl`, made from what was kept of each device written
    /// tonight (`DeclarationRecords`), in rounds of lines made on every core, written once where
    /// they go: the same bytes as lines written as devices came (the status subscription first,
    /// then per device in key order its asset's declaration when it brought that data first, its
    /// configuration and activation; its set; the removals last).
    private func declarationLines(_ ddm: DDMEncoding, _ records: DeclarationRecords) -> [ClosingFile] {
        let declarations = ClosingFile(name: LineKind.declarations.fileName) { [self] emit throws(Problem) in
            try records.markFirstOfAsset(sink.takeFirstShared(), output: LineKind.declarations.fileName)
            if let status = ddm.statusLine { try ClosingFile.emit(status, to: emit) }
            try bytesInRounds(count: entries.count, make: { range, out in
                out.reserveCapacity(range.count * 1_280)
                guard var lines = ddm.closingLines else { return }
                entries.withView { entries in
                    for i in range {
                        let e = entries[i]
                        guard !e.carried, lines.written(Int(e.source)) else { continue }
                        lines.appendDeclarations(position: Int(e.source), variant: Int(e.variant), to: &out)
                    }
                }
            }, emit: emit)
        }
        let sets = ClosingFile(name: LineKind.index.fileName) { [self] emit throws(Problem) in
            try assignments.withIndexFields { fields throws(Problem) in
                try bytesInRounds(count: entries.count, make: { range, out in
                    out.reserveCapacity(range.count * (384 + fields.maxCount))
                    guard var lines = ddm.closingLines else { return }
                    withKeys(entries) { entries, keys in
                        for i in range {
                            prefetchKeys(after: i, in: entries, keys)
                            let e = entries[i], p = Int(e.source)
                            guard !e.carried, lines.written(p) else { continue }
                            lines.appendSet(position: p, key: keys.value(row: Int(e.row)), digest: result.digests[p]!, variant: Int(e.variant),
                                            fields: fields[Int(e.variant)], to: &out)
                        }
                    }
                }, emit: emit)
            }
            try emitRemovals(to: emit)
        }
        return [declarations, sets]
    }

    /// The previous manifest's lines, to copy those of devices whose lines are the same
    /// (`sameLine`): when its lines are made as tonight's are, with the same render settings (so
    /// the same paths), and its file is as it was read.
    private var linesToCopy: ManifestLines? {
        guard let previous, let lines = previous.lines, lines.unchanged,
              let render = header.first(where: { $0.0 == "render" })?.1,
              previous.header.first(where: { $0.name == "render" })?.value == render else { return nil }
        return lines
    }

    /// The entry of the previous manifest whose line is entry `e`'s byte for byte, or -1: a device
    /// carried (failed or missing tonight), or one with its key, output and input digests as then.
    @inline(__always)
    private func sameLine(_ e: Entry) -> Int {
        if e.carried { return Int(e.source) }
        let position = Int(e.source)
        guard !result.previousEntries.isEmpty, case let p = Int(result.previousEntries[position]), p >= 0,
              result.digests[position] == previous!.digest(at: p), inputs(of: e) == previous!.inputs(at: p) else { return -1 }
        return p
    }

    /// Entry `e`'s manifest line, made: its key (tonight's, or the previous one of a device missing
    /// tonight), its path (DDM: the assets its set names, tonight's or a carried device's previous
    /// ones) and digests.
    private func appendManifestLine(_ e: Entry, _ keys: InventoryTable.Column, paths: (any DeviceEncoding)?, to lines: inout [UInt8]) {
        func append(_ key: ByteView) {
            guard let paths else {
                return Manifest.appendLine(key: key, name: name(of: e), extension: sink.pathExtension, digest: digest(of: e), inputs: inputs(of: e), to: &lines)
            }
            if e.carried {
                Manifest.appendLine(key: key, path: previous!.path(at: Int(e.source)), digest: digest(of: e), inputs: inputs(of: e), to: &lines)
            } else {
                Manifest.appendLine(key: key, digest: digest(of: e), inputs: inputs(of: e), to: &lines) {
                    paths.appendManifestPath(position: Int(e.source), to: &$0)
                }
            }
        }
        if e.row < 0 { previous!.withKey(at: Int(e.source), append) } else { append(keys.value(row: Int(e.row))) }
    }

    /// Appends the previous manifest's lines from `first` on for entries `run` (the same devices),
    /// or when they cannot be read, makes theirs.
    private func copyLines(_ copies: ManifestLines, _ run: Range<Int>, from first: Int, _ entries: BufferView<Entry>,
                           _ keys: InventoryTable.Column, to lines: inout [UInt8]) {
        guard !run.isEmpty, !copies.append(lines: first..<(first + run.count), to: &lines) else { return }
        for i in run { appendManifestLine(entries[i], keys, paths: nil, to: &lines) }
    }

    /// The shared files the live devices name (tonight's and those carried from the previous
    /// generation; DDM: its assets), once each: what an asset store must keep serving. Nil for an
    /// encoding that shares none, or an output that writes nothing.
    func liveFiles() -> (any LiveFiles)? {
        guard sink.container.writesFiles else { return nil }
        let rendered = entries.reduce(0) { $0 + ($1.carried ? 0 : 1) }
        return sink.encoding.liveFiles(reserving: rendered) { visit in
            for e in entries { visit(e.carried ? .carried(previous!.path(at: Int(e.source))) : .rendered(Int(e.source))) }
        }
    }
}
