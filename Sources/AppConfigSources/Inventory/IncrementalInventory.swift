import AppConfigCore

/// Tonight's inventory rows from last night's image and tonight's file, parsing only the records
/// (`InventoryRecords`) whose bytes last night's file did not have. Why: an export changes every
/// night, and parsed whole it was a fifth of a night whose rows changed by 1%.
///
/// A record with last night's bytes is the row it was (its values last night's, where the image
/// holds them), on the line it starts on tonight. The others are parsed together as one small
/// file, in file order, by the same scanner. What a whole read decides across rows is decided
/// again: no two device keys equal but for ASCII case. The result is nil, and the file is read
/// whole, wherever the two could differ or the whole read has more to say: a record read tonight is
/// refused or names no device (an empty key: a continuation row, or a problem), two rows' device
/// keys hash alike (a row given twice: one copy kept, one read, `RecordMatch.match`), the record
/// scanner and the parser split a record read tonight apart (never seen: a guard), more than half
/// the records are new (another export: read faster whole on every core), or the kept values have
/// grown by half since the file was last read whole (the values of rows replaced stay in the image
/// until then). An image is made only from a read without refused or continuation rows
/// (`InventoryTable.recordHashes`).
enum IncrementalInventory {
    /// What a night read: tonight's rows, and what the night after compares with.
    struct Read {
        let records: RecordTable
        /// Owns the values when they could not be appended to the image in place.
        let poolCopy: GrowingBuffer<UInt8>?
        let lines: [UInt32]
        let segments: (records: InventoryRecords, rows: [Int32])
        let recordsRead: Int
        let rowsRead: Int
    }

