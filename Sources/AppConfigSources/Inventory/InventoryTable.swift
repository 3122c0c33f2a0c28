import AppConfigCore
import CByteScan
import CXXHash
import Foundation

/// How to read an inventory export.
public struct InventoryOptions: Sendable {
    /// nil: found from the header (`,`, `;` or tab, whichever it holds most of outside quotes; `,`
    /// on a tie). `;` is what spreadsheet exports in many locales write.
    public var delimiter: UInt8?
    /// The column that names a device (default: UDID, else Serial Number).
    public var deviceKeyColumn: String?
    /// The column that joins a device to its user (default: the first of the preset's `userKeyColumns`).
    public var userKeyColumn: String?
    /// Whose export this is (`--inventory-preset`); nil: found from the header.
    public var preset: InventoryPreset?
    /// `--map variable=Column`: overrides the built-in aliases.
    public var columnMap: [DeviceVariable: String] = [:]
    /// `--map userVariable=Column`: a user variable read from the inventory (over the directory's).
    public var userColumnMap: [UserVariable: String] = [:]
    /// User variables found by their column names (`Email Address`, `OwnerEmail`...): for fleets
    /// without a directory.
    public var userVariablesFromColumns = false
    /// Columns to keep besides the mapped variables and the two keys (for `$(device.<Column>)`);
    /// nil keeps every column.
    public var extraColumns: [String]?
    /// Columns kept when the inventory has them (those assignments match on).
    public var matchColumns: [String] = []
    /// The device variables whose columns are kept (those the programs read); nil: every mapped
    /// one. The device key's column is kept whatever it maps.
    public var deviceVariables: Set<DeviceVariable>?
    /// A bad row fails the load instead of being reported and skipped.
    public var strict = false
    /// The export checks (`ExportChecks`: values shaped unlike their variable...) fail the load
    /// instead of warning.
    public var strictInventory = false
    /// A column whose every value is suspect (a shifted export: 100% of "Email Address" values
    /// are battery levels) is taken, with a warning, instead of refused.
    public var allowSuspect = false
    /// The parts the rows are scanned in whatever the file's size (tests); nil: one per core for a
    /// large file.
    public var scanParts: Int?
    /// The file's records hashed as they are read, and kept with the table (`recordHashes`), for
    /// the night after to parse only those that changed (`InventoryImage`).
    public var keepRecords = false

    public init() {}
}

/// An inventory CSV in memory: the kept columns' values (quoted fields unescaped) and, per row,
/// their byte ranges. No per-field allocation; values are read as pointers into the table's own
/// memory, valid for its lifetime.
public final class InventoryTable: @unchecked Sendable {
    public let file: String
    /// Column names as written, trimmed of spaces.
    public let header: [String]
    /// Header indices of the kept columns, in header order.
    public let keptColumns: [Int]
    /// The kept-column slot of each device variable that maps to a column.
    public let variableSlots: [DeviceVariable: Int]
    /// The kept-column slot of each user variable read from the inventory.
    public let userVariableSlots: [UserVariable: Int]
    public let deviceKeySlot: Int
    public let userKeySlot: Int?
    /// Whose export this was read as.
    public let preset: InventoryPreset
    public private(set) var problems: [Problem] = []
    /// Whether the header lines up with the rows (`ExportChecks`): warnings about the export as a
    /// whole, with counts and examples, apart from the rows' own problems.
    public private(set) var exportChecks: [Problem] = []
    /// Devices: rows kept.
    public private(set) var rowCount = 0
    /// Every data row after the header (blank lines aside), kept or not.
    public private(set) var dataRows = 0
    /// Rows that continue the device above them (Jamf Pro's export lists each app, group and
    /// profile of a device on a row of its own, every identifying column empty): counted, not devices.
    public private(set) var continuationRows = 0
    /// The delimiter read with, and whether it was found from the header.
    public let delimiter: UInt8
    public let delimiterDetected: Bool
    /// Bytes read, for throughput figures.
    public let byteCount: Int
    /// How the rows were read (the header's bytes, the delimiter, the columns kept): an image made
    /// with another reading is not tonight's (`InventoryImage`).
    package let readingKey: String
    /// With `keepRecords`, the XXH3-64 of each of the file's data records (`InventoryRecords`), when
    /// every record is a row or a blank line (no row refused, none continuing another) and the
    /// values are the table's own: what the night after compares with. Each record not in
    /// `blankRecords` is the next row, on the row's line (kept so, not as a line and a row per
    /// record: 8 bytes a record of the job's peak).
    package private(set) var recordHashes: [UInt64]?
    /// The records that are blank lines: their index and line.
    package private(set) var blankRecords: [(record: Int, line: UInt32)] = []

