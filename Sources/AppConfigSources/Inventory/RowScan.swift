import AppConfigCore
import CXXHash
import Dispatch
import Foundation

/// The data rows of one part of an inventory, scanned on a core of its own: each record's kept
/// fields as ranges, or its problem, in file order, with lines counted from the part's start. The
/// table merges the parts in order (the device-key checks and continuation rows need every row
/// before).
///
/// A large file is cut at line starts near each core's share. A line start may fall inside a quoted
/// field that spans lines; a part's scan is therefore checked against the part before it (which
/// must end exactly where it starts) and scanned again from there when it does not. Nothing is
/// written while parts scan (a part that started inside quotes would unescape what is not a
/// field): fields with doubled quotes are unescaped once the parts are known good.
struct RowScan {
    struct Layout: Sendable {
        let headerCount: Int
        /// Per header column, its kept slot or -1.
        let keptIndex: [Int]
        let keptCount: Int
        /// Stop at the first problem (`--strict`).
        let strict: Bool
        /// The device key's slot, whose value each row's hash is made of (case folded).
        let keySlot: Int
        /// Each record hashed (`records`), for the night after (`InventoryRecords`).
        var keepRecords = false
    }

    /// A problem of the part, its line counted from the part's start; `message` takes the lines
    /// before the part.
    struct PartProblem {
        let code: SourceCode
        let line: Int
        let message: (Int) -> String
    }

    /// Where the scan began and where its last record ended.
    var start: Int
    var end: Int
    /// Physical lines the part spans.
    var lines = 0
    var dataRows = 0
    /// Per row with the header's field count: its kept slots as (offset, length).
    var ranges: [UInt32] = []
    var rowLines: [UInt32] = []
    /// Per row, the hash of its device key, ASCII case folded (`foldedWordHash`): made here, on the
    /// part's core, for the check of duplicates (which only builds its table: nothing is looked up
    /// in it by FNV-1a).
    var keyHashes: [UInt64] = []
    /// The rows whose device key `DeviceKeyCheck.isUsable` did not pass (short, a control byte,
    /// only spaces, or a field of the row written with doubled quotes), ascending: only these are
    /// checked again when the parts merge. Checked here, on the part's core, while the key's bytes
    /// are in the cache (read again at the merge, each was a cache miss on its one core).
    var suspectKeys: [Int32] = []
    /// In file order: a row (its index, >= 0) or a problem (`-index - 1`).
    var events: [Int32] = []
    var problems: [PartProblem] = []
    /// Kept fields written with doubled quotes, their length still the raw one: (row, slot).
    var escaped: [(row: Int32, slot: Int32)] = []
    /// Stopped at a problem (`--strict`): the parts after it do not count.
    var stopped = false
    /// With `Layout.keepRecords`: per record (rows, blank lines and refused rows), its line, the
    /// XXH3-64 of its bytes (hashed here, while they are in the cache) and the row it became or -1.
    var records = InventoryRecords()
    var recordRows: [Int32] = []

    /// Files at least this large are scanned in parts, one per core.
    static let parallelThreshold = 8 << 20

    /// The rows of `bytes[from...]`, in parts for a large file (`always`: whatever its size), each
    /// part checked against the one before it (and scanned again from where that one ended when
    /// they disagree).
    static func scanInParts(_ bytes: MutableByteView, from start: Int, delimiter: UInt8, layout: Layout,
                            parts: Int, always: Bool = false) -> [RowScan] {
        let n = bytes.count
        let bounds = partBounds(bytes.view, from: start, parts: parts, always: always)
        let count = bounds.count - 1
        var scans = [RowScan](repeating: RowScan(start: 0, end: 0), count: count)
        scans.withWorkerSlots { slots in
            Parallelism.concurrentPerform(iterations: count) { [bounds] i in
                // Part 0 reserves room for every part's rows: the table takes its ranges whole and
                // appends the others' (room never written is never touched).
                slots[i] = scan(bytes, from: bounds[i], to: bounds[i + 1], delimiter: delimiter, layout: layout,
                                       reserving: i == 0 ? n - bounds[0] : bounds[i + 1] - bounds[i])
            }
        }
        for i in 0..<(count - 1) {
            if scans[i].stopped { return Array(scans[...i]) }
            if scans[i].end != scans[i + 1].start {
                // Part i + 1 began inside a record (a quoted field across lines): from where part i ended.
                scans[i + 1] = scan(bytes, from: scans[i].end, to: max(bounds[i + 2], scans[i].end), delimiter: delimiter, layout: layout)
            }
        }
        return scans
    }

    /// Where the parts of `bytes[start...]` start, then its end: at line starts near each part's
    /// share of a large file (`always`: whatever its size), one part for a small one. A cut may
    /// fall inside a quoted field across lines: each part is checked against the one before it.
    static func partBounds(_ bytes: ByteView, from start: Int, parts: Int, always: Bool) -> [Int] {
        let n = bytes.count
        var bounds = [start]
        if n - start >= parallelThreshold || always {
            for k in 1..<max(parts, 1) {
                let near = max(bounds.last!, start + (n - start) * k / parts)
                guard let newline = bytes.firstIndex(of: 0x0A, from: near), newline + 1 < n else { break }
                bounds.append(newline + 1)
            }
        }
        bounds.append(n)
        return bounds
    }

