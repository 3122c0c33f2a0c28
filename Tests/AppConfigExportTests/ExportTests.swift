import AppConfigCLI
import AppConfigCore
@testable import AppConfigExport
import AppConfigSpec
import Foundation
import LibPlist
import TestSupport
import Testing

/// `appconfig export` (issue 58): a values file handed to each console in its tokens, checked by
/// importing it back (`ConsoleImport`, the other direction of the same token table) and by
/// libplist for the plists.
@Suite("Export: to the consoles")
struct ExportTests {
    /// A spec and a values file that use every expression of ours the console has a token for
    /// (a string key each, in a sentence), and a key of every other type.
    static func everyToken(_ console: ConsoleTokens.Console) -> (spec: String, values: String) {
        var seen = Set<String>()
        let ours = ConsoleTokens.rows.filter { $0.console == console }.compactMap(\.ours).filter { seen.insert($0).inserted }
        let keys = ours.indices.map { #"<string keyName="t\#($0)"><defaultValue><value>x</value></defaultValue></string>"# }.joined()
        let spec = """
            <managedAppConfiguration><version>1</version><bundleId>com.example.tokens</bundleId><dict>\(keys)
            <integer keyName="count"><defaultValue><value>1</value></defaultValue></integer>
            <float keyName="ratio"><defaultValue><value>0.5</value></defaultValue></float>
            <boolean keyName="on"><defaultValue><value>true</value></defaultValue></boolean>
            <date keyName="until"><defaultValue><value>2027-01-01T00:00:00Z</value></defaultValue></date>
            <string keyName="note"><defaultValue><value>x</value></defaultValue></string>
            </dict></managedAppConfiguration>
            """
        let strings = ours.enumerated().map { #""t\#($0.offset)": \#(jsonQuoted("at \($0.element) here"))"# }.joined(separator: ", ")
        return (spec, #"{\#(strings), "count": 30, "ratio": 1.5, "on": false, "until": "2028-06-30T23:59:59Z", "note": "costs $$5"}"#)
    }

    static func typed(_ json: String, spec: Spec, file: String = "values.json") throws -> AdminValues {
        let result = AdminValuesReader.read(Array(json.utf8), file: file, spec: spec)
        #expect(!result.hasErrors, "\(result.diagnostics)")
        return result.values
    }

    static func spec(_ text: String) throws -> Spec { try #require(SpecParser.parse(Array(text.utf8), file: "spec.xml").spec) }

    /// The keys' values as our syntax writes them, for comparing two values files token for token.
    static func written(_ values: AdminValues) -> [String: [String]] {
        values.entries.mapValues { entry in
            guard case .value(let v) = entry else { return ["null"] }
            return v.items.map { item in
                switch item.content {
                case .literal(let s): "\(s)"
                case .template(let t): t.description
                }
            }
        }
    }

    @Test("round trip: export then import gives back every value, token for token", arguments: [
        (ExportTarget.jamf, false), (.intune, false), (.intune, true), (.ws1, false),
    ])
    func roundTrip(target: ExportTarget, xml: Bool) throws {
        let dir = try TemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir.url) }
        let (specText, json) = Self.everyToken(target.console)
        var options = ExportOptions(target: target, spec: try dir.write(specText, to: "spec.xml"), values: try dir.write(json, to: "values.json"))
        options.out = dir.path("out")
        options.intuneXML = xml
        let result = try ExportJob(options).run()
        #expect(result.notes.filter { $0.code == ExportCode.untranslatable }.isEmpty, "\(result.notes)")
        let back = try Self.imported(target, folder: dir.path("out"), stem: "all")
        let spec = try Self.spec(specText)
        #expect(Self.written(try Self.typed(back, spec: spec)) == Self.written(try Self.typed(json, spec: spec)))
    }

    /// The console's object read back through `appconfig import`'s converter; a plist checked by
    /// libplist first.
    static func imported(_ target: ExportTarget, folder: String, stem: String) throws -> String {
        let file = "\(folder)/\(target.rawValue)/\(stem).\(target == .jamf ? "plist" : "json")"
        let bytes = try Array(Data(contentsOf: URL(fileURLWithPath: file)))
        if target == .jamf { _ = try LibPlist.decode(Array("<plist version=\"1.0\">".utf8) + bytes + Array("</plist>".utf8)) }
        let console: ForeignVariables.Console = target == .jamf ? .jamf : target == .ws1 ? .ws1 : .intune
        let result = try ConsoleImport.convert(bytes, file: file, from: console)
        #expect(result.notes.isEmpty, "\(result.notes)")
        return result.json
    }

    /// Runs an export into a fresh folder; its result and the folder.
    static func export(_ target: ExportTarget, spec: String = Paths.fixture("demo/spec.xml"), values: String, strict: Bool = false,
                       _ body: (Result<ExportResult, Problem>, String) throws -> Void) throws {
        let dir = try TemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir.url) }
        var options = ExportOptions(target: target, spec: spec, values: values.hasPrefix("{") ? try dir.write(values, to: "values.json") : values)
        options.out = dir.path("out")
        options.strict = strict
        let result = Result { () throws(Problem) in try ExportJob(options).run() }
        try body(result, dir.path("out"))
    }