    /// The kept values' size when the file was last read whole (an incremental read appends).
    package private(set) var poolAtFullRead = 0
    /// Read from an image of another version of the file: records and rows read tonight.
    public private(set) var incremental: (image: String, records: Int, recordsRead: Int, rowsRead: Int)?

    /// The file's data records (`recordHashes`) and the row each became (or -1), whole: a row's
    /// line is its own, a blank line's is kept with it (`blankRecords`).
    public var recordSegments: (records: InventoryRecords, rows: [Int32])? {
        guard let recordHashes else { return nil }
        let rows = recordRows(0..<recordHashes.count)
        var blank = blankRecords.makeIterator()
        let lines = rows.map { row in row >= 0 ? self.lines[Int(row)] : blank.next()!.line }
        return (InventoryRecords(startLines: lines, hashes: recordHashes), rows)
    }

    /// Each record's row (-1 for a blank line), for `records`: what the image keeps of them.
    func recordRows(_ records: Range<Int>) -> [Int32] {
        // The blank lines before the range, and so the first record's row.
        var blank = 0, high = blankRecords.count
        while blank < high {
            let mid = (blank + high) / 2
            if blankRecords[mid].record < records.lowerBound { blank = mid + 1 } else { high = mid }
        }
        var row = records.lowerBound - blank
        var rows: [Int32] = []
        rows.reserveCapacity(records.count)
        for k in records {
            if blank < blankRecords.count && blankRecords[blank].record == k {
                rows.append(-1)
                blank += 1
            } else {
                rows.append(Int32(row))
                row += 1
            }
        }
        return rows
    }

    /// The header folded once, for lookups by column name.
    private let foldedHeader: FoldedHeader
    /// Owns `bytes`: adopted before anything can throw, so a file refused half way is freed too.
    private let owner: BufferArena
    /// The file mapped when it was read: its pages let go once the kept values are copied out,
    /// itself kept to tell whether the file changed since (`change()`).
    private let mapping: MappedFile?
    /// Per row, per kept slot: offset and length (UInt32 each) into the kept values, in `owner`.
    private let records: RecordTable
    private let lines: [UInt32]
    /// The image the rows were read from, itself kept to tell whether it changed since.
    private let imageMapping: MappedFile?
    /// Owns the values copied out of an image that could not take them in place.
    private let imagePoolCopy: GrowingBuffer<UInt8>?

    /// The kept values, when they are the table's own (not the file's bytes, read into memory).
    var ownPool: ByteView? { mapping != nil || imageMapping != nil ? records.bytes : nil }
    /// The device keys' hashes of `rows`, ASCII case folded (`foldedWordHash`, as the check of
    /// duplicates makes them): made when an image is written, not kept (8 bytes a row of the peak).
    func deviceKeyHashes(_ rows: Range<Int>) -> [UInt64] {
        withColumn(deviceKeySlot) { column in rows.map { foldedWordHash(column.value(row: $0)) } }
    }

    /// The rows' pairs into the values, as bytes (for an image).
    var pairBytes: ByteView { records.pairs.bytes }

    /// The value of a kept slot in a row; empty when the field is empty.
    @inline(__always)
    package func value(row: Int, slot: Int) -> ByteView { records.value(row, slot) }

    /// Starts reading a row's ranges into the cache (`prefetchValue` a few rows later finds them there).
    @inline(__always)
    public func prefetchRanges(row: Int) { records.prefetchPairs(row) }

