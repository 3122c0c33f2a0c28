import AppConfigCore
import AppConfigSpec
import Foundation

/// Does the header line up with the rows? An export whose rows are shifted a column (the Jamf Pro
/// export in the corpus: `Serial Number` holds IP addresses, `Email Address` battery levels) reads
/// without a single CSV error and would render battery levels as email addresses. These checks
/// look at what the mapped columns hold: values shaped unlike their variable, rows of another
/// width than the header, a device key column that is mostly duplicates. Warnings with counts
/// and examples; errors under `--strict-inventory`.
enum ExportChecks {
    /// The shape a variable's values have in every export seen.
    enum Shape: String {
        case serialNumber = "serial numbers", udid = "UDIDs", imei = "IMEIs", macAddress = "MAC addresses", email = "email addresses"

        /// Whether `v` (not empty) has this shape. Loops that allocate nothing and test a byte's
        /// class without a branch (`ASCIISet`): every value of the checked columns is looked at,
        /// and the branches of a test per class, mispredicted on serials that mix letters and
        /// digits, made this 6.5% of a night's CPU.
        func fits(_ v: ByteView) -> Bool {
            switch self {
            case .serialNumber:
                // Letters, digits and dashes (Apple's 10-12 characters; other vendors' longer).
                return v.count <= 40 && ASCIISet.serial.containsAll(v)
            case .udid:
                // 40 hex digits (before iPhone XS), 8-16 hex digits, or a UUID (8-4-4-4-12).
                switch v.count {
                case 40: return ASCIISet.hex.containsAll(v)
                case 25: return ASCIISet.hexOrDash.containsAll(v) && ASCIISet.dash.count(in: v) == 1 && v[8] == UInt8(ascii: "-")
                case 36: return ASCIISet.hexOrDash.containsAll(v) && ASCIISet.dash.count(in: v) == 4
                    && v[8] == UInt8(ascii: "-") && v[13] == UInt8(ascii: "-") && v[18] == UInt8(ascii: "-") && v[23] == UInt8(ascii: "-")
                default: return false
                }
            case .imei:
                // 14 to 16 digits (IMEI, IMEISV), in groups separated by spaces.
                guard ASCIISet.digitOrSpace.containsAll(v) else { return false }
                return (14...16).contains(v.count - ASCIISet.space.count(in: v))
            case .macAddress:
                if v.count == 12 { return ASCIISet.hex.containsAll(v) }
                guard v.count == 17 else { return false }
                let separator = v[2]
                guard separator == UInt8(ascii: ":") || separator == UInt8(ascii: "-") else { return false }
                for i in stride(from: 0, to: 17, by: 3) where !ASCIISet.hex.containsAll(v[view: i..<(i + 2)]) || (i < 15 && v[i + 2] != separator) {
                    return false
                }
                return true
            case .email:
                // An `@` with something before and after it, and no space (other bytes, UTF-8 too, allowed).
                guard let at = v.firstIndex(of: UInt8(ascii: "@"), from: 0), at > 0, at < v.count - 1 else { return false }
                return v.firstIndex(of: UInt8(ascii: " "), from: 0) == nil
            }
        }
    }

    /// A set of ASCII bytes as up to three ranges (`ByteRangeMarks`): eight bytes at a time
    /// without a branch per byte (every value of the checked columns is looked at, and a byte at
    /// a time, through a 128-bit set's shift, this was a large part of reading an inventory); a
    /// value shorter than a word, or with a byte of 0x80 or above (in no set), a byte at a time.
    struct ASCIISet {
        private let ranges: (ByteRangeMarks, ByteRangeMarks, ByteRangeMarks)

        init(_ a: ByteRangeMarks, _ b: ByteRangeMarks = Self.none, _ c: ByteRangeMarks = Self.none) { ranges = (a, b, c) }

        private static let none = ByteRangeMarks(1, 0)
        private static let highs: UInt64 = 0x8080_8080_8080_8080
        private static let digit = ByteRangeMarks(0x30, 0x39)
        private static let hexLetter = ByteRangeMarks(0x61, 0x66, foldingCase: true)
        private static let dashByte = ByteRangeMarks(0x2D, 0x2D)
        static let hex = ASCIISet(digit, hexLetter)
        static let hexOrDash = ASCIISet(digit, hexLetter, dashByte)
        static let serial = ASCIISet(digit, ByteRangeMarks(0x61, 0x7A, foldingCase: true), dashByte)
        static let digitOrSpace = ASCIISet(digit, ByteRangeMarks(0x20, 0x20))
        static let space = ASCIISet(ByteRangeMarks(0x20, 0x20))
        static let dash = ASCIISet(dashByte)

