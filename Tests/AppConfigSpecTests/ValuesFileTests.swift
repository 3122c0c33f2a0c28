import AppConfigCore
import AppConfigSpec
import Foundation
import TestSupport
import Testing

/// Admin values files: JSON (our reader, with positions) and plists (libplist), typed against a spec.
@Suite("Admin values files")
struct ValuesFileTests {
    static let spec: Spec = {
        let path = Paths.fixture("specs/values-target.xml")
        let result = SpecParser.parse(try! readFileBytes(path), file: path)
        precondition(!result.hasErrors, "\(result.diagnostics)")
        return result.spec!
    }()

    func read(_ json: String) -> AdminValuesResult {
        AdminValuesReader.read(Array(json.utf8), file: "v.json", spec: Self.spec)
    }

    func value(_ result: AdminValuesResult, _ key: String) -> [AssignedValue.Item.Content]? {
        guard case .value(let v)? = result.values.entries[key] else { return nil }
        return v.items.map(\.content)
    }

    @Test("every type, templates and null, decoded exactly")
    func goodJSON() {
        let r = read("""
            {
              "serverURL": "https://$(ou).corp.example/$(serialNumber)",
              "domains": ["corp.example", "$(emailAddressDomain)"],
              "timeout": 30, "ports": [443, -1], "ratio": 2, "levels": [0.5, 1e2],
              "enabled": true, "expiry": "2027-01-31T12:00:00Z", "role": "staff"
            }
            """)
        #expect(r.diagnostics.isEmpty, "\(r.diagnostics)")
        #expect(value(r, "serverURL") == [.template(StringTemplate(parts: [
            .literal("https://"), .variable(.user(.ou)), .literal(".corp.example/"), .variable(.device(.serialNumber))]))])
        #expect(value(r, "domains") == [.literal(.string("corp.example")), .template(StringTemplate(parts: [.variable(.user(.emailAddressDomain))]))])
        #expect(value(r, "timeout") == [.literal(.integer(30))])
        #expect(value(r, "ports") == [.literal(.integer(443)), .literal(.integer(-1))])
        #expect(value(r, "ratio") == [.literal(.float(2))])
        #expect(value(r, "levels") == [.literal(.float(0.5)), .literal(.float(100))])
        #expect(value(r, "enabled") == [.literal(.boolean(true))])
        #expect(value(r, "expiry") == [.literal(.date(ISO8601.parse("2027-01-31T12:00:00Z")!))])
        #expect(value(r, "role") == [.literal(.string("staff"))])
        #expect(read(#"{"timeout": null}"#).values.entries.count == 1)
        if case .omitted? = read(#"{"timeout": null}"#).values.entries["timeout"] {} else { Issue.record("null must omit") }
    }

    struct Bad: CustomTestStringConvertible, Sendable {
        var json: String
        var code: DiagnosticCode
        var line: Int
        var column: Int
        var testDescription: String { "\(code.rawValue): \(json)" }
    }

    static let badCases: [Bad] = [
        Bad(json: "{\n \"timeout\": 30,\n}", code: .valuesSyntax, line: 3, column: 1),
        Bad(json: "{\"a\": \"\\x\"}", code: .valuesSyntax, line: 1, column: 10),
        Bad(json: "[1, 2]", code: .valuesRoot, line: 1, column: 1),
        Bad(json: #"{"credentials": [{"identifier": "x"}]}"#, code: .credentialSyntax, line: 1, column: 18),
        Bad(json: #"{"credentials": [{"identifier": "x", "kind": "password"}]}"#, code: .credentialField, line: 1, column: 18),
        Bad(json: #"{"credentials": [{"identifier": "x", "kind": "password", "UserName": "u"}, {"identifier": "x", "kind": "password", "UserName": "v"}]}"#,
            code: .credentialDuplicateIdentifier, line: 1, column: 76),
        Bad(json: "{\n  \"timout\": 30}", code: .valuesUnknownKey, line: 2, column: 3),
        Bad(json: "{\"timeout\":\n  \"30\"}", code: .valuesType, line: 2, column: 3),
        Bad(json: "{\"timeout\": 1.5}", code: .valuesType, line: 1, column: 13),
        Bad(json: "{\"enabled\": 1}", code: .valuesType, line: 1, column: 13),
        Bad(json: "{\"domains\": \"one\"}", code: .valuesType, line: 1, column: 13),
        Bad(json: "{\"ports\": [1, \"2\"]}", code: .valuesType, line: 1, column: 15),
        Bad(json: "{\"expiry\": \"tomorrow\"}", code: .valuesType, line: 1, column: 12),
        Bad(json: "{\"timeout\": 601}", code: .valuesConstraint, line: 1, column: 13),
        Bad(json: "{\"serverURL\": \"http://x\"}", code: .valuesConstraint, line: 1, column: 15),
        Bad(json: "{\"domains\": [\"a\", \"b\", \"c\"]}", code: .valuesConstraint, line: 1, column: 13),
        Bad(json: "{\"role\": \"boss\"}", code: .valuesConstraint, line: 1, column: 10),
        Bad(json: "{\"token\": \"\"}", code: .valuesRequiredEmpty, line: 1, column: 11),
        Bad(json: "{\"serverURL\": \"https://$(mail)\"}", code: .valuesVariableUnknown, line: 1, column: 15),
        Bad(json: "{\"serverURL\": \"https://$(ou\"}", code: .valuesTemplate, line: 1, column: 15),
        Bad(json: "{\"serverURL\": \"https://a/$5\"}", code: .valuesTemplate, line: 1, column: 15),
        Bad(json: "{\"serverURL\": \"https://$()\"}", code: .valuesTemplate, line: 1, column: 15),
        Bad(json: "{\"serverURL\": \"https://$(UDID)\"}", code: .variableSpelling, line: 1, column: 15),
        Bad(json: "{\"serverURL\": \"https://$(ou|lowr)\"}", code: .valuesTemplate, line: 1, column: 15),
        Bad(json: "{\"serverURL\": \"https://$(ou|replace:a)\"}", code: .valuesTemplate, line: 1, column: 15),
        Bad(json: "{\"serverURL\": \"https://$(ou|last:x)\"}", code: .valuesTemplate, line: 1, column: 15),
        Bad(json: "{\"serverURL\": \"https://$(ou|last:-1)\"}", code: .valuesTemplate, line: 1, column: 15),
        Bad(json: "{\"serverURL\": \"https://$(ou|substr:1:-2)\"}", code: .valuesTemplate, line: 1, column: 15),
        Bad(json: "{\"serverURL\": \"https://$(upn|split::0)\"}", code: .valuesTemplate, line: 1, column: 15),
        Bad(json: "{\"serverURL\": \"https://$(upn|split:@)\"}", code: .valuesTemplate, line: 1, column: 15),
        Bad(json: "{\"serverURL\": \"https://$(upn|substr:999999999)\"}", code: .valuesTemplate, line: 1, column: 15),
        Bad(json: "{\"serverURL\": \"https://x/$EMAIL\"}", code: .valuesForeignVariable, line: 1, column: 15),
        Bad(json: "{\"serverURL\": \"https://x/{DeviceSerialNumber}\"}", code: .valuesForeignVariable, line: 1, column: 15),
        Bad(json: "{\"serverURL\": \"https://x/{{serialnumber}}\"}", code: .valuesForeignVariable, line: 1, column: 15),
        Bad(json: "{\"serverURL\": \"https://x/$$DEPARTMENTID\"}", code: .valuesForeignLiteral, line: 1, column: 15),
        Bad(json: "{\"timeout\": 99999999999999999999}", code: .valuesSyntax, line: 1, column: 13),
        Bad(json: "{\"ratio\": 1e-400}", code: .valuesSyntax, line: 1, column: 11),
        Bad(json: "{\"ratio\": -1e400}", code: .valuesSyntax, line: 1, column: 11),
        Bad(json: "{\"timeout\": 5,\n \"timeout\": 6}", code: .valuesDuplicateKey, line: 2, column: 2),
        // Condition tests: one form a dictionary, a regular expression that compiles, groups in or out.
        Bad(json: #"{"values": {}, "assignments": [{"name": "a", "match": {"ou": {"not": "x", "contains": "y"}}, "values": {"timeout": 1}}]}"#,
            code: .assignmentSyntax, line: 1, column: 62),
        Bad(json: #"{"values": {}, "assignments": [{"name": "a", "match": {"ou": {"matches": "(x"}}, "values": {"timeout": 1}}]}"#,
            code: .assignmentSyntax, line: 1, column: 74),
        Bad(json: #"{"values": {}, "assignments": [{"name": "a", "match": {"group": {"contains": "x"}}, "values": {"timeout": 1}}]}"#,
            code: .assignmentSyntax, line: 1, column: 66),
        Bad(json: #"{"values": {}, "exclude": {"model": {"matchs": "Mac"}}}"#, code: .assignmentSyntax, line: 1, column: 37),
        Bad(json: #"{"values": {}, "exclude": [{}]}"#, code: .assignmentSyntax, line: 1, column: 28),
        // Assignments: each checked where it stands.
        Bad(json: "{\"assignments\": {}}", code: .assignmentSyntax, line: 1, column: 17),
        Bad(json: "{\"values\": {}, \"asignments\": []}", code: .assignmentSyntax, line: 1, column: 16),
        Bad(json: "{\"assignments\": [\n {\"name\": \"a\", \"match\": {}, \"values\": {}}]}", code: .assignmentSyntax, line: 2, column: 25),
        Bad(json: "{\"assignments\": [\n {\"name\": \"a\", \"match\": {\"ou\": 5}, \"values\": {}}]}", code: .assignmentSyntax, line: 2, column: 32),
        Bad(json: "{\"assignments\": [\n {\"name\": \"a\", \"values\": {}}]}", code: .assignmentSyntax, line: 2, column: 2),
        Bad(json: "{\"assignments\": [\n {\"name\": \"a\", \"match\": {\"ou\": \"x\"}, \"value\": {}}]}", code: .assignmentSyntax, line: 2, column: 38),
        Bad(json: "{\"assignments\": [\n {\"name\": \"a\", \"match\": {\"grup\": \"x\"}, \"values\": {}}]}", code: .assignmentMatchKey, line: 2, column: 26),
        Bad(json: "{\"assignments\": [\n {\"name\": \"a\", \"match\": {\"group\": [\"Sales\", \"CN=x,,DC=y\"]}, \"values\": {}}]}", code: .assignmentGroupDN, line: 2, column: 35),
        Bad(json: "{\"assignments\": [{\"name\": \"a\", \"match\": {\"ou\": \"x\"}, \"values\": {}},\n {\"name\": \"a\", \"match\": {\"ou\": \"y\"}, \"values\": {}}]}", code: .assignmentDuplicateName, line: 2, column: 2),
        Bad(json: "{\"assignments\": [\n {\"name\": \"a\", \"match\": {\"ou\": \"x\"}, \"values\": {\"timeout\": \"5\"}}]}", code: .valuesType, line: 2, column: 60),
    ]

    @Test("filters parse in order; default may come once; every bad variable of a string is reported")
    func templateFilters() throws {
        let r = read(#"{"serverURL": "https://$(ou | lower|replace: :-|default:x)/$(device.Asset Tag|urlencode)", "role": "$(cn|trim|upper)"}"#)
        #expect(r.diagnostics.isEmpty, "\(r.diagnostics)")  // a template is checked against the constraint per device
        #expect(value(r, "serverURL") == [.template(StringTemplate(parts: [
            .literal("https://"), .filtered(.user(.ou), [.lower, .replace(" ", "-"), .defaultText("x")]), .literal("/"),
            .filtered(.deviceAttribute("Asset Tag"), [.urlencode])]))])
        #expect(StringTemplate.errors(in: "$(mail)/$(ou|nope)/$(cn|default:a|default:b)/$(|x)/$ ") == [
            .unknownVariable(name: "mail", offset: 0), .unknownFilter(name: "nope", offset: 8), .filterArguments(filter: "default", offset: 19),
            .emptyName(offset: 45), .loneDollar(offset: 51)])
        let all = read(#"{"serverURL": "https://$(mail)/$(ou|nope)/$(upn)"}"#).diagnostics
        #expect(all.map { $0.code.as(DiagnosticCode.self) } == [.valuesVariableUnknown, .valuesTemplate])
        #expect(all.map(\.message) == ["\"serverURL\": $(mail) is not a user or device variable",
                                       "\"serverURL\": the variable at offset 16 has an unknown filter \"nope\""])
    }

    @Test("other consoles' variables are found with our equivalents, and translated", arguments: [
        ("https://$EMAIL/$SERIALNUMBER", ["$EMAIL": "$(emailAddress)", "$SERIALNUMBER": "$(serialNumber)"], "https://$(emailAddress)/$(serialNumber)", []),
        ("{EnrollmentUser}@{EmailDomain} {notAToken}", ["{EnrollmentUser}": "$(sAMAccountName)", "{EmailDomain}": "$(emailAddressDomain)"],
         "$(sAMAccountName)@$(emailAddressDomain) {notAToken}", []),
        ("{{UserPrincipalName}} costs $5 {{partialupn}} {{AccountId}}", ["{{UserPrincipalName}}": "$(upn)", "{{partialupn}}": "$(upn|split:@:0)", "{{AccountId}}": nil],
         "$(upn) costs $$5 $(upn|split:@:0) {{AccountId}}", ["{{AccountId}}"]),
        ("{{username}}/{{serialnumberlast4digits}}/{{udidlast4digits}}", ["{{username}}": "$(displayName)", "{{serialnumberlast4digits}}": "$(serialNumber|last:4)",
                                                                         "{{udidlast4digits}}": "$(udid|last:4)"],
         "$(displayName)/$(serialNumber|last:4)/$(udid|last:4)", []),
        ("$EXTENSIONATTRIBUTE_12 and $(ou)", ["$EXTENSIONATTRIBUTE_12": nil], "$$EXTENSIONATTRIBUTE_12 and $$(ou)", ["$EXTENSIONATTRIBUTE_12"]),
    ])
    func foreignVariables(text: String, tokens: [String: String?], translated: String, untranslated: [String]) {
        let found = ForeignVariables.tokens(in: text)
        #expect(Dictionary(uniqueKeysWithValues: found.map { ($0.text, $0.equivalent) }) == tokens)
        let t = ForeignVariables.translate(text)
        #expect(t.text == translated)
        #expect(t.untranslated.map(\.text) == untranslated)
    }

    /// The published lists: Jamf Pro's App Config variables (its developer guide), Workspace
    /// ONE's lookup values and Intune's app configuration tokens (Microsoft's documentation).
    @Test("every variable of each console's published list is translated or reported, never passed over", arguments: [
        "$DEVICENAME", "$ASSET_TAG", "$SITENAME", "$SITEID", "$SERIALNUMBER", "$UDID", "$USERNAME", "$FULLNAME", "$REALNAME",
        "$EMAIL", "$PHONE", "$ROOM", "$POSITION", "$DEPARTMENTNAME", "$DEPARTMENTID", "$BUILDINGNAME", "$BUILDINGID",
        "$MACADDRESS", "$JSSID", "$EXTENSIONATTRIBUTE_7", "$MANAGEMENTID", "$DEVICEID", "${EMAIL}",
        "{EmailAddress}", "{EmailUserName}", "{EmailDomain}", "{EnrollmentUser}", "{UserPrincipalName}", "{FirstName}",
        "{LastName}", "{UserDistinguishedName}", "{DeviceSerialNumber}", "{DeviceUid}", "{DeviceModel}", "{DeviceImei}",
        "{DeviceWLANMac}", "{DevicePhoneNumber}", "{DeviceFriendlyName}", "{DevicePlatform}", "{GroupCode}", "{EnrollmentUserId}",
        "{{userprincipalname}}", "{{mail}}", "{{partialupn}}", "{{accountid}}", "{{deviceid}}", "{{userid}}", "{{username}}",
        "{{serialnumber}}", "{{serialnumberlast4digits}}", "{{devicename}}", "{{udidlast4digits}}", "{{aaddeviceid}}", "{{imei}}",
    ])
    func publishedLists(token: String) {
        let found = ForeignVariables.tokens(in: "x \(token) y")
        #expect(found.map(\.text) == [token])
        #expect(found.allSatisfy { $0.known })
        let translated = ForeignVariables.translate("x \(token) y")
        // Translated to ours (which parses), or reported and kept as escaped text.
        if let equivalent = found.first?.equivalent {
            #expect(translated.text == "x \(equivalent) y")
            #expect(translated.untranslated.isEmpty)
            if case .failure = StringTemplate.parse(equivalent) { Issue.record("\(equivalent) does not parse") }
        } else {
            #expect(translated.untranslated.map(\.text) == [token])
        }
    }

    /// Issue 31: libplist wrapped these without a word (a date of 1900 read as 1932-12-13, 2^63 as
    /// -2^63, NaN passing `min="0" max="1"`); the precheck refuses them in XML and binary plists.
    @Test("plist values libplist would read wrongly are errors", arguments: [
        ("<date>1900-01-01T00:00:00Z</date>", "date 1900-01-01T00:00:00Z is outside the dates a plist keeps exactly (1932-12-13T20:45:52Z to 2069-01-19T03:14:07Z)"),
        ("<date>2069-01-19T03:14:08Z</date>", "date 2069-01-19T03:14:08Z is outside the dates a plist keeps exactly (1932-12-13T20:45:52Z to 2069-01-19T03:14:07Z)"),
        ("<integer>99999999999999999999</integer>", "integer 99999999999999999999 is out of range for a 64-bit integer"),
        ("<integer>9223372036854775808</integer>", "integer 9223372036854775808 is out of range for a 64-bit integer"),
        ("<real>nan</real>", "a real is NaN, which no key can take (it would pass every constraint)"),
        // plistlib's binary plists: NaN, 2^63, 1900-01-01.
        ("62706c6973743030d101025166237ff8000000000000080b0d0000000000000101000000000000000300000000000000000000000000000016",
         "a real is NaN, which no key can take (it would pass every constraint)"),
        ("62706c6973743030d1010251691400000000000000008000000000000000080b0d000000000000010100000000000000030000000000000000000000000000001e",
         "integer 9223372036854775808 is out of range for a 64-bit integer"),
        ("62706c6973743030d10102516433c1e7bf48e0000000080b0d0000000000000101000000000000000300000000000000000000000000000016",
         "date 1900-01-01T00:00:00Z is outside the dates a plist keeps exactly (1932-12-13T20:45:52Z to 2069-01-19T03:14:07Z)"),
    ])
    func plistValuesLibplistWraps(value: String, message: String) {
        let bytes: [UInt8]
        if value.hasPrefix("<") {
            bytes = Array("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<plist version=\"1.0\"><dict><key>x</key>\(value)</dict></plist>\n".utf8)
        } else {
            bytes = stride(from: 0, to: value.count, by: 2).map { UInt8(value.dropFirst($0).prefix(2), radix: 16)! }
        }
        let r = AdminValuesReader.read(bytes, file: "v.plist", spec: Self.spec)
        #expect(r.diagnostics.map(\.message) == [message])
        // The edges are kept: the last date libplist holds, the smallest integer.
        let fine = "<?xml version=\"1.0\"?><plist version=\"1.0\"><dict><key>x</key><date>2069-01-19T03:14:07Z</date><key>y</key><integer>-9223372036854775808</integer></dict></plist>"
        #expect(!AdminValuesReader.read(Array(fine.utf8), file: "v.plist", spec: Self.spec).diagnostics.contains { $0.code == .valuesSyntax })
    }

    @Test("numbers JSON cannot hold exactly are named for what they are")
    func numberMessages() {
        #expect(read(#"{"timeout": -9223372036854775809}"#).diagnostics.map(\.message)
                == ["integer -9223372036854775809 is out of range for a 64-bit integer"])
        #expect(read(#"{"ratio": 1e-330}"#).diagnostics.map(\.message)
                == ["number 1e-330 is too small for a 64-bit float: it would be read as 0"])
        #expect(read(#"{"ratio": 0.000e-999}"#).diagnostics.isEmpty)
        #expect(value(read(#"{"ports": [-9223372036854775808]}"#), "ports") == [.literal(.integer(.min))])
        #expect(read(#"{"ports": [9223372036854775807]}"#).diagnostics.isEmpty)
    }

    @Test("values with assignments: the shared values, then each assignment's name, conditions and values in file order")
    func assignments() throws {
        let r = read("""
            {"values": {"timeout": 30, "role": "staff"},
             "assignments": [
              {"name": "sales", "match": {"group": ["Sales", "CN=EMEA Sales, OU=Groups,DC=corp"], "device.Building": "HQ"},
               "values": {"timeout": 5, "role": null}},
              {"name": "ipads", "match": {"Model": "iPad"}, "values": {}}
             ]}
            """)
        #expect(r.diagnostics.map(\.message) == ["variable \"Model\" is spelt \"model\" in the reference"])
        #expect(value(r, "timeout") == [.literal(.integer(30))])
        let a = r.values.assignments
        #expect(a.map(\.name) == ["sales", "ipads"])
        #expect(a.map(\.location.line) == [3, 5])
        #expect(a[0].conditions.map(\.subject) == [.group, .variable(.deviceAttribute("Building"))])
        #expect(a[0].conditions.map(\.values) == [["Sales", "CN=EMEA Sales, OU=Groups,DC=corp"], ["HQ"]])
        #expect(a[1].conditions.map(\.subject) == [.variable(.device(.model))])
        // Applied in order over the shared values: `null` removes.
        let merged = r.values.applying([0, 1])
        if case .value(let v)? = merged.entries["timeout"] { #expect(v.items.map(\.content) == [.literal(.integer(5))]) } else { Issue.record("timeout") }
        if case .omitted? = merged.entries["role"] {} else { Issue.record("role must be omitted") }
        // Matching one device (the preview's path): case-insensitive values, DNs in canonical spelling.
        #expect(a[0].matches(variables: [.deviceAttribute("Building"): "hq"], groups: ["cn=emea sales,ou=groups,dc=corp"]))
        #expect(a[0].matches(variables: [.deviceAttribute("Building"): "hq"], groups: ["CN=Sales,OU=Other,DC=corp"]))
        #expect(!a[0].matches(variables: [.deviceAttribute("Building"): "Annex"], groups: ["Sales"]))
        #expect(!a[0].matches(variables: [.deviceAttribute("Building"): "HQ"], groups: ["CN=EMEA Sales,OU=Other,DC=corp"]))
        // A flat file stays flat.
        #expect(read(#"{"timeout": 30}"#).values.assignments.isEmpty)
    }

    @Test(arguments: badCases)
    func badJSON(_ bad: Bad) {
        let d = read(bad.json).diagnostics
        #expect(d.map { $0.code.as(DiagnosticCode.self) } == [bad.code], "\(d)")
        #expect(d.first.map { ($0.location.line, $0.location.column) } ?? (0, 0) == (bad.line, bad.column))
    }

    @Test("an XML plist through libplist, with each key's line found")
    func xmlPlist() {
        let plist = """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0">
            <dict>
            \t<key>timeout</key>
            \t<integer>-5</integer>
            \t<key>expiry</key>
            \t<date>2027-01-31T12:00:00Z</date>
            \t<key>serverURL</key>
            \t<string>https://a&amp;b/$(upn)</string>
            </dict>
            </plist>
            """
        let r = AdminValuesReader.read(Array(plist.utf8), file: "v.plist", spec: Self.spec)
        #expect(r.diagnostics.map { $0.code.as(DiagnosticCode.self) } == [.valuesConstraint])
        #expect(r.diagnostics.first?.location == Location(file: "v.plist", line: 5, column: 2))
        #expect(value(r, "expiry") == [.literal(.date(ISO8601.parse("2027-01-31T12:00:00Z")!))])
        #expect(value(r, "serverURL") == [.template(StringTemplate(parts: [.literal("https://a&b/"), .variable(.user(.upn))]))])
    }

    @Test("a binary plist written by Python's plistlib")
    func binaryPlist() throws {
        guard let python = which("python3") else { Issue.record("python3 is needed for this test"); return }
        try withTemporaryDirectory { dir in
            let path = dir.path("v.bplist")
            let script = """
                import plistlib, datetime, sys
                v = {"timeout": 45, "ports": [1, 65535, -2], "ratio": 0.25, "enabled": False,
                     "domains": ["é.example", "$(upn)"], "expiry": datetime.datetime(2027, 1, 31, 12, 0, 0)}
                open(sys.argv[1], "wb").write(plistlib.dumps(v, fmt=plistlib.FMT_BINARY))
                """
            let run = try runProcess(python, ["-c", script, path])
            #expect(run.status == 0, "\(run.stderr)")
            let r = AdminValuesReader.read(try readFileBytes(path), file: path, spec: Self.spec)
            #expect(r.diagnostics.isEmpty, "\(r.diagnostics)")
            #expect(value(r, "timeout") == [.literal(.integer(45))])
            #expect(value(r, "ports") == [.literal(.integer(1)), .literal(.integer(65535)), .literal(.integer(-2))])
            #expect(value(r, "ratio") == [.literal(.float(0.25))])
            #expect(value(r, "enabled") == [.literal(.boolean(false))])
            #expect(value(r, "domains") == [.literal(.string("é.example")), .template(StringTemplate(parts: [.variable(.user(.upn))]))])
            #expect(value(r, "expiry") == [.literal(.date(ISO8601.parse("2027-01-31T12:00:00Z")!))])
        }
    }

    /// Hostile plists, built byte by byte: each ends in one error, never a crash (200k levels used
    /// to overflow the stack inside libplist) and never a silently changed value.
    struct HostilePlist: CustomTestStringConvertible, Sendable {
        var name: String
        var bytes: [UInt8]
        var code: DiagnosticCode
        var message: String
        var line = 1
        var testDescription: String { name }
    }

    static let xmlHead = #"<?xml version="1.0" encoding="UTF-8"?>"# + "\n<plist version=\"1.0\">\n"

    /// A binary plist (bplist00) from its objects, one-byte references and four-byte offsets.
    static func bplist(_ objects: [[UInt8]], top: UInt64 = 0) -> [UInt8] {
        var out = Array("bplist00".utf8), offsets: [UInt32] = []
        for object in objects { offsets.append(UInt32(out.count)); out += object }
        let table = UInt64(out.count)
        for o in offsets { out += withUnsafeBytes(of: o.bigEndian, Array.init) }
        out += [0, 0, 0, 0, 0, 0, 4, objects.count > 255 ? 4 : 1]
        for v in [UInt64(objects.count), top, table] { out += withUnsafeBytes(of: v.bigEndian, Array.init) }
        return out
    }

    /// `levels` arrays, each holding the next (four-byte references).
    static func deepBinary(_ levels: Int) -> [UInt8] {
        bplist((0..<levels).map { i in
            i == levels - 1 ? [0xA0] : [0xA1] + withUnsafeBytes(of: UInt32(i + 1).bigEndian, Array.init)
        })
    }

    static let hostilePlists: [HostilePlist] = [
        HostilePlist(name: "XML nested 200,000 levels",
                     bytes: Array((xmlHead + String(repeating: "<array>", count: 200_000) + String(repeating: "</array>", count: 200_000) + "</plist>").utf8),
                     code: .valuesSyntax, message: "nesting deeper than 512 levels"),
        HostilePlist(name: "binary nested 200,000 levels", bytes: deepBinary(200_000),
                     code: .valuesSyntax, message: "nesting deeper than 512 levels"),
        HostilePlist(name: "binary array that contains itself", bytes: bplist([[0xA1, 0x00]]),
                     code: .valuesSyntax, message: "a container of this binary plist contains itself"),
        HostilePlist(name: "XML key given twice",
                     bytes: Array((xmlHead + "<dict>\n<key>timeout</key><integer>5</integer>\n<key>timeout</key><integer>6</integer>\n</dict></plist>").utf8),
                     code: .valuesDuplicateKey, message: "\"timeout\" is given twice; first at line 4", line: 5),
        HostilePlist(name: "binary key given twice",
                     bytes: bplist([[0xD2, 1, 1, 2, 3], [0x57] + Array("timeout".utf8), [0x10, 5], [0x10, 6]]),
                     code: .valuesDuplicateKey, message: "\"timeout\" is given twice"),
        HostilePlist(name: "XML string with a lone surrogate",
                     bytes: Array((xmlHead + "<dict><key>role</key><string>a&#xD800;b</string></dict></plist>").utf8),
                     code: .valuesSyntax, message: "\"role\": a string holds a lone UTF-16 surrogate or bytes that are not UTF-8"),
        HostilePlist(name: "binary UTF-16 string with a lone surrogate",
                     bytes: bplist([[0xD1, 1, 2], [0x54] + Array("role".utf8), [0x62, 0x00, 0x61, 0xD8, 0x00]]),
                     code: .valuesSyntax, message: "a string holds a lone UTF-16 surrogate"),
        // Found by tools/fuzz values: libplist asserts (SIGABRT) on a string or key holding a NUL.
        HostilePlist(name: "XML key with NUL bytes in CDATA (fuzz finding)",
                     bytes: Array((xmlHead + "<dict><key><![CDATA[a").utf8) + [0, 0] + Array("]]></key><string>x</string></dict></plist>".utf8),
                     code: .valuesSyntax, message: "a string or key holds a NUL character"),
        HostilePlist(name: "XML key in an array with a NUL byte (fuzz finding)",
                     bytes: Array("<plist><array><key>k\t".utf8) + [0, 0, 0] + Array("e an array</key></array></plist>".utf8),
                     code: .valuesSyntax, message: "a string or key holds a NUL character"),
        HostilePlist(name: "XML string with &#x0;",
                     bytes: Array((xmlHead + "<dict><key>role</key><string>a&#x00;b</string></dict></plist>").utf8),
                     code: .valuesSyntax, message: "a string or key holds a NUL character"),
        HostilePlist(name: "binary plist with a reference size of 130 (fuzz finding: libplist read it and aborted on a NUL)",
                     bytes: Array(Data(base64Encoded: "YnBsaXN0MDDSBwQCBVR0GwAAAGVzdKIDAxABU2Zvb6QGBgYGoQPRAgEIDRIVFxsgIgAAAAAAAAGCAAAAAAAAAAgAAAAAAAAAAAAAAAAAAAAl")!),
                     code: .valuesSyntax, message: "libplist could not decode this binary plist: its trailer does not describe its object table"),
        HostilePlist(name: "binary ASCII string with a NUL",
                     bytes: bplist([[0xD1, 1, 2], [0x54] + Array("role".utf8), [0x53, 0x61, 0x00, 0x62]]),
                     code: .valuesSyntax, message: "a string or key holds a NUL character"),
    ]

    @Test(arguments: hostilePlists)
    func hostilePlist(_ plist: HostilePlist) {
        let r = AdminValuesReader.read(plist.bytes, file: "v.plist", spec: Self.spec)
        #expect(r.diagnostics.map { $0.code.as(DiagnosticCode.self) } == [plist.code])
        #expect(r.diagnostics.map(\.message) == [plist.message])
        #expect(r.diagnostics.first?.location.line == plist.line)
    }

    @Test("511 levels are read (and refused by type), 512 are not read")
    func depthLimit() {
        let ok = AdminValuesReader.read(Self.deepBinary(511), file: "v.plist", spec: Self.spec)
        #expect(ok.diagnostics.map { $0.code.as(DiagnosticCode.self) } == [.valuesRoot])
        let deep = AdminValuesReader.read(Self.deepBinary(513), file: "v.plist", spec: Self.spec)
        #expect(deep.diagnostics.map(\.message) == ["nesting deeper than 512 levels"])
    }

    @Test func notAPlist() {
        let r = AdminValuesReader.read(Array("timeout = 5".utf8), file: "v.txt", spec: Self.spec)
        #expect(r.diagnostics.map { $0.code.as(DiagnosticCode.self) } == [.valuesSyntax])
        let broken = AdminValuesReader.read(Array("bplist00garbage".utf8), file: "v.bplist", spec: Self.spec)
        #expect(broken.diagnostics.map { $0.code.as(DiagnosticCode.self) } == [.valuesSyntax])
    }
}