    @Test("the demo's values: each object imports back to the values its variant gets, less what was reported untranslatable", arguments: [
        ExportTarget.jamf, .intune, .ws1,
    ])
    func demoRoundTrip(target: ExportTarget) throws {
        let spec = try Self.spec(try String(contentsOfFile: Paths.fixture("demo/spec.xml"), encoding: .utf8))
        let original = try Self.typed(try String(contentsOfFile: Paths.fixture("demo/assignments.json"), encoding: .utf8), spec: spec)
        try Self.export(target, values: Paths.fixture("demo/assignments.json")) { result, out in
            let r = try result.get()
            #expect(r.variants.map(\.name) == ["all"] + original.assignments.map(\.name))
            for v in r.variants {
                var expected = original.entries
                if let a = original.assignments.first(where: { $0.name == v.name }) { for (k, e) in a.entries { expected[k] = e } }
                let left = Set(v.notes.filter { $0.code == ExportCode.untranslatable }.compactMap { n in expected.keys.first { n.message.hasPrefix("\"\($0)\"") } })
                for key in left { expected[key] = nil }
                let back = try Self.typed(try Self.imported(target, folder: out, stem: ExportJob.fileStem(v.name)), spec: spec)
                #expect(Self.written(back) == Self.written(AdminValues(file: "", entries: expected)), "\(v.name)")
            }
            // What no console has a token for is named, per variant: $(ou) and its filters; a list
            // Workspace ONE's key/value settings cannot hold, the others' $(emailAddressDomain).
            let untranslatable = r.notes.filter { $0.code == ExportCode.untranslatable }.map(\.message)
            #expect(untranslatable.contains { $0.hasPrefix("\"serverURL\" (all)") && $0.contains("$(ou) has no") })
            #expect(untranslatable.contains { $0.hasPrefix("\"region\" (everyone)") } == true)
            #expect(untranslatable.contains { $0.hasPrefix("\"allowedDomains\" (all)") && $0.contains(target == .ws1 ? "a list" : "$(emailAddressDomain) has no") })
        }
    }

    @Test("per target: a filter the console cannot apply and an inventory column with no token are named, left out, exit 3; --strict writes nothing", arguments: ExportTarget.allCases)
    func untranslatable(target: ExportTarget) throws {
        let values = #"{"values": {"theme": "system", "displayName": "$(displayName|upper)", "region": "$(device.Region)"}}"#
        try Self.export(target, values: values) { result, out in
            let r = try result.get()
            let messages = r.notes.filter { $0.code == ExportCode.untranslatable }.map(\.message)
            #expect(messages.count == 2 && r.hasUntranslatable, "\(messages)")
            #expect(messages.contains { $0.hasPrefix("\"displayName\" (all): \(target.title) cannot take it: $(displayName|upper)") })
            #expect(messages.contains { $0.contains("$(device.Region) reads the inventory column Region, which has no") })
            #expect(r.variants[0].keys.map(\.key) == ["theme"])
            #expect(FileManager.default.fileExists(atPath: out + "/plan.md"))
        }
        try Self.export(target, values: values, strict: true) { result, out in
            let r = try result.get()
            #expect(r.notes.filter { $0.severity == .error }.count == 2 && r.files.isEmpty)
            #expect(!FileManager.default.fileExists(atPath: out))
        }
    }

