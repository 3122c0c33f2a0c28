import AppConfigCore
@testable import AppConfigSources
import AppConfigSpec
import TestSupport
import Testing

/// What the engine read: which preset a header is, which column feeds each variable, and the
/// checks that catch an export whose rows do not line up with its header.
@Suite("inventory presets, the mapping and the export checks")
struct ExportCheckTests {
    func table(_ text: String, _ configure: (inout InventoryOptions) -> Void = { _ in }) throws -> InventoryTable {
        var options = InventoryOptions()
        options.userVariablesFromColumns = true  // no directory: the inventory's columns are the users
        configure(&options)
        return try InventoryTable(bytes: Array(text.utf8), file: "inv.csv", options: options)
    }

    func mapping(_ t: InventoryTable) -> [String: String] {
        let m = SourceMapping(fleet: Fleet(inventory: t, users: nil), attributes: AttributeMap())
        return Dictionary(uniqueKeysWithValues: m.sources.map { ($0.variable.description, $0.source) })
    }

    @Test("each vendor's header: its preset, user key and user columns; the device's name is never the user's", arguments: [
        // Jamf Pro (the columns of its mobile device export): Display Name is the device's.
        ("Display Name,Serial Number,UDID,Wi-Fi MAC Address,Username,Full Name,Email Address,Last Inventory Update\n"
         + "Lobby Apple TV,C07T6QCZG9RM,00008030-001A2B3C4D5E6F70,08:66:98:D7:A6:D0,jdoe,Jane Doe,jane@corp.example,2026-11-01\n",
         "Jamf Pro", "Email Address", ["displayName": "column \"Full Name\"", "userName": "column \"Username\"",
                                       "emailAddress": "column \"Email Address\"", "firstName": "missing"]),
        // Jamf School: the owner's columns.
        ("Name,DeviceUDID,SerialNumber,WiFiMAC,OwnerEmail,OwnerUsername,OwnerFirstName,OwnerLastName,OwnerName\n"
         + "Cart 3,00008030-001A2B3C4D5E6F70,DMPXK2ABCD12,08:66:98:d7:a6:d0,ola@school.example,ola.n,Ola,Nordmann,Ola Nordmann\n",
         "Jamf School", "OwnerEmail", ["userName": "column \"OwnerUsername\"", "firstName": "column \"OwnerFirstName\"",
                                       "lastName": "column \"OwnerLastName\"", "displayName": "column \"OwnerName\""]),
        // Microsoft Intune's device export.
        ("Device name,Serial number,IMEI,Wi-Fi MAC,Primary user UPN,Primary user email address,Primary user display name\n"
         + "JDOE-IPHONE,F17XK2ABCD12,35 123456 789012 3,0866.98d7.a6d0,jdoe@corp.example,jane.doe@corp.example,Jane Doe\n",
         "Microsoft Intune", "Primary user email address", ["upn": "column \"Primary user UPN\"", "displayName": "column \"Primary user display name\"",
                                                            "userName": "column \"Primary user UPN\""]),
        // Workspace ONE's device list.
        ("Friendly Name,UDID,Serial Number,MAC Address,Email Address,Username,First Name,Last Name\n"
         + "Jane iPad,00008030-001A2B3C4D5E6F70,F17XK2ABCD12,08-66-98-D7-A6-D0,jane@corp.example,jdoe,Jane,Doe\n",
         "Workspace ONE", "Email Address", ["firstName": "column \"First Name\"", "lastName": "column \"Last Name\"", "displayName": "missing"]),
        // Anything else: a user variable's own name is its column.
        ("UDID,displayName,mail\n00008030-001A2B3C4D5E6F70,Jane Doe,jane@corp.example\n",
         "generic", nil, ["displayName": "column \"displayName\""]),
    ] as [(String, String, String?, [String: String])])
    func presets(text: String, preset: String, userKey: String?, expected: [String: String]) throws {
        let t = try table(text)
        #expect(t.preset.name == preset)
        #expect(t.userKeySlot.map { t.header[t.keptColumns[$0]] } == userKey)
        let m = mapping(t)
        for (variable, source) in expected { #expect(m[variable] == source, "\(variable)") }
        // The generic reading of a Jamf Pro header took the device's name for the user's.
        if preset == "Jamf Pro" {
            let generic = try table(text) { $0.preset = .generic }
            #expect(mapping(generic)["displayName"] == "column \"Display Name\"")
        }
    }

    @Test("the mapping's keys line: device key, user key and the directory attribute it is matched against")
    func keysLine() throws {
        let t = try table("Serial Number,Email Address,Model\nF17XK2ABCD12,jane@corp.example,iPad\n")
        let m = SourceMapping(fleet: Fleet(inventory: t, users: nil), attributes: AttributeMap())
        #expect(m.keys == "device key \"Serial Number\"; user key \"Email Address\"")
        #expect(m.line(for: [.device(.model), .user(.emailAddressDomain)])
                == "mapping (generic export): device key \"Serial Number\"; user key \"Email Address\"; "
                + "emailAddressDomain <- column \"Email Address\" (after the @), model <- column \"Model\"")
        let keyless = try table("UDID,Model\n00008030-001A2B3C4D5E6F70,iPad\n")
        #expect(SourceMapping(fleet: Fleet(inventory: keyless, users: nil), attributes: AttributeMap()).keys
                == "device key \"UDID\"; no user key column: devices have no user")
    }

    @Test("values shaped unlike their variable: counted, with examples and lines", arguments: [
        ("UDID,Serial Number\n00008030-001A2B3C4D5E6F70,38.126.164.226\n00008030-001A2B3C4D5E6F71,F17XK2ABCD12\n",
         "column \"Serial Number\" (serialNumber): 1 of 2 values do not look like serial numbers, e.g. \"38.126.164.226\" (line 2)"),
        ("UDID,Model\nFIXTURE-UDID-1,iPad\n0123456789abcdef0123456789abcdef01234567,iPad\n6F1A3E2C-1B2D-4C3E-8F4A-5B6C7D8E9F00,iPad\n",
         "column \"UDID\" (udid): 1 of 3 values do not look like UDIDs, e.g. \"FIXTURE-UDID-1\" (line 2)"),
        ("UDID,IMEI\n00008030-001A2B3C4D5E6F70,35 123456 789012 3\n00008030-001A2B3C4D5E6F71,87\n",
         "column \"IMEI\" (imei): 1 of 2 values do not look like IMEIs, e.g. \"87\" (line 3)"),
        ("UDID,Wi-Fi MAC Address\n00008030-001A2B3C4D5E6F70,2017-06-06 15:43:44\n00008030-001A2B3C4D5E6F71,086698D7A6D0\n",
         "column \"Wi-Fi MAC Address\" (wifiMacAddress): 1 of 2 values do not look like MAC addresses, e.g. \"2017-06-06 15:43:44\" (line 2)"),
        ("UDID,Email Address\n00008030-001A2B3C4D5E6F70,25\n00008030-001A2B3C4D5E6F71,@corp\n00008030-001A2B3C4D5E6F72,a@b\n",
         "column \"Email Address\" (emailAddress): 2 of 3 values do not look like email addresses, e.g. \"25\" (line 2), \"@corp\" (line 3)"),
    ])
    func shapes(text: String, message: String) throws {
        let t = try table(text)
        #expect(t.exportChecks == [Problem(.inventorySuspectValues, .warning, at: Location(file: "inv.csv", line: 1), message,
                                       hint: "does the header line up with the rows? (--strict-inventory refuses such an export)")])
        #expect(throws: Problem(.inventorySuspectValues, .error, at: Location(file: "inv.csv", line: 1), message,
                                hint: "does the header line up with the rows? (--strict-inventory refuses such an export)")) {
            try table(text) { $0.strictInventory = true }
        }
    }

    @Test("most rows wider than the header; most keys repeated")
    func widthAndDuplicates() throws {
        let wide = try table("UDID,Model\n" + (0..<3).map { "00008030-001A2B3C4D5E6F7\($0),iPad,extra\n" }.joined() + "00008030-001A2B3C4D5E6F79,iPad\n")
        #expect(wide.exportChecks.first?.code.rawValue == SourceCode.inventoryHeaderWidth.rawValue)
        #expect(wide.exportChecks.first?.message == "3 of 4 rows have another number of fields than the header's 2")
        let repeated = try table("Serial Number,Model\n" + (0..<5).map { _ in "10.0.0.1,iPad\n" }.joined())
        #expect(repeated.exportChecks.map(\.code.rawValue).prefix(2) == [SourceCode.inventoryDuplicateKeys.rawValue, SourceCode.inventorySuspectValues.rawValue])
        #expect(repeated.exportChecks.first?.message == "4 of 5 rows repeat a device key of column \"Serial Number\": a device key names one device")
    }

    @Test("device keys of only spaces or with a line break are refused with their line, not taken silently")
    func unusableKeys() throws {
        let t = try table("UDID,Model\n\"   \",iPad\n\"A\nB\",iPad\n00008030-001A2B3C4D5E6F70,iPad\n")
        #expect(t.rowCount == 1)
        #expect(t.problems == [
            Problem(.csvBadDeviceKey, at: Location(file: "inv.csv", line: 2), "the device key column \"UDID\" holds only spaces; this row is skipped"),
            Problem(.csvBadDeviceKey, at: Location(file: "inv.csv", line: 3, device: "A\\nB"),
                    "the device key column \"UDID\" holds a control character (a line feed); this row is skipped"),
        ])
        #expect(throws: Problem(.csvBadDeviceKey, at: Location(file: "inv.csv", line: 2, device: "a\\tb"),
                                "the device key column \"UDID\" holds a control character (a tab); this row is skipped")) {
            try table("UDID\n\"a\tb\"\n") { $0.strict = true }
        }
    }

    @Test("long device keys with a control byte, only spaces, or doubled quotes are refused in whichever part of the file they stand",
          arguments: [1, 2, 3])
    func unusableLongKeys(parts: Int) throws {
        let good = (0..<30).map { "00008030-0000000000\(String(format: "%04d", $0)),iPad\n" }.joined()
        let text = "UDID,Model\n" + good + "\"            \",iPad\n" + good.replacingOccurrences(of: "-00000", with: "-10000")
            + "\"00008030-AAAA\tBBBB\",iPad\n\"00008030-\"\"CCCC\"\"\u{7F}\",iPad\n\"00008030-\"\"DDDD\"\"\",iPad\n"
        // Keys made up for the test, unlike UDIDs in every row: taken as they are.
        let t = try table(text) { $0.scanParts = parts; $0.allowSuspect = true }
        #expect(t.rowCount == 61)
        #expect(t.problems == [
            Problem(.csvBadDeviceKey, at: Location(file: "inv.csv", line: 32), "the device key column \"UDID\" holds only spaces; this row is skipped"),
            Problem(.csvBadDeviceKey, at: Location(file: "inv.csv", line: 63, device: "00008030-AAAA\\tBBBB"),
                    "the device key column \"UDID\" holds a control character (a tab); this row is skipped"),
            Problem(.csvBadDeviceKey, at: Location(file: "inv.csv", line: 64, device: "00008030-\"CCCC\"\\u007F"),
                    "the device key column \"UDID\" holds a control character (0x7F); this row is skipped"),
        ])
    }

    @Test("a device key's check eight bytes at a time says what the byte loop says: seeded keys with control bytes, DEL, spaces and UTF-8 anywhere")
    func keyCheckAgainstBytes() {
        var random = SplitMix64(seed: 8)
        let alphabet: [UInt8] = [0x20, 0x20, 0x20, 0x09, 0x0A, 0x1F, 0x00, 0x7F, 0x7E, 0x21, 0x41, 0x30, 0x2D, 0x80, 0xC3, 0xA9, 0xFF]
        for _ in 0..<20_000 {
            let count = Int(random.next() % 40)
            var key = (0..<count).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] }
            if random.next() % 2 == 0 { key = key.map { $0 < 0x20 || $0 == 0x7F ? 0x41 : $0 } }  // most keys have no control byte
            let (fast, slow) = key.withView { (DeviceKeyCheck.problem($0), DeviceKeyCheck.problemByBytes($0)) }
            guard fast == slow else {
                Issue.record("\(key): \(String(describing: fast)), the byte loop says \(String(describing: slow))")
                return
            }
        }
    }

    @Test("device keys that differ only in Unicode normalization are a hint, not an error")
    func keyNormalization() throws {
        let t = try table("Asset Tag,Model\nJOS\u{C9}-1,iPad\nJOSE\u{301}-1,iPad\nPLAIN1,iPad\n") { $0.deviceKeyColumn = "Asset Tag" }
        #expect(t.rowCount == 3)
        #expect(t.exportChecks.map(\.message) == ["1 device key differs from another only in Unicode normalization, e.g. \"JOSE\u{301}-1\" (line 3) "
                                                 + "and \"JOS\u{C9}-1\" (line 2): two devices here, the same name to a reader (export in one normalization)"])
        #expect(t.exportChecks.map(\.severity) == [.warning])
    }

    @Test("the shifted Jamf Pro export of the corpus is flagged with its examples", .enabled(if: Paths.hasCorpus, "../shared/corpus is absent"))
    func shiftedJamfProExport() throws {
        let path = try #require(Paths.corpusFile("inventory/jamf-reports-community/harbor_mobile_insights_all_devices.csv"))
        var options = InventoryOptions()
        options.userVariablesFromColumns = true
        // Every value of the columns it reads (the device key aside) is suspect: refused unless --allow-suspect.
        #expect(throws: Problem(.inventorySuspectValues, .error, at: Location(file: path, line: 1),
                                "column \"Wi-Fi MAC Address\" (wifiMacAddress): all 16 of 16 values do not look like MAC addresses, e.g. \"2017-06-06 15:43:44\" (line 2), \"2019-05-22 15:00:09\" (line 6), \"2018-05-06 15:10:46\" (line 14)",
                                hint: "the export is shifted: no value of the column can be right (--allow-suspect renders it anyway)")) {
            try InventoryTable.load(path, options: options)
        }
        options.allowSuspect = true
        let t = try InventoryTable.load(path, options: options)
        #expect(t.preset == .jamfPro)
        let checks = t.exportChecks.map(\.message)
        #expect(checks == [
            "19 of 35 rows repeat a device key of column \"Serial Number\": a device key names one device",
            "column \"Serial Number\" (serialNumber): 16 of 16 values do not look like serial numbers, e.g. \"38.126.164.226\" (line 2), \"86.41.56.215\" (line 6), \"83.202.103.186\" (line 14)",
            "column \"Wi-Fi MAC Address\" (wifiMacAddress): 16 of 16 values do not look like MAC addresses, e.g. \"2017-06-06 15:43:44\" (line 2), \"2019-05-22 15:00:09\" (line 6), \"2018-05-06 15:10:46\" (line 14)",
            "column \"Email Address\" (emailAddress): 16 of 16 values do not look like email addresses, e.g. \"0\" (line 2), \"25\" (line 6), \"50\" (line 14)",
        ])
        options.strictInventory = true
        #expect(throws: Problem(.inventoryDuplicateKeys, .error, at: Location(file: path, line: 1),
                                "19 of 35 rows repeat a device key of column \"Serial Number\": a device key names one device",
                                hint: "does the header line up with the rows? (--strict-inventory refuses such an export)")) {
            try InventoryTable.load(path, options: options)
        }
    }
}
