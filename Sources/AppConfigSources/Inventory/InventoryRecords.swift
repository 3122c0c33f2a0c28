import AppConfigCore
import CXXHash

/// An inventory's data records as a night compares them with the night before's: per record (a
/// row, a blank line, a refused row: what `CSVScanner.next` reads at a time), the line it starts
/// on and the XXH3-64 of its bytes. A record is read from its start in the one state a scanner
/// has between records, so its bytes read alone give what they gave in the whole file, on other
/// lines; a record whose bytes were there last night need not be parsed again
/// (`IncrementalInventory`).
public struct InventoryRecords: Sendable, Equatable {
    /// Per record, the line it starts on.
    public var startLines: [UInt32] = []
    /// Per record, the XXH3-64 of its bytes.
    public var hashes: [UInt64] = []
    /// Per record, the byte just past it (tonight's file only: an image keeps no offsets).
    var ends: [Int] = []
    /// Where the first record starts (tonight's file only).
    var start = 0

    public init() {}

    init(startLines: [UInt32], hashes: [UInt64]) {
        self.startLines = startLines
        self.hashes = hashes
    }

    public var count: Int { hashes.count }

    func range(_ k: Int) -> Range<Int> { (k == 0 ? start : ends[k - 1])..<ends[k] }

    /// The same records without tonight's offsets: what an image keeps.
    var withoutOffsets: InventoryRecords { InventoryRecords(startLines: startLines, hashes: hashes) }

    /// The records of `bytes[from...]` (`from` a record's start, on line `firstLine`), found by
    /// `appconfig_csv_records` and hashed in parts, one per core for a large file. A part's cut
    /// may fall inside a quoted field across lines: each part is checked against the one before
    /// it (which must end where it starts) and scanned again from there when it does not, as the
    /// parse's parts are (`RowScan.scanInParts`).
    package static func scan(_ bytes: MutableByteView, from: Int, firstLine: Int, delimiter: UInt8,
                             parts: Int = Parallelism.threads, always: Bool = false) -> InventoryRecords {
        let bounds = RowScan.partBounds(bytes.view, from: from, parts: parts, always: always)
        let count = bounds.count - 1
        var pieces = [Piece](repeating: Piece(), count: count)
        pieces.withWorkerSlots { slots in
            Parallelism.concurrentPerform(iterations: count) { [bounds] i in
                slots[i].scan(bytes, from: bounds[i], to: bounds[i + 1], delimiter: delimiter)
            }
        }
        for i in 0..<max(count - 1, 0) where pieces[i].end != pieces[i + 1].start {
            // Part i + 1 began inside a record (a quoted field across lines): from where part i ended.
            var again = Piece()
            again.scan(bytes, from: pieces[i].end, to: max(bounds[i + 2], pieces[i].end), delimiter: delimiter)
            pieces[i + 1] = again
        }
        let joined = RecordMatch.joined(pieces.map { ($0.ends, $0.lines, $0.hashes) }, firstLine: UInt32(firstLine))
        var out = InventoryRecords(startLines: joined.startLines, hashes: joined.hashes)
        (out.ends, out.start) = (joined.ends, from)
        return out
    }

    /// Where each record of `bytes` ends and the line it starts on, as `scan` finds them (in
    /// `parts`) and as `CSVScanner.next` reads them, which must agree: the fuzzer's check.
    public static func splitBothWays(_ bytes: [UInt8], delimiter: UInt8, parts: Int) -> (found: [Int], foundLines: [UInt32], scanner: [Int], scannerLines: [UInt32]) {
        let arena = BufferArena()
        let buffer = arena.slots(copying: bytes + [0])[slots: 0..<bytes.count]
        let found = scan(buffer, from: 0, firstLine: 1, delimiter: delimiter, parts: parts, always: true)
        var scanner = CSVScanner(bytes: buffer, delimiter: delimiter, unescapes: false)
        var fields = CSVFieldBuffer()
        var ends: [Int] = [], lines: [UInt32] = []
        while let record = scanner.next(into: &fields) {
            ends.append(scanner.position)
            lines.append(UInt32(record.line))
        }
        return withExtendedLifetime(arena) { (found.ends, found.startLines, ends, lines) }
    }

    /// One part's records: those that start in `from..<to` (the last may end past `to`).
    struct Piece {
        var start = 0, end = 0
        var ends: [Int] = []
        var lines: [UInt32] = []
        var hashes: [UInt64] = []

        mutating func scan(_ bytes: MutableByteView, from: Int, to: Int, delimiter: UInt8) {
            (start, end) = (from, from)
            let cap = 4096
            var found = [Int](repeating: 0, count: cap), newlines = [UInt32](repeating: 0, count: cap)
            // Rows of an export are a few hundred bytes: room for those of 128 or more.
            let room = (to - from) / 128
            ends.reserveCapacity(room)
            lines.reserveCapacity(room)
            hashes.reserveCapacity(room)
            bytes.view.withUnsafeBufferPointer { b in
                var p = from
                scanning: while p < to {
                    let count = bytes.csvRecordEnds(from: p, delimiter: delimiter, ends: &found, lines: &newlines)
                    for k in 0..<count {
                        let first = k == 0 ? p : found[k - 1]
                        guard first < to else { break scanning }
                        ends.append(found[k])
                        lines.append(newlines[k])
                        hashes.append(XXH3_64bits(b.baseAddress! + first, found[k] - first))
                        end = found[k]
                    }
                    p = found[count - 1]
                }
            }
        }
    }
}
