import AppConfigBytes
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
    let job: RenderJob
    let program: Program
    let fleet: Fleet
    let result: BatchResult
    let previous: Manifest?
    let fingerprints: [(String, String)]
    let sink: OutputSink
    let changes: ChangeSet?
    let assignments: DeviceAssignments

    init(job: RenderJob, program: Program, fleet: Fleet, result: BatchResult, assignments: DeviceAssignments,
         previous: Manifest?, fingerprints: [(String, String)], sink: OutputSink) {
        self.assignments = assignments
        self.job = job
        self.program = program
        self.fleet = fleet
        self.result = result
        self.previous = previous
        self.fingerprints = fingerprints
        self.sink = sink
        changes = previous.map { ChangeSet(previous: $0, fleet: fleet, order: result.order, digests: result.digests) }
    }

    /// Hands `body` the entries and the device keys, as views read with no reference counting.
    /// Starting to read the keys ahead is `prefetchKeys`.
    private func withKeys<R>(_ entries: [Entry], _ body: (UnsafeBufferPointer<Entry>, InventoryTable.Column) -> R) -> R {
        let inventory = fleet.inventory
        return inventory.withColumn(inventory.deviceKeySlot) { keys in entries.withUnsafeBufferPointer { body($0, keys) } }
    }

    /// Starts reading the keys of the entries after `i`: 8 places ahead its range, 4 ahead its bytes.
    /// In key order the rows are scattered over the inventory: each key read was a cache and TLB
    /// miss, most of the time that made the index and the manifest.
    @inline(__always)
    private func prefetchKeys(after i: Int, in entries: UnsafeBufferPointer<Entry>, _ keys: InventoryTable.Column) {
        if i + 8 < entries.count { keys.prefetchRange(row: Int(entries[i + 8].row)) }
        if i + 4 < entries.count { keys.prefetchValue(row: Int(entries[i + 4].row)) }
    }

    private typealias Entry = (row: Int32, digest: SHA256Digest, carried: Bool, variant: UInt16)

    /// Why this run must not be published, or nil.
    func refusal(_ s: RunSummary) -> String? {
        if s.devices.rendered == 0 { return "no device rendered" }
        if let max = job.maxFailures, s.devices.failed > max { return "more than \(max) devices failed (--max-failures)" }
        let failedShare = s.devices.inShard == 0 ? 0 : Double(s.devices.failed) / Double(s.devices.inShard)
        if !job.force && failedShare > job.maxFailureRatio {
            return "\(s.devices.failed) of \(s.devices.inShard) devices failed (\(percent(failedShare)), more than --max-failure-ratio \(job.maxFailureRatio))"
        }
        if let changes, let previous, !job.force {
            let share = changes.counts.changeShare(previousCount: previous.count)
            if share > job.maxChangeRatio {
                return "\(changes.counts.changed) changed and \(changes.counts.removed) removed of \(previous.count) devices (\(percent(share)), "
                    + "more than --max-change-ratio \(job.maxChangeRatio): a wrong input? --force publishes it)"
            }
        }
        return nil
    }

    private func percent(_ x: Double) -> String { String(Int((x * 1000).rounded()) / 10) + "." + String(Int((x * 1000).rounded()) % 10) + "%" }

    /// `--changed-only`: what removes the configuration of each device gone since the previous generation.
    func writeRemovals() throws(Problem) {
        guard job.changedOnly, let changes else { return }
        for key in changes.removedKeys {
            try key.withUnsafeBufferPointer { k throws(Problem) in try sink.addRemoved(key: k) }
        }
    }

    /// `index.jsonl` (the devices this generation holds: device, path, SHA-256, and with
    /// assignments the names that applied) and the manifest of the whole fleet (the devices
    /// rendered, and those that failed tonight with their previous entry), both in device-key
    /// order, each made when the sink writes it, in rounds of lines made on every core.
    func closingFiles() -> [ClosingFile] {
        // In device-key order, as rendered: each device's digest, or for one that failed its previous one.
        var entries: [Entry] = []
        entries.reserveCapacity(result.order.count)
        // With each its variant, read here in order (by row, in key order, a cache miss per line).
        for (position, (row, digest)) in zip(result.order, result.digests).enumerated() {
            let variant = result.variants.isEmpty ? 0 : result.variants[position]
            if let digest {
                entries.append((row, digest, false, variant))
            } else if let previous = changes?.carried[position] {
                entries.append((row, previous, true, variant))
            }
        }
        var header: [(String, String)] = [("program", program.metadata.hashHex), ("format", job.batch.format.rawValue),
                                          ("delivery", job.delivery.delivery.rawValue), ("shard", job.batch.shard.description)]
        header += fingerprints
        let ending = sink.pathExtension
        let index = ClosingFile(name: "index.jsonl") { [self] emit throws(Problem) in
            try assignments.withIndexFields { fields throws(Problem) in
                try bytesInRounds(count: entries.count, make: { range, index in
                    // Room for lines longer than most (a line is ~110 bytes and its key twice, ~160
                    // at 1M): kept from round to round, room never written is never touched.
                    index.reserveCapacity(range.count * (256 + fields.maxCount))
                    withKeys(entries) { entries, keys in for i in range {
                        prefetchKeys(after: i, in: entries, keys)
                        let e = entries[i]
                        if e.carried || (job.changedOnly && changes?.changedRows.contains(e.row) == false) { continue }
                        Self.appendIndexLine(key: keys.value(row: Int(e.row)), extension: ending, digest: e.digest,
                                             fields: fields[Int(e.variant)], to: &index)
                    } }
                }, emit: emit)
            }
        }
        let manifest = ClosingFile(name: Manifest.fileName) { [self] emit throws(Problem) in
            try ClosingFile.emit(Manifest.headerText(header), to: emit)
            try bytesInRounds(count: entries.count, make: { range, lines in
                lines.reserveCapacity(range.count * 224)  // ~77 bytes and the key twice; see the index
                withKeys(entries) { entries, keys in for i in range {
                    prefetchKeys(after: i, in: entries, keys)
                    Manifest.appendLine(key: keys.value(row: Int(entries[i].row)), extension: ending, digest: entries[i].digest, to: &lines)
                } }
            }, emit: emit)
        }
        return [index, manifest]
    }
}

