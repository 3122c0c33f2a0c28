import AppConfigBytes
import AppConfigSources
import Digest

/// How many devices were added, changed, removed or left unchanged since a previous generation.
public struct ChangeCounts: Sendable, Codable, Equatable {
    public var added = 0
    public var changed = 0
    public var removed = 0
    public var unchanged = 0

    /// The share of the previous generation's devices that changed or went (the guard's measure).
    public func changeShare(previousCount: Int) -> Double {
        previousCount == 0 ? 0 : Double(changed + removed) / Double(previousCount)
    }
}

/// Tonight's fleet against a previous manifest: each device's kind of change, in device-key order
/// (`changes.jsonl`), the counts, and the keys of the devices gone. A device that failed tonight is
/// neither: it keeps its previous entry in the new manifest and is reported as failed.
struct ChangeSet {
    var counts = ChangeCounts()
    /// `{"device":KEY,"change":"added"|"changed"|"removed"}` lines, in device-key order.
    var lines: [UInt8] = []
    var removedKeys: [[UInt8]] = []
    /// Devices written tonight (added or changed), by row: what `--changed-only` writes.
    var changedRows = Set<Int32>()

    init(previous: Manifest, fleet: Fleet, shardRows: [Int32], outputs: [(row: Int32, digest: SHA256Digest)]) {
        let inventory = fleet.inventory
        func key(_ row: Int32) -> UnsafeBufferPointer<UInt8> { inventory.value(row: Int(row), slot: inventory.deviceKeySlot) }
        var current = ByteKeyTable(capacity: shardRows.count)
        for row in shardRows { _ = current.insert(key(row), id: row) { key($0) } }
        var entries: [(key: [UInt8], kind: StaticString)] = []
        for (row, digest) in outputs {
            switch previous.digest(forKey: key(row)) {
            case nil: counts.added += 1; entries.append((Array(key(row)), "added")); changedRows.insert(row)
            case digest?: counts.unchanged += 1
            default: counts.changed += 1; entries.append((Array(key(row)), "changed")); changedRows.insert(row)
            }
        }
        previous.forEach { k, _ in
            if current.find(k, keyOf: { key($0) }) == nil {
                counts.removed += 1
                removedKeys.append(Array(k))
                entries.append((Array(k), "removed"))
            }
        }
        entries.sort { $0.key.lexicographicallyPrecedes($1.key) }
        for e in entries {
            JSONText.append(#"{"device":"#, to: &lines)
            JSONText.appendString(e.key, to: &lines)
            JSONText.append(#","change":""#, to: &lines)
            JSONText.append(e.kind, to: &lines)
            JSONText.append("\"}\n", to: &lines)
        }
    }
}
