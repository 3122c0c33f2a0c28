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

        /// Whether `v` (not empty) has this shape. Byte loops that allocate nothing: every value of
        /// the checked columns is looked at (a first version that split and filtered arrays per
        /// value took longer than the whole parse).
        func fits(_ v: ByteView) -> Bool {
            switch self {
            case .serialNumber:
                // Letters, digits and dashes (Apple's 10-12 characters; other vendors' longer).
                guard v.count <= 40 else { return false }
                for b in v where !(Self.isAlphanumeric(b) || b == UInt8(ascii: "-")) { return false }
                return true
            case .udid:
                // 40 hex digits (before iPhone XS), 8-16 hex digits, or a UUID (8-4-4-4-12).
                var run = 0, runs = 0, shape: UInt64 = 0
                for b in v {
                    if b == UInt8(ascii: "-") {
                        shape = shape << 8 | UInt64(min(run, 255)); runs += 1; run = 0
                        if runs > 4 { return false }
                    } else if Self.isHexDigit(b) {
                        run += 1
                    } else {
                        return false
                    }
                }
                shape = shape << 8 | UInt64(min(run, 255))
                return (runs == 0 && run == 40) || (runs == 1 && shape == (8 << 8 | 16))
                    || (runs == 4 && shape == (8 << 32 | 4 << 24 | 4 << 16 | 4 << 8 | 12))
            case .imei:
                // 14 to 16 digits (IMEI, IMEISV), in groups separated by spaces.
                var digits = 0
                for b in v {
                    if b >= 0x30 && b <= 0x39 { digits += 1 } else if b != UInt8(ascii: " ") { return false }
                }
                return (14...16).contains(digits)
            case .macAddress:
                if v.count == 12 { return v.allSatisfy(Self.isHexDigit) }
                guard v.count == 17 else { return false }
                let separator = v[2]
                guard separator == UInt8(ascii: ":") || separator == UInt8(ascii: "-") else { return false }
                for i in 0..<17 where !(i % 3 == 2 ? v[i] == separator : Self.isHexDigit(v[i])) { return false }
                return true
            case .email:
                var at = -1
                for (i, b) in v.enumerated() {
                    if b == UInt8(ascii: " ") { return false }
                    if b == UInt8(ascii: "@") && at < 0 { at = i }
                }
                return at > 0 && at < v.count - 1
            }
        }

        static func isHexDigit(_ b: UInt8) -> Bool { (b >= 0x30 && b <= 0x39) || (b | 0x20 >= 0x61 && b | 0x20 <= 0x66) }
        static func isAlphanumeric(_ b: UInt8) -> Bool { (b >= 0x30 && b <= 0x39) || (b | 0x20 >= 0x61 && b | 0x20 <= 0x7A) }
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
    static func problems(_ table: InventoryTable, fieldCountRows: Int, duplicateKeyRows: Int, strict: Bool) -> [Problem] {
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
            problems.append(Problem(.inventorySuspectValues, severity, at: headerLine,
                                    "column \"\(name)\" (\(column.what)): \(unlike) of \(filled) values do not look like \(column.shape.rawValue), e.g. "
                                    + examples.joined(separator: ", "), hint: hint))
        }
        return problems
    }
}