    @Test("per target: credentials are refused, export.secret, nothing written", arguments: ExportTarget.allCases)
    func secret(target: ExportTarget) throws {
        let values = #"{"values": {"theme": "system"}, "credentials": [{"identifier": "pw", "kind": "password", "UserName": "$(sAMAccountName)", "Password": {"secret": "pw"}}]}"#
        try Self.export(target, values: values) { result, out in
            guard case .failure(let problem) = result else { Issue.record("exported a values file with credentials"); return }
            #expect(problem.code == ExportCode.secret && problem.message.contains("takes no ManagedApp credential or secret"))
            #expect(!FileManager.default.fileExists(atPath: out))
        }
    }

    @Test("Ivanti and Intune's app SDK settings: every key and value a string, each conversion noted; a list is not taken", arguments: [ExportTarget.ivanti, .intuneMAM])
    func stringsOnly(target: ExportTarget) throws {
        try Self.export(target, values: Paths.fixture("demo/assignments.json")) { result, out in
            let r = try result.get()
            let file = "\(out)/\(target.rawValue)/all.json"
            let body = try #require(JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: file))) as? [String: Any])
            let pairs = try #require((body[target == .ivanti ? "app_config" : "customSettings"] as? [[String: Any]]))
            let nameKey = target == .ivanti ? "key" : "name"
            #expect(pairs.allSatisfy { $0[nameKey] is String && $0["value"] is String && $0.count == 2 })
            let values = Dictionary(uniqueKeysWithValues: pairs.map { ($0[nameKey] as! String, $0["value"] as! String) })
            #expect(values == ["theme": "system", "syncIntervalMinutes": "30", "offlineMode": "true", "licenseExpiry": "2027-12-31T23:59:59Z"])
            let converted = r.variants[0].notes.filter { $0.code == ExportCode.converted }.map(\.message)
            #expect(converted.count == 3 && converted.contains { $0.hasPrefix("\"syncIntervalMinutes\" (all): a integer written as the string \"30\"") })
            #expect(r.notes.contains { $0.code == ExportCode.untranslatable && $0.message.hasPrefix("\"mapZoomLevels\" (cyclists)") && $0.message.contains("a list") })
        }
    }

    @Test("docs/export.md prints the token table the code reads both ways, row for row")
    func docsTable() throws {
        let doc = try String(contentsOfFile: Paths.root.appendingPathComponent("docs/export.md").path, encoding: .utf8)
        #expect(doc.contains(ConsoleTokens.markdown), "docs/export.md's table is not the code's; it should read:\n\(ConsoleTokens.markdown)")
    }