    /// The records that start in `from..<to` (the last may end past `to`), nothing written.
    /// `reserving`: the bytes whose rows `ranges` has room for (the part's own by default).
    static func scan(_ bytes: MutableByteView, from: Int, to: Int, delimiter: UInt8, layout: Layout,
                     reserving: Int? = nil) -> RowScan {
        var part = RowScan(start: from, end: from)
        var scanner = CSVScanner(bytes: bytes, delimiter: delimiter, unescapes: false)
        scanner.position = from
        scanner.line = 1
        var fields = CSVFieldBuffer()
        let width = layout.keptCount * 2
        // The kept columns only, as (column, slot): most of a wide export is not read.
        let kept = layout.keptIndex.enumerated().filter { $0.element >= 0 }.map { (column: $0.offset, slot: $0.element) }
        // A row holds at least a delimiter per column: a wide header means few rows. Room for the
        // rows of 64 bytes or more (the per-row arrays too: grown by doubling, each was copied
        // ~log2(rows) times).
        func rows(in bytes: Int) -> Int { bytes / max(64, layout.headerCount) }
        part.ranges.reserveCapacity(rows(in: reserving ?? to - from) * width)
        part.rowLines.reserveCapacity(rows(in: to - from))
        part.keyHashes.reserveCapacity(rows(in: to - from))
        part.events.reserveCapacity(rows(in: to - from))
        // The row's ranges before they join the part's: appended from an array, each row retained
        // and released it (reference counting and copying were much of the scan's time).
        if layout.keepRecords {
            part.records.startLines.reserveCapacity(rows(in: to - from))
            part.records.hashes.reserveCapacity(rows(in: to - from))
            part.recordRows.reserveCapacity(rows(in: to - from))
        }
        withTemporarySlots(count: width, repeating: UInt32(0)) { row in
            while scanner.position < to {
                let first = scanner.position
                guard let record = scanner.nextWellFormed(into: &fields) ?? scanner.next(into: &fields) else { break }
                if layout.keepRecords {
                    part.records.startLines.append(UInt32(record.line))
                    part.records.hashes.append(bytes.view[view: first..<scanner.position].withUnsafeBufferPointer { XXH3_64bits($0.baseAddress, $0.count) })
                    part.recordRows.append(-1)
                }
                let blank = fields.count == 1 && fields.length(0) == 0 && layout.headerCount > 1
                if !blank { part.dataRows += 1 }
                if let (code, message) = record.error {
                    part.problem(code, record.line, message)
                    if layout.strict { part.stopped = true; break }
                    continue
                }
                if blank { continue }  // a blank line holds no device
                guard fields.count == layout.headerCount else {
                    let (count, headerCount) = (fields.count, layout.headerCount)
                    part.problem(.csvFieldCount, record.line) { _ in "the row has \(count) field\(count == 1 ? "" : "s"); the header has \(headerCount)" }
                    if layout.strict { part.stopped = true; break }
                    continue
                }
                let index = Int32(part.rowLines.count)
                for (c, slot) in kept {
                    var length = fields.length(c)
                    if length < 0 {
                        length = -length - 1
                        part.escaped.append((index, Int32(slot)))
                    }
                    row[slot * 2] = UInt32(fields.offset(c))
                    row[slot * 2 + 1] = UInt32(length)
                }
                part.ranges.append(contentsOf: row.view)
                part.rowLines.append(UInt32(record.line))
                let key = Int(row[layout.keySlot * 2])
                let keyBytes = bytes.view[view: key..<(key + Int(row[layout.keySlot * 2 + 1]))]
                part.keyHashes.append(foldedWordHash(keyBytes))
                if keyBytes.count < 8 || !DeviceKeyCheck.isUsable(keyBytes) || part.escaped.last?.row == index {
                    part.suspectKeys.append(index)
                }
                part.events.append(index)
                if layout.keepRecords { part.recordRows[part.recordRows.count - 1] = index }
            }
        }
        part.end = scanner.position
        part.lines = scanner.line - 1
        return part
    }

    private mutating func problem(_ code: SourceCode, _ line: Int, _ message: @escaping (Int) -> String) {
        problems.append(PartProblem(code: code, line: line, message: message))
        events.append(-Int32(problems.count))
    }

    /// Unescapes the kept fields written with doubled quotes, in place, and sets their lengths
    /// (once the part is known to start where a record does).
    mutating func unescapeFields(_ bytes: MutableByteView, keySlot: Int) {
        let width = ranges.count / max(rowLines.count, 1)
        for (row, slot) in escaped {
            let i = Int(row) * width + Int(slot) * 2
            ranges[i + 1] = UInt32(CSVScanner.unescape(bytes, offset: Int(ranges[i]), rawLength: Int(ranges[i + 1])))
            if Int(slot) == keySlot {
                keyHashes[Int(row)] = foldedWordHash(bytes.view[view: Int(ranges[i])..<Int(ranges[i] + ranges[i + 1])])
            }
        }
        escaped = []
    }
}
