import AppConfigCore
import AppConfigOutput
import AppConfigSources
import Digest

/// How many devices were added, changed, removed or left unchanged since a previous generation.
public struct ChangeCounts: Sendable, Codable, Equatable {
    public var added = 0
    public var changed = 0
    /// Gone from tonight's inputs and given their removal (`--remove-missing`): they lose the app.
    public var removed = 0
    public var unchanged = 0
    /// Gone from tonight's inputs without `--remove-missing`: they keep their last configuration,
    /// and their entries are carried into the new manifest.
    public var missing = 0
    /// A device whose key changed only in ASCII case since (an export that re-cased a serial): the
    /// same device, written under its new key; never a removal and an addition.
    public var rekeyed = 0

    /// The share of the previous generation's devices that changed or went (the guard's measure).
    public func changeShare(previousCount: Int) -> Double {
        previousCount == 0 ? 0 : Double(changed + removed + rekeyed) / Double(previousCount)
    }
}

/// Tonight's fleet against a previous manifest: each device's kind of change, in device-key order
/// (`changes.jsonl`), the counts, and the devices gone. A device that failed tonight is neither: it
/// keeps its previous entry in the new manifest and is reported as failed. A device gone from
/// tonight's inputs is `missing` and keeps its previous entry too (removal is never implicit: on a
/// device, a removed set removes the app and its data), unless `removeMissing`, when it is
/// `removed`. Both sides must be in device-key order (`Manifest.isSorted`; manifests are written so).
struct ChangeSet {
    var counts = ChangeCounts()
    /// `{"device":KEY,"change":"added"|"changed"|"removed"|"missing"}` lines, in device-key order.
    var lines: [UInt8] = []
    var removedKeys: [[UInt8]] = []
    /// Devices written tonight (added or changed), by row: what `--changed-only` writes.
    var changedRows: RowFlags
    /// Devices that failed tonight, by position in key order: their previous entry (its place in
    /// the previous manifest), carried into the new manifest.
    var carried: [Int: Int] = [:]
    /// Devices missing tonight: their previous entries, each with the position in tonight's key
    /// order it comes before (the new manifest holds them in key order).
    var missing: [(before: Int, previous: Int)] = []

    /// `order` is the shard's rows in device-key order and `digests` their outputs' digests (nil:
    /// failed). `matched`: by position, the device's entry in the previous manifest or -1
    /// (`BatchResult.previousEntries`; empty: found here). Both lists are in key order, so they
    /// are walked together once; only the keys of the entries no device matched are read (the
    /// manifest may have let the others go).
    /// `removalExtension`: the ending of the removal file written for each removed device (nil:
    /// none is written), named on its `changes.jsonl` line as `path`.
    init(previous: Manifest, fleet: Fleet, order: [Int32], digests: DigestSlots, matched: [Int32] = [], removeMissing: Bool = false,
         removalExtension: StaticString? = nil) {
        let inventory = fleet.inventory
        changedRows = RowFlags(rows: inventory.rowCount)
        func key(_ row: Int32) -> ByteView { inventory.value(row: Int(row), slot: inventory.deviceKeySlot) }
        let matched = matched.isEmpty && !order.isEmpty ? previous.entryIndices(count: order.count) { key(order[$0]) } : matched
        var entries: [Entry] = []
        func note(_ k: ByteView, _ kind: Entry.Kind, missing: (before: Int, previous: Int)? = nil) {
            entries.append(Entry(key: Array(k), kind: kind, missing: missing))
        }
        /// Tonight's device at position `i`, which the previous generation lacks.
        func added(_ i: Int) {
            if digests[i] != nil { note(key(order[i]), .added); changedRows.insert(order[i]) }
        }
        var i = 0
        // The next position matched to an entry (every entry before its entry is walked first).
        var next = 0
        while next < order.count && matched[next] < 0 { next += 1 }
        for index in 0..<previous.count {
            if next < order.count && Int(matched[next]) == index {
                // Tonight's devices before this one were not in the previous generation.
                while i < next { added(i); i += 1 }
                if let digest = digests[i] {
                    if digest == previous.digest(at: index) { counts.unchanged += 1 } else { note(key(order[i]), .changed); changedRows.insert(order[i]) }
                } else {
                    carried[i] = index
                }
                i += 1
                next += 1
                while next < order.count && matched[next] < 0 { next += 1 }
                continue
            }
            previous.withKey(at: index) { old in
                while i < order.count && key(order[i]).precedes(old) { added(i); i += 1 }
                if removeMissing { note(old, .removed) } else { note(old, .missing, missing: (i, index)) }
            }
        }
        while i < order.count { added(i); i += 1 }
        // A key gone and one added that are equal but for ASCII case are one device re-keyed by its
        // export: the added entry says so (written under the new key), the gone one is dropped
        // (neither removed nor carried as missing).
        var addedByFoldedKey: [[UInt8]: Int] = [:]
        for (n, e) in entries.enumerated() where e.kind == .added { addedByFoldedKey[e.key.map(asciiLower)] = n }
        if !addedByFoldedKey.isEmpty {
            var dropped = Set<Int>()
            for (n, e) in entries.enumerated() where e.kind == .removed || e.kind == .missing {
                guard let a = addedByFoldedKey.removeValue(forKey: e.key.map(asciiLower)) else { continue }
                entries[a].kind = .rekeyed
                entries[a].from = e.key
                dropped.insert(n)
            }
            entries = entries.enumerated().filter { !dropped.contains($0.offset) }.map(\.element)
        }
        for e in entries {
            switch e.kind {
            case .added: counts.added += 1
            case .changed: counts.changed += 1
            case .removed: counts.removed += 1; removedKeys.append(e.key)
            case .missing: counts.missing += 1; missing.append(e.missing!)
            case .rekeyed: counts.rekeyed += 1
            }
            JSONText.append(#"{"device":"#, to: &lines)
            JSONText.appendString(e.key, to: &lines)
            JSONText.append(#","change":""#, to: &lines)
            lines += e.kind.rawValue.utf8
            JSONText.append("\"", to: &lines)
            if let removalExtension, e.kind == .removed {
                JSONText.append(#","path":""#, to: &lines)
                e.key.withView { OutputNames.appendRelativePath($0, extension: removalExtension, to: &lines) }
                JSONText.append("\"", to: &lines)
            }
            if let from = e.from {
                JSONText.append(#","from":"#, to: &lines)
                JSONText.appendString(from, to: &lines)
            }
            JSONText.append("}\n", to: &lines)
        }
    }

    /// One device's line of `changes.jsonl`.
    struct Entry {
        enum Kind: String { case added, changed, removed, missing, rekeyed }
        var key: [UInt8]
        var kind: Kind
        /// A missing device's place in tonight's key order and in the previous manifest.
        var missing: (before: Int, previous: Int)?
        /// A re-keyed device's previous key.
        var from: [UInt8]?
    }
}

/// A set of inventory rows as a flag per row: what a night asks of every device in turn (which
/// of them changed), where a `Set` hashed each of a million rows.
struct RowFlags {
    private var flags: [Bool]
    private(set) var count = 0

    init(rows: Int) { flags = [Bool](repeating: false, count: rows) }

    mutating func insert(_ row: Int32) {
        guard !flags[Int(row)] else { return }
        flags[Int(row)] = true
        count += 1
    }

    /// False for a row outside the table (-1: a device missing tonight).
    func contains(_ row: Int32) -> Bool { row >= 0 && Int(row) < flags.count && flags[Int(row)] }
}
