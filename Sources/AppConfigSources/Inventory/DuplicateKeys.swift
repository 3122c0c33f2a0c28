import AppConfigBytes
import Dispatch
import Foundation

/// Which rows repeat an earlier row's device key (ASCII case folded: one file on a case-insensitive
/// filesystem). The keys are shared out among the cores by hash, and each core checks its share
/// in file order in a table of its own: equal keys have equal hashes, so each pair meets in one
/// table (measured: one table for 1M keys was a cache miss per key, a quarter of the inventory's time).
struct DuplicateKeys {
    /// Rows of all parts in order: row `r` of part `p` is `starts[p] + r`.
    let starts: [Int]
    /// Per row, its key's range in the file's bytes (offset, length).
    private let keys: [UInt32]
    /// Per row, the earlier row with an equal key, or -1 (rows without a key: -1).
    private let first: [Int32]

    init(scans: [RowScan], bytes: UnsafeMutableBufferPointer<UInt8>, width: Int, keySlot: Int,
         cores: Int = ProcessInfo.processInfo.activeProcessorCount) {
        var starts = [0]
        for scan in scans { starts.append(starts.last! + scan.rowLines.count) }
        let total = starts.last!
        var keys = [UInt32](repeating: 0, count: 2 * total)
        var hashes = [UInt64](repeating: 0, count: total)
        for (p, scan) in scans.enumerated() {
            for r in 0..<scan.rowLines.count {
                keys[2 * (starts[p] + r)] = scan.ranges[r * width + keySlot * 2]
                keys[2 * (starts[p] + r) + 1] = scan.ranges[r * width + keySlot * 2 + 1]
                hashes[starts[p] + r] = scan.keyHashes[r]
            }
        }
        var first = [Int32](repeating: -1, count: total)
        let shares = max(1, cores)
        keys.withUnsafeBufferPointer { keys in
            hashes.withUnsafeBufferPointer { hashes in
                first.withUnsafeMutableBufferPointer { first in
                    let (file, keys, hashes, first) = (WorkerSlots(bytes), WorkerSlots(UnsafeMutableBufferPointer(mutating: keys)), WorkerSlots(UnsafeMutableBufferPointer(mutating: hashes)), WorkerSlots(first))
                    DispatchQueue.concurrentPerform(iterations: shares) { share in
                        func key(_ row: Int32) -> UnsafeBufferPointer<UInt8> {
                            UnsafeBufferPointer(start: file.buffer.baseAddress! + Int(keys.buffer[2 * Int(row)]), count: Int(keys.buffer[2 * Int(row) + 1]))
                        }
                        var table = ByteKeyTable(capacity: total / shares + 16, foldingASCIICase: true)
                        // The share by the hash's high half: the table files keys by its low bits.
                        for row in 0..<total where keys.buffer[2 * row + 1] > 0 && Int(hashes.buffer[row] >> 32) % shares == share {
                            if let f = table.insert(key(Int32(row)), hash: hashes.buffer[row], id: Int32(row), keyOf: key) { first.buffer[row] = f }
                        }
                    }
                }
            }
        }
        self.starts = starts
        self.keys = keys
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