    /// Starts reading a value's first bytes into the cache (its range is read now: see `prefetchRanges`).
    @inline(__always)
    public func prefetchValue(row: Int, slot: Int) {
        records.prefetchValue(row, slot)
    }

    /// One kept column: a view with no reference counting, for loops reading a value per device
    /// (the index, the manifest), which through the table retained and released it around each read.
    public struct Column: Sendable {
        fileprivate let records: RecordTable
        fileprivate let slot: Int

        @inline(__always)
        package func value(row: Int) -> ByteView { records.value(row, slot) }

        /// Starts reading a row's pair into the cache (`prefetchValue` a few rows later finds it there).
        @inline(__always)
        public func prefetchRange(row: Int) { records.prefetchPair(row, slot) }

        /// Starts reading a value's first bytes into the cache (its pair is read now).
        @inline(__always)
        public func prefetchValue(row: Int) { records.prefetchValue(row, slot) }
    }

    public func withColumn<R>(_ slot: Int, _ body: (Column) -> R) -> R { body(Column(records: records, slot: slot)) }

    public func string(row: Int, slot: Int) -> String { String(decoding: value(row: row, slot: slot), as: UTF8.self) }

    /// The line a row starts on (1-based, the header is line 1).
    public func line(of row: Int) -> Int { Int(lines[row]) }

    /// The row's place: file, line, data row and device.
    public func location(of row: Int) -> Location { Location(file: file, line: Int(lines[row]), row: row, device: deviceKey(row)) }

    /// The kept slot of a column by name (folded: case, spaces, `-` and `_` ignored), if kept.
    public func slot(ofColumn name: String) -> Int? {
        guard let column = foldedHeader.index(of: name) else { return nil }
        return keptColumns.firstIndex(of: column)
    }

    public func deviceKey(_ row: Int) -> String { string(row: row, slot: deviceKeySlot) }

    /// Real exports have tens to a few hundred columns (Jamf Pro with extension attributes); a
    /// header beyond this is not an inventory.
    public static let maxColumns = 10_000

    /// Reads the file mapped into memory (`MappedFile`: no copy, no fresh pages but those of
    /// unescaped fields; the kept values are then copied out and the mapping let go), or into a
    /// buffer when it cannot be mapped.
    /// `previous`: an image of another version of the file (`image`: where it is), whose
    /// records tonight's need not be parsed again (`IncrementalInventory`).
    public static func load(_ path: String, options: InventoryOptions = InventoryOptions(), previous image: String? = nil) throws(Problem) -> InventoryTable {
        let limit = Int(UInt32.max) - 1
        let mapping: MappedFile?
        do { mapping = try MappedFile(path, limit: limit) } catch { throw error.problem }
        if let mapping {
            var previous: (path: String, contents: InventoryImage.Contents)?
            if let image, let contents = try? InventoryImage.contents(image) { previous = (image, contents) }
            let table = try InventoryTable(taking: mapping.bytes, owner: BufferArena(), mapping: mapping, file: path, options: options, previous: previous)
            if let change = table.change() { throw change }
            return table
        }
        let owner = BufferArena()
        let buffer: MutableByteView
        do { buffer = try readFile(path, into: owner, limit: limit) } catch { throw error.problem }
        return try InventoryTable(taking: buffer, owner: owner, file: path, options: options)
    }

    /// Nil, or why the table's values can no longer be trusted: its file, mapped, was cut shorter
    /// or written to in place since it was read. A job asks before it publishes what it rendered.
    public func change() -> Problem? { (mapping?.change() ?? imageMapping?.change())?.problem }

    public convenience init(bytes data: [UInt8], file: String, options: InventoryOptions = InventoryOptions()) throws(Problem) {
        guard data.count < Int(UInt32.max) else { throw Problem(InputCode.tooLarge, at: Location(file: file), "\(file) is larger than 4 GiB") }
        let owner = BufferArena()
        try self.init(taking: owner.slots(copying: data), owner: owner, file: file, options: options)
    }