        /// 0x80 in each byte of `w` in the set (bytes below 0x80 only).
        @inline(__always)
        private func marks(_ w: UInt64) -> UInt64 { ranges.0.marks(w) | ranges.1.marks(w) | ranges.2.marks(w) }

        @inline(__always)
        private func has(_ b: UInt8) -> Bool { b < 0x80 && marks(UInt64(b)) & 0x80 != 0 }

        /// Whether every byte of `v` is in the set: a word at a time, the last eight bytes
        /// overlapping the word before when the count is not a multiple of eight.
        @inline(__always)
        func containsAll(_ v: ByteView) -> Bool {
            let n = v.count
            guard n >= 8 else {
                for b in v where !has(b) { return false }
                return true
            }
            @inline(__always) func wordIn(_ w: UInt64) -> Bool { w & Self.highs == 0 && marks(w) == Self.highs }
            var i = 0
            while i + 8 <= n {
                guard wordIn(v.word(at: i)) else { return false }
                i += 8
            }
            return i == n || wordIn(v.word(at: n - 8))
        }

        /// How many bytes of `v` are in the set: a word at a time, of the overlapping last word
        /// the bytes not counted yet; a value with a byte of 0x80 or above (rare) a byte at a time.
        @inline(__always)
        func count(in v: ByteView) -> Int {
            let n = v.count
            var count = 0
            if n >= 8 {
                var high: UInt64 = 0, i = 0
                while i + 8 <= n {
                    let w = v.word(at: i)
                    high |= w
                    count += marks(w).nonzeroBitCount
                    i += 8
                }
                if i < n {
                    let w = v.word(at: n - 8)
                    high |= w
                    count += (marks(w) & (Self.highs << UInt64(8 * (8 - (n - i))))).nonzeroBitCount
                }
                if high & Self.highs == 0 { return count }
                count = 0
            }
            for b in v where has(b) { count += 1 }
            return count
        }
    }

    /// The columns checked: each mapped variable with a known shape, and the user key column when
    /// it holds addresses (its name says email, or it is the `emailAddress` column).
    static func checkedColumns(_ table: InventoryTable) -> [(slot: Int, what: String, shape: Shape)] {
        var columns: [(slot: Int, what: String, shape: Shape)] = []
        let deviceShapes: [(DeviceVariable, Shape)] = [(.serialNumber, .serialNumber), (.udid, .udid), (.imei, .imei), (.wifiMacAddress, .macAddress)]
        for (v, shape) in deviceShapes { if let slot = table.variableSlots[v] { columns.append((slot, v.rawValue, shape)) } }
        if let slot = table.userVariableSlots[.emailAddress] { columns.append((slot, UserVariable.emailAddress.rawValue, .email)) }
        if let slot = table.userKeySlot, !columns.contains(where: { $0.slot == slot }),
           ColumnNames.folded(table.header[table.keptColumns[slot]]).contains("email") {
            columns.append((slot, "the user key", .email))
        }
        return columns
    }