    /// Nil where an incremental read could differ from a whole one (see above).
    /// `from`: where the data records start in `bytes` (past the header), on line `firstLine`.
    static func read(_ image: InventoryImage.Contents, bytes: MutableByteView, from: Int, firstLine: Int, delimiter: UInt8,
                     layout: RowScan.Layout, arena: BufferArena, parts: Int = Parallelism.threads) -> Read? {
        let width = layout.keptCount
        guard image.width == width else { return nil }
        let tonight = InventoryRecords.scan(bytes, from: from, firstLine: firstLine, delimiter: delimiter, parts: parts)
        guard tonight.count > 0 else { return nil }
        let matches = RecordMatch.match(image.recordHashes, tonight.hashes)
        var changed: [Int] = []
        for (k, m) in matches.enumerated() where m < 0 { changed.append(k) }
        guard changed.count * 2 <= tonight.count else { return nil }

        // The records read tonight, back to back: each is read from a record's start, as in the file.
        let smallCount = changed.reduce(0) { $0 + tonight.range($1).count }
        let small = arena.slots(uninitialized: max(smallCount, 1), of: UInt8.self)[slots: 0..<smallCount]
        var at = 0
        for k in changed {
            let range = tonight.range(k)
            small.copy(bytes.view[view: range], to: at)
            at += range.count
        }
        var smallLayout = layout
        smallLayout.keepRecords = true
        var scan = RowScan.scan(small, from: 0, to: smallCount, delimiter: delimiter, layout: smallLayout)
        // The parser's records are the scanner's, and none refused.
        guard scan.problems.isEmpty, scan.end == smallCount, scan.records.count == changed.count,
              zip(changed, scan.records.hashes).allSatisfy({ tonight.hashes[$0] == $1 }) else { return nil }
        scan.unescapeFields(small, keySlot: layout.keySlot)
        let readRows = scan.rowLines.count
        let readPairs = scan.ranges
        for r in 0..<readRows {
            let offset = Int(readPairs[(r * width + layout.keySlot) * 2]), length = Int(readPairs[(r * width + layout.keySlot) * 2 + 1])
            let key = small.view[view: offset..<(offset + length)]
            // An empty key (a continuation row, or a refused one) or a refused key: the whole read says.
            guard !key.isEmpty, DeviceKeyCheck.problem(key) == nil else { return nil }
        }

        // No two device keys alike: among the rows read, and between them and the rows kept.
        var readKeys = HashSet64(capacity: readRows)
        for h in scan.keyHashes where !readKeys.insert(h) { return nil }

        // Per record tonight, the row it comes from: last night's (its index there), one read
        // tonight (`-2 - index`), or none (-1). In parts on every core, as the rows after: with
        // 1M rows, one core's walks were a third of the phase.
        let parts = max(1, parts)
        var from = [Int32](repeating: -1, count: tonight.count, parts: parts)
        let clash = from.withWorkerSlots { from in
            anyRange(tonight.count, parts: parts) { _, range in
                var s = changed.count(below: range.lowerBound)  // the records read tonight before this part
                for k in range {
                    guard matches[k] >= 0 else {
                        if scan.recordRows[s] >= 0 { from[k] = -2 - scan.recordRows[s] }
                        s += 1
                        continue
                    }
                    let row = image.recordRows[matches[k]]
                    guard row >= 0 else { continue }
                    if readRows > 0, readKeys.contains(image.keyHashes[Int(row)]) { return true }
                    from[k] = row
                }
                return false
            }
        }
        guard !clash else { return nil }
        var rows = 0, readRow = 0
        var recordRows = [Int32](repeating: -1, count: tonight.count, parts: parts)
        for k in 0..<tonight.count where from[k] != -1 {
            recordRows[k] = Int32(rows)
            rows += 1
            if from[k] < 0 { readRow += 1 }
        }
        // The values read tonight, after last night's pool: where each read row's start.
        let oldPool = image.pool.count
        var readValues = 0
        var valuesAt = [Int](repeating: 0, count: readRows)
        for r in 0..<readRows {
            valuesAt[r] = readValues
            for slot in 0..<width { readValues += Int(readPairs[(r * width + slot) * 2 + 1]) }
        }
        guard oldPool + readValues <= image.poolAtFullRead + image.poolAtFullRead / 2, oldPool + readValues < Int(UInt32.max) else { return nil }
        let values = arena.slots(uninitialized: max(readValues, 1), of: UInt8.self)
        let pairs = arena.slots(uninitialized: max(rows * width * 2, 1), of: UInt32.self)
        var lines = [UInt32](repeating: 0, count: rows, parts: parts)
        lines.withWorkerSlots { lines in
            forEachRange(tonight.count, parts: parts) { _, range in
                for k in range where recordRows[k] >= 0 {
                    let row = Int(recordRows[k])
                    lines[row] = tonight.startLines[k]
                    if from[k] >= 0 {
                        let old = Int(from[k])
                        pairs.copy(image.pairs[view: (old * width * 2)..<((old + 1) * width * 2)], to: row * width * 2)
                        continue
                    }
                    let r = Int(-2 - from[k])
                    var written = valuesAt[r]
                    for slot in 0..<width {
                        let (offset, length) = (Int(readPairs[(r * width + slot) * 2]), Int(readPairs[(r * width + slot) * 2 + 1]))
                        values.copy(small.view[view: offset..<(offset + length)], to: written)
                        pairs[(row * width + slot) * 2] = length == 0 ? 0 : UInt32(oldPool + written)
                        pairs[(row * width + slot) * 2 + 1] = UInt32(length)
                        written += length
                    }
                }
            }
        }
        let (pool, copy) = image.mappedPool.appending(values.view(prefix: readValues))
        return Read(records: RecordTable(pairs: pairs.view(prefix: rows * width * 2), bytes: pool, width: width), poolCopy: copy,
                    lines: lines, segments: (tonight.withoutOffsets, recordRows),
                    recordsRead: changed.count, rowsRead: readRow)
    }
}

/// A set of hashes (already well mixed: their low bits index it), open addressing: the device
/// keys read on a night, looked up once per row kept (a Swift `Set` hashed each again).
struct HashSet64 {
    private var slots: [UInt64]
    private var hasZero = false
    private let mask: Int

    init(capacity: Int) {
        var size = 16
        while size < capacity * 4 { size <<= 1 }
        slots = [UInt64](repeating: 0, count: size)
        mask = size - 1
    }

    /// False when `h` was there already.
    mutating func insert(_ h: UInt64) -> Bool {
        guard h != 0 else { defer { hasZero = true }; return !hasZero }
        var i = Int(truncatingIfNeeded: h) & mask
        while slots[i] != 0 {
            if slots[i] == h { return false }
            i = (i + 1) & mask
        }
        slots[i] = h
        return true
    }

    func contains(_ h: UInt64) -> Bool {
        guard h != 0 else { return hasZero }
        var i = Int(truncatingIfNeeded: h) & mask
        while slots[i] != 0 {
            if slots[i] == h { return true }
            i = (i + 1) & mask
        }
        return false
    }
}
