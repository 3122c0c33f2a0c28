import AppConfigBytes
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
        Bad(json: "{\"serverURL\": \"https://$(mail)\"}", code: .valuesVariableUnknown, line: 1, column: 15),
        Bad(json: "{\"serverURL\": \"https://$(ou\"}", code: .valuesTemplate, line: 1, column: 15),
        Bad(json: "{\"serverURL\": \"https://a/$5\"}", code: .valuesTemplate, line: 1, column: 15),
        Bad(json: "{\"serverURL\": \"https://$()\"}", code: .valuesTemplate, line: 1, column: 15),
        Bad(json: "{\"serverURL\": \"https://$(UDID)\"}", code: .variableSpelling, line: 1, column: 15),
    ]

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
        let dir = try Paths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("v.bplist").path
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

    @Test func notAPlist() {
        let r = AdminValuesReader.read(Array("timeout = 5".utf8), file: "v.txt", spec: Self.spec)
        #expect(r.diagnostics.map { $0.code.as(DiagnosticCode.self) } == [.valuesSyntax])
        let broken = AdminValuesReader.read(Array("bplist00garbage".utf8), file: "v.bplist", spec: Self.spec)
        #expect(broken.diagnostics.map { $0.code.as(DiagnosticCode.self) } == [.valuesSyntax])
    }
}
