import AppConfigBytes
import AppConfigSpec

/// How to read an inventory export.
public struct InventoryOptions: Sendable {
    /// `,` by default; `;` and tab occur in real exports.
    public var delimiter: UInt8 = UInt8(ascii: ",")
    /// The column that names a device (default: UDID, else Serial Number).
    public var deviceKeyColumn: String?
    /// The column that joins a device to its user (default: Email Address, else Username).
    public var userKeyColumn: String?
    /// `--map variable=Column`: overrides the built-in aliases.
    public var columnMap: [DeviceVariable: String] = [:]
    /// Columns to keep besides the mapped variables and the two keys (for `$(device.<Column>)`);
    /// nil keeps every column.
    public var extraColumns: [String]?
    /// A bad row fails the load instead of being reported and skipped.
    public var strict = false

    public init() {}
}

/// An inventory CSV in memory: the file's bytes (quoted fields unescaped in place) and, per row,
/// byte ranges of the kept columns. No per-field allocation; values are read as pointers into the
/// table's own buffer, valid for its lifetime.
public final class InventoryTable: @unchecked Sendable {
    public let file: String
    /// Column names as written, trimmed of spaces.
    public let header: [String]
    /// Header indices of the kept columns, in header order.
    public let keptColumns: [Int]
    /// The kept-column slot of each device variable that maps to a column.
    public let variableSlots: [DeviceVariable: Int]
    public let deviceKeySlot: Int
    public let userKeySlot: Int?
    public private(set) var problems: [Problem] = []
    public private(set) var rowCount = 0
    /// Bytes read, for throughput figures.
    public let byteCount: Int

    /// Owns `bytes`: adopted before anything can throw, so a file refused half way is freed too.
    private let owner = BufferArena()
    private let bytes: UnsafeMutableBufferPointer<UInt8>
    /// Per row, per kept slot: offset and length (UInt32 each) into `bytes`.
    private var ranges: [UInt32] = []
    private var lines: [UInt32] = []

    /// The value of a kept slot in a row; empty when the field is empty.
    @inline(__always)
    public func value(row: Int, slot: Int) -> UnsafeBufferPointer<UInt8> {
        let i = (row * keptColumns.count + slot) * 2
        return UnsafeBufferPointer(start: bytes.baseAddress! + Int(ranges[i]), count: Int(ranges[i + 1]))
    }

    public func string(row: Int, slot: Int) -> String { String(decoding: value(row: row, slot: slot), as: UTF8.self) }

    /// The line a row starts on (1-based, the header is line 1).
    public func line(of row: Int) -> Int { Int(lines[row]) }

    /// The row's place: file, line, data row and device.
    public func location(of row: Int) -> Location { Location(file: file, line: Int(lines[row]), row: row, device: deviceKey(row)) }

    /// The kept slot of a column by name (trimmed, case-insensitive), if kept.
    public func slot(ofColumn name: String) -> Int? {
        guard let column = ColumnNames.index(of: name, in: header) else { return nil }
        return keptColumns.firstIndex(of: column)
    }

    public func deviceKey(_ row: Int) -> String { string(row: row, slot: deviceKeySlot) }

    /// Real exports have tens to a few hundred columns (Jamf Pro with extension attributes); a
    /// header beyond this is not an inventory.
    public static let maxColumns = 10_000

    public static func load(_ path: String, options: InventoryOptions = InventoryOptions()) throws(Problem) -> InventoryTable {
        let buffer: UnsafeMutableBufferPointer<UInt8>
        do { buffer = try readFileIntoBuffer(path, limit: Int(UInt32.max) - 1) } catch { throw error.problem }
        return try InventoryTable(taking: buffer, file: path, options: options)
    }

