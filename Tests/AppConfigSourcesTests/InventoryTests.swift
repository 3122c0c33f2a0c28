import AppConfigCore
import AppConfigSources
import AppConfigSpec
import TestSupport
import Testing

/// The inventory CSV reader: RFC 4180, Jamf column names, keys, and every bad row with its line.
@Suite("Inventory CSV")
struct InventoryTests {
    func table(_ text: String, _ configure: (inout InventoryOptions) -> Void = { _ in }) throws -> InventoryTable {
        var options = InventoryOptions()
        configure(&options)
        return try InventoryTable(bytes: Array(text.utf8), file: "inv.csv", options: options)
    }

    @Test("quotes, doubled quotes, newlines inside quotes, CRLF and LF, a BOM, a trailing line break")
    func rfc4180() throws {
        let t = try table("\u{FEFF}UDID,Serial Number,Notes\r\nU1,S1,\"a, \"\"quoted\"\"\r\nvalue\"\nU2,S2,plain\r\nU3,S3,\"\"\n")
        #expect(t.rowCount == 3)
        #expect(t.problems.isEmpty)
        let notes = try #require(t.slot(ofColumn: "notes"))
        #expect(t.string(row: 0, slot: notes) == "a, \"quoted\"\r\nvalue")
        #expect(t.string(row: 1, slot: notes) == "plain")
        #expect(t.string(row: 2, slot: notes) == "")
        #expect((0..<3).map { t.line(of: $0) } == [2, 4, 5])
        #expect(t.deviceKey(2) == "U3")
    }

    @Test("a column's view reads what the table does, in every row and kept slot")
    func columnView() throws {
        let t = try table("UDID,Serial Number,Notes\nU1,S1,\"a, \"\"b\"\"\"\nU2,,plain\nU3,S3,\n")
        for slot in 0..<t.keptColumns.count {
            let values = t.withColumn(slot) { column in
                (0..<t.rowCount).map { row in
                    column.prefetchRange(row: row)
                    column.prefetchValue(row: row)
                    return String(decoding: column.value(row: row), as: UTF8.self)
                }
            }
            #expect(values == (0..<t.rowCount).map { t.string(row: $0, slot: slot) })
        }
        let notes = try #require(t.slot(ofColumn: "notes"))
        #expect(t.withColumn(notes) { c in (0..<3).map { String(decoding: c.value(row: $0), as: UTF8.self) } } == ["a, \"b\"", "plain", ""])
    }

    @Test("semicolon and tab delimiters")
    func delimiters() throws {
        let semi = try table("UDID;Model\nU1;iPad14,5\n") { $0.delimiter = UInt8(ascii: ";") }
        #expect(semi.string(row: 0, slot: semi.variableSlots[.model]!) == "iPad14,5")
        let tab = try table("UDID\tModel\nU1\tiPhone 15\n") { $0.delimiter = 0x09 }
        #expect(tab.string(row: 0, slot: tab.variableSlots[.model]!) == "iPhone 15")
    }