    /// Reads `buffer` in place: the bytes of `mapping`, read until the kept values are copied out
    /// into `owner`, or bytes `owner` holds, which the table keeps.
    init(taking buffer: MutableByteView, owner: BufferArena, mapping: MappedFile? = nil, file: String, options: InventoryOptions,
         previous: (path: String, contents: InventoryImage.Contents)? = nil) throws(Problem) {
        self.mapping = mapping
        self.owner = owner
        self.file = file
        byteCount = buffer.count
        let bytes = buffer.view
        // A UTF-16 export (Excel's "Unicode text"): its byte order mark, or a NUL every other byte.
        let head = bytes.prefix(64)
        if bytes.starts(with: [0xFF, 0xFE]) || bytes.starts(with: [0xFE, 0xFF]) || (head.count >= 8 && head.filter({ $0 == 0 }).count * 3 >= head.count) {
            throw Problem(.csvInvalidUTF8, at: Location(file: file, line: 1), "\(file) is UTF-16 text: save it as UTF-8 (CSV UTF-8), which every export tool offers")
        }
        let start = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        delimiter = options.delimiter ?? Self.detectDelimiter(bytes, from: start)
        delimiterDetected = options.delimiter == nil
        var scanner = CSVScanner(bytes: buffer, delimiter: delimiter)
        scanner.position = start

        // The header row, after any blank lines.
        var fields = CSVFieldBuffer()
        var headerRecord = scanner.next(into: &fields)
        while let record = headerRecord, record.error == nil, fields.count == 1, fields.length(0) == 0 {
            headerRecord = scanner.next(into: &fields)
        }
        guard let headerRecord else {
            throw Problem(.csvNoHeader, at: Location(file: file, line: 1), "no header row: the file is empty")
        }
        let headerLine = Location(file: file, line: headerRecord.line)
        if let error = headerRecord.error { throw Problem(error.0, at: headerLine, "header: \(error.message(0))") }
        guard fields.count <= Self.maxColumns else {
            throw Problem(.csvTooManyColumns, at: headerLine,
                          "the header has \(fields.count) columns; at most \(Self.maxColumns) are read")
        }
        let header = (0..<fields.count).map { ColumnNames.trimmed(String(decoding: bytes[view: fields.offset($0)..<(fields.offset($0) + fields.length($0))], as: UTF8.self)) }
        // A NUL or a byte order mark inside a column's name makes it another column than the one it
        // reads as (the device key column silently not found, or another taken): refused, named.
        for (i, name) in header.enumerated() {
            if let bad = name.unicodeScalars.first(where: { $0 == "\u{FEFF}" || $0.value < 0x20 }) {
                let what = bad == "\u{FEFF}" ? "a byte order mark (U+FEFF)" : bad == "\u{0}" ? "a NUL" : "a control character"
                throw Problem(.csvHeaderName, at: headerLine, "column \(i + 1) of the header, \"\(Problem.printable(name))\", holds \(what) inside its name: the export is damaged (save it again as UTF-8 CSV)")
            }
        }
        self.header = header
        foldedHeader = FoldedHeader(header)
        var problems: [Problem] = []
        var firstColumn: [String: Int] = [:]
        for (i, name) in header.enumerated() where !name.isEmpty {
            if let first = firstColumn[name.lowercased()] {
                problems.append(Problem(.csvDuplicateColumn, at: headerLine,
                                        "column \"\(name)\" appears twice (columns \(first + 1) and \(i + 1)); the first is used"))
            } else {
                firstColumn[name.lowercased()] = i
            }
        }

        let plan: ColumnPlan
        do {
            plan = try ColumnPlan(header: header, folded: foldedHeader, file: file, options: options)
        } catch where error.code == .csvNoDeviceKey && header.count == 1 {
            // One column: most likely the wrong delimiter, not a missing column.
            let used = delimiter, only = header[0]
            guard let other = [UInt8(ascii: ";"), UInt8(ascii: ","), 0x09].first(where: { $0 != used && only.utf8.contains($0) }) else { throw error }
            throw Problem(.csvNoDeviceKey, at: headerLine, "the header is one column, \"\(Self.shortened(only))\", which holds \(Self.name(of: other)): "
                          + "the file is not delimited by \(Self.name(of: used)); give --delimiter \(other == 0x09 ? "tab" : Self.name(of: other))")
        }
        let keptColumns = plan.keptColumns
        self.keptColumns = keptColumns
        variableSlots = plan.variableSlots
        userVariableSlots = plan.userVariableSlots
        deviceKeySlot = plan.deviceKeySlot
        userKeySlot = plan.userKeySlot
        preset = plan.preset
        let deviceKeyColumn = keptColumns[deviceKeySlot]

        // The rows: scanned in parts (one per core for a large file), merged in file order.
        var keptIndex = [Int](repeating: -1, count: header.count)
        for (slot, column) in keptColumns.enumerated() { keptIndex[column] = slot }
        var layout = RowScan.Layout(headerCount: header.count, keptIndex: keptIndex, keptCount: keptColumns.count, strict: options.strict,
                                    keySlot: deviceKeySlot)
        layout.keepRecords = options.keepRecords && mapping != nil
        let headerProblems = problems.count
        // The header's bytes (and any before it) and how the rows are split: what an image must have been read with.
        let headerHash = bytes[view: 0..<scanner.position].withUnsafeBufferPointer { XXH3_64bits($0.baseAddress, $0.count) }
        readingKey = "header \(scanner.position) \(String(headerHash, radix: 16)) delimiter \(delimiter) kept \(keptColumns.map(String.init).joined(separator: ",")) key \(deviceKeySlot) strict \(options.strict)"
        // Into locals, set once at the end: the properties of a class, changed per row, were
        // checked for exclusive access at run time on each change.
        var ranges: [UInt32] = [], lines: [UInt32] = []
        var rowCount = 0, dataRows = 0, continuationRows = 0
        let partCount = options.scanParts ?? Parallelism.threads
        if layout.keepRecords, let previous, previous.contents.key == readingKey,
           let read = IncrementalInventory.read(previous.contents, bytes: buffer, from: scanner.position, firstLine: scanner.line, delimiter: delimiter,
                                                layout: layout, arena: owner, parts: partCount) {
            records = read.records
            imageMapping = read.poolCopy == nil ? previous.contents.mapping : nil
            imagePoolCopy = read.poolCopy
            lines = read.lines
            (rowCount, dataRows) = (lines.count, lines.count)
            recordHashes = read.segments.records.hashes
            blankRecords = read.segments.rows.indices.filter { read.segments.rows[$0] < 0 }.map { ($0, read.segments.records.startLines[$0]) }
            poolAtFullRead = previous.contents.poolAtFullRead
            incremental = (previous.path, read.segments.records.count, read.recordsRead, read.rowsRead)
            mapping?.unmap()
        } else {
            (imageMapping, imagePoolCopy) = (nil, nil)
            var scans = RowScan.scanInParts(buffer, from: scanner.position, delimiter: delimiter, layout: layout,
                                            parts: partCount, always: options.scanParts != nil)
            // Keys equal but for ASCII case are one key: they would be one file on a case-insensitive
            // filesystem (macOS's default), so the second is refused like an exact duplicate.
            let width = keptColumns.count * 2
            for i in scans.indices { scans[i].unescapeFields(buffer, keySlot: deviceKeySlot) }
            let duplicates = DuplicateKeys(scans: scans, bytes: bytes, width: width, keySlot: deviceKeySlot)
            var lineOffsets = [scanner.line - 1]  // per part, the lines before its first
            for scan in scans { lineOffsets.append(lineOffsets.last! + scan.lines) }
            let (file, deviceKeySlot) = (self.file, self.deviceKeySlot)  // not through `self`: the closures below run before it is whole
            let allRanges = scans.reduce(0) { $0 + $1.ranges.count }
            lines.reserveCapacity(scans.reduce(0) { $0 + $1.rowLines.count })
            // While none of a part's rows is skipped they are not copied one by one: at the end of the
            // part the table takes its ranges whole (part 0's are the table's first: taken, not copied;
            // room for every part's was reserved by its scan), or, at its first skipped row, the rows
            // before it are copied and the rest appended as they come (copying every row was a tenth of
            // a one-part parse, and a row at a time, the later parts' were the load's one-core stretch).
            var part0 = scans.first?.ranges ?? []
            if !scans.isEmpty { scans[0].ranges = [] }
            /// A row's ranges, for messages about an earlier row (part 0's: in the table once taken
            /// whole, which leaves `part0` empty).
            /// A row's device key, from the row's ranges.
            func deviceKey(_ rowRanges: some RandomAccessCollection<UInt32>) -> ByteView {
                let at = rowRanges.index(rowRanges.startIndex, offsetBy: deviceKeySlot * 2)
                let offset = Int(rowRanges[at])
                return bytes[view: offset..<(offset + Int(rowRanges[rowRanges.index(after: at)]))]
            }
            func rangesOf(part: Int, row: Int) -> ArraySlice<UInt32> {
                part > 0 ? scans[part].ranges[(row * width)...] : part0.isEmpty ? ranges[(row * width)...] : part0[(row * width)...]
            }
            // A row with all of these empty names no device: after a device, it continues it.
            let identitySlots = Array(Set(plan.variableSlots.values).union([plan.deviceKeySlot]).union(plan.userKeySlot.map { [$0] } ?? []))
            rows: for (part, scan) in scans.enumerated() {
                let lineOffset = lineOffsets[part]
                dataRows += scan.dataRows
                var deferring = true
                let rowsBefore = rowCount
                /// The part's rows before `r`, all kept: copied when the first of its rows is skipped.
                func stopDeferring(before r: Int) {
                    guard deferring else { return }
                    ranges.reserveCapacity(allRanges)
                    ranges.append(contentsOf: (part == 0 ? part0 : scan.ranges)[..<(r * width)])
                    deferring = false
                }
                var suspect = 0  // the next of the part's rows whose key its scan did not pass
                let stop: Bool = (part == 0 ? part0 : scan.ranges).withView { partRanges in
                    for event in scan.events {
                        if event < 0 {
                            let p = scan.problems[Int(-event - 1)]
                            problems.append(Problem(p.code, at: Location(file: file, line: p.line + lineOffset), p.message(lineOffset)))
                            if options.strict { return true }
                            continue
                        }
                        let r = Int(event)
                        let rowRanges = partRanges[view: (r * width)..<((r + 1) * width)]
                        let lineNumber = Int(scan.rowLines[r]) + lineOffset
                        var location: Location { Location(file: file, line: lineNumber) }
                        let key = deviceKey(rowRanges)
                        if key.isEmpty {
                            stopDeferring(before: r)
                            if rowCount > 0 && identitySlots.allSatisfy({ rowRanges[$0 * 2 + 1] == 0 }) {
                                continuationRows += 1
                                continue
                            }
                            problems.append(Problem(.csvEmptyDeviceKey, at: location, "the device key column \"\(header[deviceKeyColumn])\" is empty"))
                            if options.strict { return true }
                            continue
                        }
                        while suspect < scan.suspectKeys.count && Int(scan.suspectKeys[suspect]) < r { suspect += 1 }
                        if suspect < scan.suspectKeys.count && Int(scan.suspectKeys[suspect]) == r, let reason = DeviceKeyCheck.problem(key) {
                            stopDeferring(before: r)
                            let printable = key.contains { $0 != 0x20 } ? Problem.printable(String(decoding: key, as: UTF8.self)) : nil
                            problems.append(Problem(.csvBadDeviceKey, at: printable.map { location.with(device: $0) } ?? location,
                                                    "the device key column \"\(header[deviceKeyColumn])\" \(reason); this row is skipped"))
                            if options.strict { return true }
                            continue
                        }
                        if let first = duplicates.earlier(part: part, row: r) {
                            stopDeferring(before: r)
                            let name = String(decoding: key, as: UTF8.self)
                            let firstKey = deviceKey(rangesOf(part: first.part, row: first.row))
                            let firstLine = Int(scans[first.part].rowLines[first.row]) + lineOffsets[first.part]
                            let message = firstKey.equals(key)
                                ? "device key \"\(name)\" is also on line \(firstLine); this row is skipped"
                                : "device key \"\(name)\" differs only in case from \"\(String(decoding: firstKey, as: UTF8.self))\" on line \(firstLine) (one file on a case-insensitive filesystem); this row is skipped"
                            problems.append(Problem(.csvDuplicateDeviceKey, at: location.with(device: name), message))
                            if options.strict { return true }
                            continue
                        }
                        if !deferring { ranges.append(contentsOf: rowRanges) }
                        lines.append(UInt32(lineNumber))
                        rowCount += 1
                    }
                    return false
                }
                if deferring {
                    // Every row of the part kept (or the reading stopped in it: then only its rows up to the stop).
                    if stop { stopDeferring(before: rowCount - rowsBefore) } else if part == 0 {
                        swap(&ranges, &part0)
                        ranges.reserveCapacity(allRanges)
                    } else {
                        ranges.append(contentsOf: scan.ranges)
                    }
                }
                if stop { break rows }
            }
            // The pairs in the table's own memory: a view of them reads with no reference counting.
            if mapping != nil {
                // A mapped file's kept values copied out with their pairs, and its pages (most of them
                // columns no program reads) let go.
                let (arena, columns) = (owner, keptColumns.count)
                records = ranges.withView { RecordTable(pairs: $0, bytes: bytes, width: columns).compacted(in: arena) }
                mapping?.unmap()
            } else {
                records = RecordTable(pairs: owner.view(ranges), bytes: bytes, width: keptColumns.count)
            }
            // The records, for the night after: when each is a row or a blank line.
            if layout.keepRecords, problems.count == headerProblems, continuationRows == 0, !scans.contains(where: \.stopped) {
                var hashes: [UInt64] = []
                hashes.reserveCapacity(scans.reduce(0) { $0 + $1.records.count })
                for (part, scan) in scans.enumerated() {
                    for (k, row) in scan.recordRows.enumerated() where row < 0 {
                        blankRecords.append((hashes.count + k, scan.records.startLines[k] + UInt32(lineOffsets[part])))
                    }
                    hashes += scan.records.hashes
                }
                recordHashes = hashes
                poolAtFullRead = records.bytes.count
            }
        }
        self.lines = lines
        self.rowCount = rowCount
        self.dataRows = dataRows
        self.continuationRows = continuationRows
        self.problems = problems
        exportChecks = ExportChecks.problems(self, fieldCountRows: problems.count { $0.code == .csvFieldCount },
                                             duplicateKeyRows: problems.count { $0.code == .csvDuplicateDeviceKey }, strict: options.strictInventory,
                                             allowSuspect: options.allowSuspect)
        if let first = exportChecks.first(where: { $0.severity == .error }) { throw first }
        if options.strict, let first = problems.first(where: { $0.code != .csvDuplicateColumn }) {
            throw first
        }
    }