    public convenience init(bytes data: [UInt8], file: String, options: InventoryOptions = InventoryOptions()) throws(Problem) {
        guard data.count < Int(UInt32.max) else { throw Problem(InputCode.tooLarge, at: Location(file: file), "\(file) is larger than 4 GiB") }
        let buffer = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: max(data.count, 1))
        _ = buffer.initialize(from: data)
        try self.init(taking: UnsafeMutableBufferPointer(rebasing: buffer[0..<data.count]), file: file, options: options)
    }

    /// Takes ownership of `buffer` (allocated with `allocate`; freed with the table).
    init(taking buffer: UnsafeMutableBufferPointer<UInt8>, file: String, options: InventoryOptions) throws(Problem) {
        owner.adopt(buffer)
        self.file = file
        byteCount = buffer.count
        bytes = buffer
        let data = UnsafeBufferPointer(buffer)
        var scanner = CSVScanner(bytes: buffer, delimiter: options.delimiter)
        if data.starts(with: [0xEF, 0xBB, 0xBF]) { scanner.position = 3 }

        // The header row, after any blank lines.
        var fields = FieldBuffer()
        var headerRecord = scanner.next(into: &fields)
        while let record = headerRecord, record.error == nil, fields.count == 1, fields.length(0) == 0 {
            headerRecord = scanner.next(into: &fields)
        }
        guard let headerRecord else {
            throw Problem(.csvNoHeader, at: Location(file: file, line: 1), "no header row: the file is empty")
        }
        let headerLine = Location(file: file, line: headerRecord.line)
        if let error = headerRecord.error { throw Problem(error.0, at: headerLine, "header: \(error.1)") }
        guard fields.count <= Self.maxColumns else {
            throw Problem(.csvTooManyColumns, at: headerLine,
                          "the header has \(fields.count) columns; at most \(Self.maxColumns) are read")
        }
        let base = bytes.baseAddress!
        let header = (0..<fields.count).map { ColumnNames.trimmed(String(decoding: UnsafeBufferPointer(start: base + fields.offset($0), count: fields.length($0)), as: UTF8.self)) }
        self.header = header
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

        let plan = try ColumnPlan(header: header, file: file, options: options)
        let keptColumns = plan.keptColumns
        self.keptColumns = keptColumns
        variableSlots = plan.variableSlots
        deviceKeySlot = plan.deviceKeySlot
        userKeySlot = plan.userKeySlot
        let deviceKeyColumn = keptColumns[deviceKeySlot]

        // The rows.
        var keptIndex = [Int](repeating: -1, count: header.count)
        for (slot, column) in keptColumns.enumerated() { keptIndex[column] = slot }
        // Keys equal but for ASCII case are one key: they would be one file on a case-insensitive
        // filesystem (macOS's default), so the second is refused like an exact duplicate.
        var keys = ByteKeyTable(capacity: data.count / 256, foldingASCIICase: true)
        var rowRanges = [UInt32](repeating: 0, count: keptColumns.count * 2)
        // A row holds at least a delimiter per column: a wide header means few rows.
        ranges.reserveCapacity(data.count / max(64, header.count) * keptColumns.count)
        while let record = scanner.next(into: &fields) {
            var location: Location { Location(file: file, line: record.line) }
            if let (code, message) = record.error {
                problems.append(Problem(code, at: location, message))
                if options.strict { break }
                continue
            }
            if fields.count == 1 && fields.length(0) == 0 && header.count > 1 { continue }  // a blank line holds no device
            guard fields.count == header.count else {
                problems.append(Problem(.csvFieldCount, at: location, "the row has \(fields.count) field\(fields.count == 1 ? "" : "s"); the header has \(header.count)"))
                if options.strict { break }
                continue
            }
            for c in 0..<fields.count where keptIndex[c] >= 0 {
                rowRanges[keptIndex[c] * 2] = UInt32(fields.offset(c))
                rowRanges[keptIndex[c] * 2 + 1] = UInt32(fields.length(c))
            }
            let key = UnsafeBufferPointer(start: bytes.baseAddress! + Int(rowRanges[deviceKeySlot * 2]), count: Int(rowRanges[deviceKeySlot * 2 + 1]))
            if key.isEmpty {
                problems.append(Problem(.csvEmptyDeviceKey, at: location, "the device key column \"\(header[deviceKeyColumn])\" is empty"))
                if options.strict { break }
                continue
            }
            if let first = keys.insert(key, id: Int32(rowCount), keyOf: { self.keyOf(row: Int($0), slot: self.deviceKeySlot, ranges: self.ranges) }) {
                let name = String(decoding: key, as: UTF8.self)
                let firstKey = keyOf(row: Int(first), slot: deviceKeySlot, ranges: ranges)
                let message = bytesEqual(firstKey, key)
                    ? "device key \"\(name)\" is also on line \(lines[Int(first)]); this row is skipped"
                    : "device key \"\(name)\" differs only in case from \"\(String(decoding: firstKey, as: UTF8.self))\" on line \(lines[Int(first)]) (one file on a case-insensitive filesystem); this row is skipped"
                problems.append(Problem(.csvDuplicateDeviceKey, at: location.with(device: name), message))
                if options.strict { break }
                continue
            }
            ranges += rowRanges
            lines.append(UInt32(record.line))
            rowCount += 1
        }
        self.problems = problems
        if options.strict, let first = problems.first(where: { $0.code != .csvDuplicateColumn }) {
            throw first
        }
    }

    private func keyOf(row: Int, slot: Int, ranges: [UInt32]) -> UnsafeBufferPointer<UInt8> {
        let i = (row * keptColumns.count + slot) * 2
        return UnsafeBufferPointer(start: bytes.baseAddress! + Int(ranges[i]), count: Int(ranges[i + 1]))
    }
}