extension Generation {
    /// One `index.jsonl` line: `{"device":KEY,"path":PATH,"sha256":HEX` and the variant's fields.
    /// A key that is its own file name (most) needs no JSON escape either: its line is made on the
    /// stack and appended at once (piece by piece, ten appends a line).
    @inline(__always)
    static func appendIndexLine(key k: UnsafeBufferPointer<UInt8>, extension ending: StaticString, digest: SHA256Digest,
                                fields: UnsafeBufferPointer<UInt8>, to index: inout [UInt8]) {
        if OutputNames.isOwnName(k) {
            LineCursor.append(capacity: 128 + 2 * OutputNames.maxNameLength + ending.utf8CodeUnitCount + fields.count, to: &index) { line in
                line.write(#"{"device":""#)
                line.write(k)
                line.write(#"","path":""#)
                line.p += OutputNames.writeSafeRelativePath(k, hash: OutputNames.hash(k), extension: ending, to: line.p)
                line.write(#"","sha256":""#)
                digest.writeHex(to: line.p)
                line.p += 64
                line.write(UInt8(ascii: "\""))
                line.write(fields)
                line.write("}\n")
            }
            return
        }
        appendIndexLineByPieces(key: k, extension: ending, digest: digest, fields: fields, to: &index)
    }

    /// `appendIndexLine` piece by piece, for any key (the tests' reference too).
    static func appendIndexLineByPieces(key k: UnsafeBufferPointer<UInt8>, extension ending: StaticString, digest: SHA256Digest,
                                        fields: UnsafeBufferPointer<UInt8>, to index: inout [UInt8]) {
        JSONText.append(#"{"device":"#, to: &index)
        JSONText.appendString(k, to: &index)
        JSONText.append(#","path":""#, to: &index)
        OutputNames.appendRelativePath(k, extension: ending, to: &index)
        JSONText.append(#"","sha256":""#, to: &index)
        digest.appendHex(to: &index)
        index.append(UInt8(ascii: "\""))
        index.append(contentsOf: fields)
        JSONText.append("}\n", to: &index)
    }
}

/// The inputs' fingerprints (size and SHA-256), read on another thread while the job runs.
final class FingerprintTask: @unchecked Sendable {
    private let group = DispatchGroup()
    private var result: [(String, String)] = []

    init(job: RenderJob) {
        var files: [(String, String?)] = [("spec", job.spec), ("values", job.values), ("inventory", job.sources.inventory)]
        switch job.sources.directory {
        case .ldif(let path): files.append(("directory", path))
        case .ldap(let c): result.append(("directory", "ldap " + c.url))
        case nil: files.append(("directory", nil))
        }
        let fixed = result, inputs = files
        DispatchQueue.global().async(group: group) {
            self.result = fixed + inputs.map { ($0.0, $0.1.map(Fingerprint.of) ?? "-") }
        }
    }

    func wait() -> [(String, String)] {
        group.wait()
        return result
    }
}