    @Test("the Graph bodies validate against the schema of Microsoft's v1.0 types, and the check fails a wrong one", arguments: [
        (ExportTarget.intune, false), (.intune, true), (.intuneMAM, false),
    ])
    func graphSchema(target: ExportTarget, xml: Bool) throws {
        let python = try #require(which("python3"), "python3 is needed for the validator")
        let script = Paths.root.appendingPathComponent("Tests/Oracles/graph_validator.py").path
        let schema = Paths.root.appendingPathComponent("Tests/Oracles/graph/intune.schema.json").path
        let dir = try TemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir.url) }
        var options = ExportOptions(target: target, spec: Paths.fixture("demo/spec.xml"), values: Paths.fixture("demo/assignments.json"))
        options.out = dir.path("out")
        options.intuneXML = xml
        options.intuneAppID = target == .intune ? "3e8a1d1e-5c2b-4a52-9c9e-0b6f3a2d7c11" : nil
        let result = try ExportJob(options).run()
        let files = result.files.filter { $0.hasSuffix(".json") }.map { dir.path("out/" + $0) }
        #expect(files.count == result.variants.count * (target == .intuneMAM ? 3 : 2))
        let r = try runProcess(python, [script, schema] + files)
        #expect(r.status == 0 && r.stdout.hasPrefix("graph_validator: \(files.count) bodies checked, 0 problems"), "\(r.stdout)\(r.stderr)")
        // A key type Graph does not have, and a property it does not know: both named.
        let body = files.first { $0.hasSuffix("/all.json") }!
        let text = try String(contentsOfFile: body, encoding: .utf8)
        let wrong = xml ? text.replacingOccurrences(of: "\"displayName\"", with: "\"name\"")
                        : text.replacingOccurrences(of: "\"integerType\"", with: "\"numberType\"").replacingOccurrences(of: "\"displayName\"", with: "\"name\"")
        try wrong.write(toFile: body, atomically: true, encoding: .utf8)
        let v = try runProcess(python, [script, schema, body])
        #expect(v.status == 1 && v.stdout.contains("Additional properties are not allowed ('name' was unexpected)"), "\(v.stdout)")
        if !xml && target == .intune { #expect(v.stdout.contains("'numberType' is not one of"), "\(v.stdout)") }
    }

    @Test("the command: exit 0 exported, 3 untranslatable, 1 with --strict (nothing written), 2 a secret or usage; --dry-run writes nothing", arguments: [
        (["--to", "jamf", "--values", "clean"], Int32(0), "files written into"),
        (["--to", "jamf", "--values", "demo"], 3, "[export.untranslatable]"),
        (["--to", "jamf", "--values", "demo", "--dry-run"], 3, "# Export of com.northwind.fieldservice to Jamf Pro"),
        (["--to", "fleet", "--values", "demo", "--strict"], 1, "error: \"serverURL\" (all): Fleet cannot take it"),
        (["--to", "ws1", "--values", "credentials"], 2, "[export.secret]"),
        (["--to", "mobileiron", "--values", "clean"], 2, "--to mobileiron: one of intune, intune-mam, jamf, ws1, ivanti, fleet"),
        (["--to", "jamf", "--values", "clean", "--intune-xml"], 2, "--intune-xml and --intune-app-id are for --to intune"),
    ] as [([String], Int32, String)])
    func command(arguments: [String], status: Int32, says: String) throws {
        let dir = try TemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir.url) }
        let files = [
            "clean": try dir.write(#"{"theme": "dark", "userEmail": "$(emailAddress)", "syncIntervalMinutes": 10}"#, to: "clean.json"),
            "demo": Paths.fixture("demo/assignments.json"),
            "credentials": try dir.write(#"{"values": {"theme": "system"}, "credentials": [{"identifier": "pw", "kind": "password", "UserName": "$(sAMAccountName)", "Password": {"secret": "pw"}}]}"#, to: "credentials.json"),
        ]
        var args = ["export", "--spec", Paths.fixture("demo/spec.xml")]
        var i = 0
        while i < arguments.count {
            if arguments[i] == "--values" { args += ["--values", files[arguments[i + 1]]!]; i += 2 } else { args.append(arguments[i]); i += 1 }
        }
        let dryRun = arguments.contains("--dry-run")
        if !dryRun { args += ["--out", dir.path("out")] }
        let r = AppConfigCommand.capturing(args)
        #expect(r.status == status && (r.stdout + r.stderr).contains(says), "\(r.status)\n\(r.stdout)\(r.stderr)")
        let wrote = FileManager.default.fileExists(atPath: dir.path("out/plan.md"))
        #expect(wrote == (status == 0 || (status == 3 && !dryRun)))
    }

    @Test("Fleet's configuration is a whole plist libplist reads, its types kept, its tokens Fleet's")
    func fleetPlist() throws {
        let values = #"{"values": {"userEmail": "$(emailAddress)", "syncIntervalMinutes": 10, "offlineMode": true, "photoQuality": 0.5, "mapZoomLevels": [3, 9]}}"#
        try Self.export(.fleet, values: values) { result, out in
            _ = try result.get()
            let body = try #require(JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out + "/fleet/all.json"))) as? [String: Any])
            let plist = try LibPlist.decode(Array(try #require(body["configuration"] as? String).utf8))
            // In the spec's order, as its types say (mapZoomLevels is a list of reals).
            #expect(plist == .dictionary([("userEmail", .string("$FLEET_VAR_HOST_END_USER_EMAIL_IDP")), ("syncIntervalMinutes", .integer(10)),
                                          ("photoQuality", .real(0.5)), ("mapZoomLevels", .array([.real(3), .real(9)])), ("offlineMode", .boolean(true))]))
        }
    }
}
