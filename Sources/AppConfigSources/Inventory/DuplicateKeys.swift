import AppConfigCore
import Foundation

/// Which rows repeat an earlier row's device key (ASCII case folded: one file on a case-insensitive
/// filesystem), checked in a `ShardedKeyTable` (one table for every key was a cache miss per key,
/// on one core).
struct DuplicateKeys {
    /// Rows of all parts in order: row `r` of part `p` is `starts[p] + r`.
    let starts: [Int]
    /// Per row, the earlier row with an equal key, or -1 (rows without a key: -1).
    private let first: [Int32]

    init(scans: [RowScan], bytes: ByteView, width: Int, keySlot: Int,
         cores: Int = Parallelism.threads) {
        var starts = [0]
        for scan in scans { starts.append(starts.last! + scan.rowLines.count) }
        let total = starts.last!
        // Per row, its key's range in the file's bytes (offset, length), and its hash.
        var keys = [UInt32](repeating: 0, count: 2 * total)
        var hashes = [UInt64](repeating: 0, count: total)
        for (p, scan) in scans.enumerated() {
            for r in 0..<scan.rowLines.count {
                keys[2 * (starts[p] + r)] = scan.ranges[r * width + keySlot * 2]
                keys[2 * (starts[p] + r) + 1] = scan.ranges[r * width + keySlot * 2 + 1]
                hashes[starts[p] + r] = scan.keyHashes[r]
            }
        }
        // Captured as constants: the closures below read them per key, and a captured `var` was
        // checked for exclusive access at run time on each read.
        let keyHashes = hashes
        let table = keys.withView { keys in
            ShardedKeyTable(count: total, foldingASCIICase: true, shares: cores,
                            key: { bytes[view: Int(keys[2 * Int($0)])..<(Int(keys[2 * Int($0)]) + Int(keys[2 * Int($0) + 1]))] },
                            hash: { keyHashes[Int($0)] })
        }
        var first = [Int32](repeating: -1, count: total)
        for d in table.duplicates { first[Int(d.id)] = d.first }
        self.starts = starts
        self.first = first
    }

    /// The earlier row with the same key as row `r` of part `part`, as (part, row), or nil.
    func earlier(part: Int, row r: Int) -> (part: Int, row: Int)? {
        let f = Int(first[starts[part] + r])
        guard f >= 0 else { return nil }
        let p = starts.lastIndex { $0 <= f }!
        return (p, f - starts[p])
    }
}