    @Test("Jamf export headers map to device variables without configuration; --map overrides")
    func mapping() throws {
        let t = try table(" UDID ,Serial Number,Wi-Fi MAC Address,IMEI,ICCID,MEID,Device Phone Number,Model,Asset Tag\nu,s,w,i,c,m,p,mo,a\n")
        let expected: [DeviceVariable: String] = [.udid: "u", .serialNumber: "s", .wifiMacAddress: "w", .imei: "i", .iccid: "c",
                                                  .meid: "m", .phoneNumber: "p", .model: "mo"]
        for (v, value) in expected { #expect(t.string(row: 0, slot: t.variableSlots[v]!) == value, "\(v)") }
        #expect(t.variableSlots[.imsi] == nil)
        let mapped = try table("UDID,Asset Tag,Serial Number\nu,a,s\n") { $0.columnMap[.serialNumber] = "asset tag" }
        #expect(mapped.string(row: 0, slot: mapped.variableSlots[.serialNumber]!) == "a")
    }

    @Test("the device key: UDID, else Serial Number, else --device-key")
    func deviceKey() throws {
        #expect(try table("Serial Number,UDID\ns,u\n").deviceKey(0) == "u")
        #expect(try table("Serial Number,Name\ns,n\n").deviceKey(0) == "s")
        #expect(try table("Name,Asset Tag\nn,a\n") { $0.deviceKeyColumn = "Asset Tag" }.deviceKey(0) == "a")
        #expect(throws: Problem(.csvNoDeviceKey, at: Location(file: "inv.csv", line: 1),
                                "no UDID or Serial Number column to name devices; give --device-key COLUMN")) {
            try table("Name,Asset Tag\nn,a\n")
        }
        #expect(throws: Problem(.csvUnknownColumn, at: Location(file: "inv.csv", line: 1), "no column \"Nope\" (--device-key); columns: UDID")) {
            try table("UDID\nu\n") { $0.deviceKeyColumn = "Nope" }
        }
    }

    struct Bad: CustomTestStringConvertible, Sendable {
        var name: String
        var bytes: [UInt8]
        var problems: [Problem]
        var rows: Int
        var testDescription: String { name }
    }

    @Test(arguments: [
        Bad(name: "unterminated quote", bytes: Array("UDID,Notes\nU1,ok\nU2,\"never\nclosed\n".utf8),
            problems: [Problem(.csvUnterminatedQuote, at: Location(file: "inv.csv", line: 3), "the quoted field opened on line 3 is never closed")], rows: 1),
        Bad(name: "wrong field count", bytes: Array("UDID,Notes\nU1,a,b\nU2,c\nU3\n".utf8),
            problems: [Problem(.csvFieldCount, at: Location(file: "inv.csv", line: 2), "the row has 3 fields; the header has 2"),
                       Problem(.csvFieldCount, at: Location(file: "inv.csv", line: 4), "the row has 1 field; the header has 2")], rows: 1),
        Bad(name: "invalid UTF-8", bytes: Array("UDID,Notes\nU1,ok\nU2,caf".utf8) + [0xE9] + Array("\nU3,fine\n".utf8),
            problems: [Problem(.csvInvalidUTF8, at: Location(file: "inv.csv", line: 3), "invalid UTF-8 (byte 0xE9)")], rows: 2),
        Bad(name: "text after a closing quote", bytes: Array("UDID,Notes\nU1,\"a\"b\nU2,c\n".utf8),
            problems: [Problem(.csvTextAfterQuote, at: Location(file: "inv.csv", line: 2), "text after the closing quote of field 2")], rows: 1),
        Bad(name: "duplicate device key: both lines named", bytes: Array("UDID,Notes\nU1,a\nU2,b\nU1,c\n".utf8),
            problems: [Problem(.csvDuplicateDeviceKey, at: Location(file: "inv.csv", line: 4, device: "U1"), "device key \"U1\" is also on line 2; this row is skipped")], rows: 2),
        Bad(name: "empty device key", bytes: Array("UDID,Notes\n,a\nU2,b\n".utf8),
            problems: [Problem(.csvEmptyDeviceKey, at: Location(file: "inv.csv", line: 2), "the device key column \"UDID\" is empty")], rows: 1),
        Bad(name: "duplicate column", bytes: Array("UDID,Notes, notes\nU1,a,b\n".utf8),
            problems: [Problem(.csvDuplicateColumn, at: Location(file: "inv.csv", line: 1), "column \"notes\" appears twice (columns 2 and 3); the first is used")], rows: 1),
        Bad(name: "device keys equal but for case", bytes: Array("UDID,Notes\nabc-1,a\nABC-1,b\nAbc-2,c\n".utf8),
            problems: [Problem(.csvDuplicateDeviceKey, at: Location(file: "inv.csv", line: 3, device: "ABC-1"),
                               "device key \"ABC-1\" differs only in case from \"abc-1\" on line 2 (one file on a case-insensitive filesystem); this row is skipped")],
            rows: 2),
        Bad(name: "blank lines before the header are passed over", bytes: Array("\n\r\n\nUDID,Notes\nU1,a\n\nU2,b\nU3\n".utf8),
            problems: [Problem(.csvFieldCount, at: Location(file: "inv.csv", line: 8), "the row has 1 field; the header has 2")], rows: 2),
    ])
    func badRows(_ bad: Bad) throws {
        let t = try InventoryTable(bytes: bad.bytes, file: "inv.csv")
        #expect(t.problems == bad.problems)
        #expect(t.rowCount == bad.rows)
    }

    /// Fields are scanned 16, 8 and 1 bytes at a time: a byte of 0x80 or above is seen wherever
    /// it stands (first, last, past a block, in the file's last bytes), quoted or not, and its
    /// field's end found exactly.
    @Test("invalid UTF-8 is found at every place in a field; valid text passes", arguments: [false, true])
    func utf8AtEveryOffset(quoted: Bool) throws {
        for length in [1, 7, 8, 9, 15, 16, 17, 31, 33, 40] {
            for at in 0..<length {
                for last in [false, true] {
                    var field = [UInt8](repeating: UInt8(ascii: "a"), count: length)
                    field[at] = 0xFF
                    let text = quoted ? [UInt8(ascii: "\"")] + field + [UInt8(ascii: "\"")] : field
                    let bytes = Array("UDID,Notes,Tail\nU1,".utf8) + (last ? Array("x,".utf8) + text : text + Array(",x".utf8))
                        + (last ? [] : Array("\nU2,ok,y\n".utf8))
                    let t = try InventoryTable(bytes: bytes, file: "inv.csv")
                    #expect(t.problems == [Problem(.csvInvalidUTF8, at: Location(file: "inv.csv", line: 2), "invalid UTF-8 (byte 0xFF)")],
                            "length \(length), at \(at), last \(last)")
                    #expect(t.rowCount == (last ? 0 : 1))
                    // The same place holding a two-byte letter: no problem, and the field read whole.
                    var good = field
                    good.replaceSubrange(at...at, with: Array("é".utf8))
                    let goodText = quoted ? [UInt8(ascii: "\"")] + good + [UInt8(ascii: "\"")] : good
                    let fine = try InventoryTable(bytes: Array("UDID,Notes,Tail\nU1,".utf8) + goodText + Array(",x".utf8), file: "inv.csv")
                    #expect(fine.problems.isEmpty && fine.rowCount == 1)
                    #expect(fine.value(row: 0, slot: try #require(fine.slot(ofColumn: "Notes"))).elementsEqual(good))
                }
            }
        }
    }

    /// The header used to be checked for duplicates in quadratic time (40,000 columns: 19.5 s).
    @Test("a header of 10,000 columns loads; one more is a clear error")
    func columnLimit() throws {
        func wide(_ columns: Int) -> String {
            "UDID," + (1..<columns).map { "c\($0)" }.joined(separator: ",") + "\nU1" + String(repeating: ",x", count: columns - 1) + "\n"
        }
        let t = try table(wide(InventoryTable.maxColumns))
        #expect(t.rowCount == 1 && t.header.count == 10_000 && t.problems.isEmpty)
        #expect(t.string(row: 0, slot: try #require(t.slot(ofColumn: "c9999"))) == "x")
        #expect(throws: Problem(.csvTooManyColumns, at: Location(file: "inv.csv", line: 1), "the header has 40000 columns; at most 10000 are read")) {
            try table(wide(40_000))
        }
    }

    @Test("--strict fails on the first bad row, naming it")
    func strict() throws {
        #expect(throws: Problem(.csvFieldCount, at: Location(file: "inv.csv", line: 3), "the row has 1 field; the header has 2")) {
            try table("UDID,Notes\nU1,a\nU2\n") { $0.strict = true }
        }
    }

    @Test("only the columns needed are kept, and an unknown one is named")
    func extraColumns() throws {
        let t = try table("UDID,Asset Tag,Building,Notes\nu,a,b,n\n") { $0.extraColumns = ["Building"] }
        #expect(t.keptColumns.map { t.header[$0] } == ["UDID", "Building"])
        #expect(t.string(row: 0, slot: t.slot(ofColumn: "building")!) == "b")
        #expect(throws: Problem(.csvUnknownColumn, at: Location(file: "inv.csv", line: 1), "no column \"Nope\" ($(device.Nope)); columns: UDID")) {
            try table("UDID\nu\n") { $0.extraColumns = ["Nope"] }
        }
    }

    @Test("the Jamf exports in the public corpus", .enabled(if: Paths.hasCorpus, "../shared/corpus is absent"))
    func corpus() throws {
        let dir = "inventory/jamf-reports-community/"
        let builtin = try InventoryTable.load(try #require(Paths.corpusFile(dir + "jamf1128_mobile_builtin@a226472a.csv")))
        #expect(builtin.header.count == 107)
        #expect(builtin.rowCount == 4)
        #expect(builtin.preset == .jamfPro)
        // The fixture's UDIDs are made up (`FIXTURE-UDID-FXTRM0000001`): said, not refused.
        #expect(builtin.problems.isEmpty)
        #expect(builtin.exportChecks.map(\.code.rawValue) == [SourceCode.inventorySuspectValues.rawValue])
        #expect(builtin.deviceKey(0) == "FIXTURE-UDID-FXTRM0000001")
        #expect(builtin.string(row: 0, slot: builtin.variableSlots[.serialNumber]!) == "FXTRM0000001")
        #expect(builtin.string(row: 1, slot: builtin.variableSlots[.model]!) == "iPad (10th generation)")
        #expect(builtin.string(row: 0, slot: builtin.userKeySlot!) == "user1@example.org")

        let export = try InventoryTable.load(try #require(Paths.corpusFile(dir + "jamf1128_mobile_exportonly@c444c5e8.csv")))
        #expect(export.header.count == 124)
        #expect(export.header.contains("Application Version"))  // " Application Version" trimmed
        // Each device's apps, groups and profiles are rows of their own with every identifying
        // column empty: 16 data rows, 4 devices, 12 continuation rows, no error; one duplicate column.
        #expect(export.problems.map(\.code.rawValue) == [SourceCode.csvDuplicateColumn.rawValue])
        #expect((export.dataRows, export.rowCount, export.continuationRows) == (16, 4, 12))
        #expect(export.delimiter == UInt8(ascii: ",") && export.delimiterDetected)

        // The shifted export (its columns hold their neighbours' values): read only with --allow-suspect.
        var suspect = InventoryOptions()
        suspect.allowSuspect = true
        let harbor = try InventoryTable.load(try #require(Paths.corpusFile(dir + "harbor_mobile_insights_all_devices.csv")), options: suspect)
        #expect(harbor.header.count == 33)
        #expect(harbor.dataRows == 227)
        #expect(harbor.rowCount + harbor.continuationRows + harbor.problems.filter { $0.code == .csvDuplicateDeviceKey }.count == 227)
    }

    @Test("the delimiter is found from the header: the one it holds most of outside quotes, ',' on a tie", arguments: [
        ("UDID;Model;Notes\nU1;iPad14,5;a\n", UInt8(ascii: ";")),
        ("UDID\tModel\nU1\tiPad\n", 0x09),
        ("UDID,\"Model;x\"\nU1,iPad\n", UInt8(ascii: ",")),
        ("UDID\nU1\n", UInt8(ascii: ",")),
        ("\n\nUDID;Model\nU1;iPad\n", UInt8(ascii: ";")),
    ])
    func detectedDelimiter(text: String, delimiter: UInt8) throws {
        let t = try table(text)
        #expect(t.delimiter == delimiter && t.delimiterDetected)
        #expect(t.deviceKey(0) == "U1")
    }

    @Test("a one-column header holding another delimiter gets a hint, not \"no UDID column\"")
    func wrongDelimiterHint() throws {
        #expect(throws: Problem(.csvNoDeviceKey, at: Location(file: "inv.csv", line: 1),
                                "the header is one column, \"UDID;Model\", which holds ';': the file is not delimited by ','; give --delimiter ';'")) {
            try table("UDID;Model\nU1;iPad\n") { $0.delimiter = UInt8(ascii: ",") }
        }
    }

    @Test("Jamf School, Intune and Workspace ONE headers map without configuration; named columns match folded", arguments: [
        ("DeviceUDID,SerialNumber,WiFiMAC,OwnerEmail,ModelName\nu,s,w,o@x,m\n", "o@x"),
        ("Device name,Serial number,IMEI,Wi-Fi MAC,Primary user UPN,Primary user email address,Model,Phone number\nd,s,i,w,upn@x,mail@x,m,p\n", "mail@x"),
        ("Friendly Name,UDID,Serial Number,MAC Address,Email Address,Username,Model\nf,u,s,w,e@x,user,m\n", "e@x"),
    ])
    func presets(text: String, userKey: String) throws {
        let t = try table(text)
        #expect(t.string(row: 0, slot: try #require(t.variableSlots[.serialNumber])) == "s")
        #expect(t.string(row: 0, slot: try #require(t.variableSlots[.wifiMacAddress])) == "w")
        #expect(t.string(row: 0, slot: try #require(t.variableSlots[.model])) == "m")
        #expect(t.string(row: 0, slot: try #require(t.userKeySlot)) == userKey)
        let named = try table(text) { $0.deviceKeyColumn = "serial-number"; $0.userKeyColumn = "SERIAL_number" }
        #expect(named.deviceKey(0) == "s")
        #expect(named.string(row: 0, slot: try #require(named.userKeySlot)) == "s")
    }
}