    /// The delimiter of the header line: whichever of `,`, `;` and tab it holds most of outside
    /// quotes (`,` on a tie, and for a header of one column).
    static func detectDelimiter(_ data: ByteView, from start: Int) -> UInt8 {
        var counts: [UInt8: Int] = [UInt8(ascii: ","): 0, UInt8(ascii: ";"): 0, 0x09: 0]
        var quoted = false, i = start
        while i < data.count && (data[i] == 0x0A || data[i] == 0x0D) { i += 1 }  // blank lines first
        while i < data.count {
            let b = data[i]
            if b == UInt8(ascii: "\"") { quoted.toggle() } else if !quoted && (b == 0x0A || b == 0x0D) { break }
            else if !quoted, counts[b] != nil { counts[b]! += 1 }
            i += 1
        }
        let best = counts.max { a, b in a.value != b.value ? a.value < b.value : a.key != UInt8(ascii: ",") && b.key == UInt8(ascii: ",") }!
        return best.value > 0 ? best.key : UInt8(ascii: ",")
    }

    /// How a delimiter is named in messages.
    public static func name(of delimiter: UInt8) -> String {
        delimiter == 0x09 ? "tab" : "'\(Character(Unicode.Scalar(delimiter)))'"
    }

    static func shortened(_ text: String) -> String { text.count <= 60 ? text : String(text.prefix(57)) + "..." }
}