    /// The warnings (errors when `strict`) for `table`: every row checked, examples the first rows
    /// in file order.
    /// A column whose every value (at least 3) is suspect is an error whatever `strict` says, unless
    /// `allowSuspect`: nothing of that column can be right (the device key column aside: it names
    /// the devices, whatever its values look like).
    static func problems(_ table: InventoryTable, fieldCountRows: Int, duplicateKeyRows: Int, strict: Bool, allowSuspect: Bool = false) -> [Problem] {
        let severity: Problem.Severity = strict ? .error : .warning
        let headerLine = Location(file: table.file, line: 1)
        var problems: [Problem] = []
        let hint = "does the header line up with the rows? (--strict-inventory refuses such an export)"
        if table.dataRows > 0 && fieldCountRows * 2 > table.dataRows {
            problems.append(Problem(.inventoryHeaderWidth, severity, at: headerLine,
                                    "\(fieldCountRows) of \(table.dataRows) rows have another number of fields than the header's \(table.header.count)", hint: hint))
        }
        let keyed = table.rowCount + duplicateKeyRows
        if keyed >= 4 && duplicateKeyRows * 2 > keyed {
            let column = table.header[table.keptColumns[table.deviceKeySlot]]
            problems.append(Problem(.inventoryDuplicateKeys, severity, at: headerLine,
                                    "\(duplicateKeyRows) of \(keyed) rows repeat a device key of column \"\(column)\": a device key names one device", hint: hint))
        }
        // One pass over the rows, a row's columns together (its bytes share cache lines; a pass per
        // column read the export once per column), in a range per core.
        // The device keys are looked at in the same pass, for those with non-ASCII bytes (rare).
        let columns = checkedColumns(table)
        struct Tally { var filled: [Int], unlike: [Int], examples: [[Int]], nonASCIIKeys: [Int] }
        let parts = Parallelism.threads
        let none = [Int](repeating: 0, count: columns.count)
        var tallies = [Tally](repeating: Tally(filled: none, unlike: none, examples: Array(repeating: [], count: columns.count), nonASCIIKeys: []), count: parts)
        let keySlot = table.deviceKeySlot
        // Plain values only in the loop: a tuple holding a String was retained and released per
        // value, by both cores on the same objects.
        let slotsOfColumns = columns.map(\.slot), shapes = columns.map(\.shape)
        tallies.withWorkerSlots { slots in
            forEachRange(table.rowCount, parts: parts, parallelFrom: 65_536) { part, range in
                var filled = [Int](repeating: 0, count: shapes.count), unlike = filled
                var examples = [[Int]](repeating: [], count: shapes.count)
                var nonASCIIKeys: [Int] = []
                slotsOfColumns.withView { slotOf in shapes.withView { shapeOf in
                    for row in range {
                        if table.value(row: row, slot: keySlot).contains(where: { $0 >= 0x80 }) { nonASCIIKeys.append(row) }
                        for c in 0..<slotOf.count {
                            let v = table.value(row: row, slot: slotOf[c])
                            if v.isEmpty { continue }
                            filled[c] += 1
                            if shapeOf[c].fits(v) { continue }
                            unlike[c] += 1
                            if examples[c].count < 3 { examples[c].append(row) }
                        }
                    }
                } }
                slots[part] = Tally(filled: filled, unlike: unlike, examples: examples, nonASCIIKeys: nonASCIIKeys)
            }
        }
        // Device keys that are one name in two Unicode normalizations (`é` as one code point, or as
        // `e` and a combining accent): two devices here, one to whoever reads them. A hint.
        var byNFC: [String: (row: Int, bytes: [UInt8])] = [:]
        var twins: [(Int, Int)] = []
        for row in tallies.flatMap(\.nonASCIIKeys) {
            let key = table.value(row: row, slot: keySlot)
            let nfc = String(decoding: key, as: UTF8.self).precomposedStringWithCanonicalMapping
            if let first = byNFC[nfc] { if !first.bytes.elementsEqual(key) { twins.append((first.row, row)) } }
            else { byNFC[nfc] = (row, Array(key)) }
        }
        if let (a, b) = twins.first {
            problems.append(Problem(.inventoryKeyNormalization, .warning, at: Location(file: table.file, line: table.line(of: b)),
                                    "\(twins.count) device key\(twins.count == 1 ? " differs" : "s differ") from another only in Unicode normalization, e.g. "
                                    + "\"\(table.deviceKey(b))\" (line \(table.line(of: b))) and \"\(table.deviceKey(a))\" (line \(table.line(of: a))): "
                                    + "two devices here, the same name to a reader (export in one normalization)"))
        }
        for (c, column) in columns.enumerated() {
            let unlike = tallies.reduce(0) { $0 + $1.unlike[c] }
            guard unlike > 0 else { continue }
            let filled = tallies.reduce(0) { $0 + $1.filled[c] }
            let examples = tallies.flatMap { $0.examples[c] }.prefix(3).map { row in
                "\"\(String(decoding: table.value(row: row, slot: column.slot).prefix(40), as: UTF8.self))\" (line \(table.line(of: row)))"
            }
            let name = table.header[table.keptColumns[column.slot]]
            // The device key column names devices whatever its shape (a test fleet's made-up keys).
            let all = unlike == filled && filled >= 3 && !allowSuspect && column.slot != table.deviceKeySlot
            problems.append(Problem(.inventorySuspectValues, all ? .error : severity, at: headerLine,
                                    "column \"\(name)\" (\(column.what)): \(all ? "all " : "")\(unlike) of \(filled) values do not look like \(column.shape.rawValue), e.g. "
                                    + examples.joined(separator: ", "),
                                    hint: all ? "the export is shifted: no value of the column can be right (--allow-suspect renders it anyway)" : hint))
        }
        return problems
    }
}
