import AppConfigSpec

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

        /// Whether `v` (not empty) has this shape.
        func fits(_ v: UnsafeBufferPointer<UInt8>) -> Bool {
            switch self {
            case .serialNumber:
                // Letters, digits and dashes (Apple's 10-12 characters; other vendors' longer).
                return v.count <= 40 && v.allSatisfy { Self.isAlphanumeric($0) || $0 == UInt8(ascii: "-") }
            case .udid:
                // 40 hex digits (before iPhone XS), 8-16 hex digits, or a UUID.
                let parts = v.split(separator: UInt8(ascii: "-"), omittingEmptySubsequences: false)
                guard parts.allSatisfy({ $0.allSatisfy(Self.isHexDigit) }) else { return false }
                let lengths = parts.map(\.count)
                return lengths == [40] || lengths == [8, 16] || lengths == [8, 4, 4, 4, 12]
            case .imei:
                // 14 to 16 digits (IMEI, IMEISV), in groups separated by spaces.
                let digits = v.filter { $0 != UInt8(ascii: " ") }
                return (14...16).contains(digits.count) && digits.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
            case .macAddress:
                let parts = v.split(omittingEmptySubsequences: false) { $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: "-") }
                return (parts.count == 6 && parts.allSatisfy { $0.count == 2 && $0.allSatisfy(Self.isHexDigit) })
                    || (parts.count == 1 && v.count == 12 && v.allSatisfy(Self.isHexDigit))
            case .email:
                guard let at = v.firstIndex(of: UInt8(ascii: "@")) else { return false }
                return at > 0 && at < v.count - 1 && !v.contains { $0 == UInt8(ascii: " ") }
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

    /// The warnings (errors when `strict`) for `table`: checked on every row, a few milliseconds
    /// for a million devices.
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
        for (slot, what, shape) in checkedColumns(table) {
            var filled = 0, unlike = 0
            var examples: [String] = []
            table.withColumn(slot) { column in
                for row in 0..<table.rowCount {
                    let v = column.value(row: row)
                    if v.isEmpty { continue }
                    filled += 1
                    if shape.fits(v) { continue }
                    unlike += 1
                    if examples.count < 3 { examples.append("\"\(String(decoding: v.prefix(40), as: UTF8.self))\" (line \(table.line(of: row)))") }
                }
            }
            guard unlike > 0 else { continue }
            let column = table.header[table.keptColumns[slot]]
            problems.append(Problem(.inventorySuspectValues, severity, at: headerLine,
                                    "column \"\(column)\" (\(what)): \(unlike) of \(filled) values do not look like \(shape.rawValue), e.g. "
                                    + examples.joined(separator: ", "), hint: hint))
        }
        return problems
    }
}
