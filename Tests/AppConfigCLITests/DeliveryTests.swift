import AppConfigBatch
import Foundation
import LibPlist
import TestSupport
import Testing

/// `render --delivery`: DDM declarations and assets, MDM commands, checked against Apple's schemas
/// by an independent validator (PyYAML reads the schemas, plistlib the plists).
@Suite("Delivery: DDM and MDM commands", .serialized, .enabled(if: Paths.hasCorpus, "../shared/corpus is absent"))
struct DeliveryTests {
    static let demo = RenderCommandTests.demo
    static let base = "https://cdn.example.com/appconfig"
    static let bundle = "com.northwind.fieldservice"

    func render(_ arguments: [String]) throws -> ProcessResult {
        try runProcess(Paths.appconfigBinary, ["render"] + arguments + ["--quiet"])
    }

    /// Runs the validator; returns its last line.
    func validate(_ arguments: [String]) throws -> (status: Int32, summary: String, output: String) {
        let python = try #require(which("python3"), "python3 is needed for the validator")
        let script = Paths.root.appendingPathComponent("Tests/Oracles/ddm_validator.py").path
        let schemas = try #require(Paths.corpusFile("ddm"))
        let r = try runProcess(python, [script, schemas] + arguments)
        return (r.status, r.stdout.split(separator: "\n").last.map(String.init) ?? "", r.stdout + r.stderr)
    }

    @Test("ddm to a folder and to a tar: every declaration valid, every asset the device's plain plist; the same files both ways",
          arguments: ["binary", "xml"])
    func ddm(format: String) throws {
        let dir = try Paths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let plain = dir.appendingPathComponent("plain").path, out = dir.appendingPathComponent("ddm").path
        let tar = dir.appendingPathComponent("ddm.tar").path
        #expect(try render(Self.demo + ["--format", format, "--out", plain]).status == 3)
        let r = try render(Self.demo + ["--format", format, "--delivery", "ddm", "--asset-base-url", Self.base + "/", "--out", out])
        #expect(r.status == 3, "\(r.stderr)")
        #expect(try render(Self.demo + ["--format", format, "--delivery", "ddm", "--asset-base-url", Self.base, "--tar", tar]).status == 3)
        // libplist reads every asset as the device's plain plist (plistlib does in the validator).
        for line in try String(contentsOfFile: out + "/index.jsonl", encoding: .utf8).split(separator: "\n").prefix(50) {
            let entry = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let asset = try Data(contentsOf: URL(fileURLWithPath: out + "/assets/\(entry["asset"] as! String).plist"))
            let path = (entry["path"] as! String).replacingOccurrences(of: ".json", with: ".plist")
            let plainBytes = try Data(contentsOf: URL(fileURLWithPath: plain + "/" + path))
            #expect(try LibPlist.decode(Array(asset)) == LibPlist.decode(Array(plainBytes)))
        }
        for output in [out, tar] {
            let v = try validate(["ddm", output, plain])
            #expect(v.status == 0, "\(v.output)")
            #expect(v.summary == "ddm validator: 2925 declarations, 975 assets, 975 devices, 0 problems")
        }
        // The archive holds exactly the folder's files.
        let list = try runProcess("/usr/bin/tar", ["-tf", tar]).stdout.split(separator: "\n").map(String.init)
        let files = try FileManager.default.subpathsOfDirectory(atPath: out + "/").filter { !$0.hasSuffix("/") && $0.contains(".") }
        #expect(Set(list) == Set(files))
        #expect(list.count == files.count)
        #expect(Array(list.suffix(2)) == ["index.jsonl", "manifest.tsv"])
        let extracted = dir.appendingPathComponent("x").path
        try FileManager.default.createDirectory(atPath: extracted, withIntermediateDirectories: true)
        #expect(try runProcess("/usr/bin/tar", ["-xf", tar, "-C", extracted]).status == 0)
        for f in files.prefix(200) + ["index.jsonl", "manifest.tsv"] {
            #expect(FileManager.default.contents(atPath: extracted + "/" + f) == FileManager.default.contents(atPath: out + "/" + f), "\(f)")
        }
    }

    @Test("a ddm tar is the same bytes on every run")
    func ddmDeterministic() throws {
        let dir = try Paths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let a = dir.appendingPathComponent("a.tar").path, b = dir.appendingPathComponent("b.tar").path
        _ = try render(Self.demo + ["--delivery", "ddm", "--asset-base-url", Self.base, "--tar", a])
        _ = try render(Self.demo + ["--delivery", "ddm", "--asset-base-url", Self.base, "--tar", b, "--jobs", "1"])
        #expect(FileManager.default.contents(atPath: a) == FileManager.default.contents(atPath: b))
    }

    @Test("mdm-settings and mdm-install: commands valid for their schemas, plistlib's bytes, the configuration value for value",
          arguments: [["--delivery", "mdm-settings"], ["--delivery", "mdm-install"], ["--delivery", "mdm-install", "--app-store-id", "361309726"]])
    func mdm(_ options: [String]) throws {
        let dir = try Paths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let plain = dir.appendingPathComponent("plain").path, out = dir.appendingPathComponent("mdm").path
        #expect(try render(Self.demo + ["--format", "xml", "--out", plain]).status == 3)
        let r = try render(Self.demo + options + ["--out", out])
        #expect(r.status == 3, "\(r.stderr)")
        let v = try validate([options[1], out, plain, Self.bundle] + (options.count > 2 ? [options[3]] : []))
        #expect(v.status == 0, "\(v.output)")
        #expect(v.summary == "ddm validator: 975 commands, 0 problems")
        // A rerun gives the same CommandUUIDs (the same bytes).
        let again = dir.appendingPathComponent("again").path
        _ = try render(Self.demo + options + ["--out", again])
        let name = try #require(try FileManager.default.subpathsOfDirectory(atPath: out + "/").first { $0.hasSuffix(".plist") })
        #expect(FileManager.default.contents(atPath: out + "/" + name) == FileManager.default.contents(atPath: again + "/" + name))
    }

    @Test("the validator fails a declaration that breaks its schema, and an asset that is not its device's plist")
    func validatorCatches() throws {
        let dir = try Paths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let plain = dir.appendingPathComponent("plain").path, out = dir.appendingPathComponent("ddm").path
        _ = try render(Self.demo + ["--out", plain])
        _ = try render(Self.demo + ["--delivery", "ddm", "--asset-base-url", Self.base, "--out", out])
        let declarations = out + "/declarations"
        let asset = try #require(try FileManager.default.contentsOfDirectory(atPath: declarations).first { $0.hasPrefix("appconfig.asset.") })
        let text = try String(contentsOfFile: declarations + "/" + asset, encoding: .utf8)
        try text.replacingOccurrences(of: "https://", with: "http://").write(toFile: declarations + "/" + asset, atomically: false, encoding: .utf8)
        let v = try validate(["ddm", out, plain])
        #expect(v.status == 1)
        #expect(v.output.contains("does not start with https://"))
        #expect(v.summary == "ddm validator: 2925 declarations, 975 assets, 975 devices, 1 problems")
    }

    @Test("ServerTokens: change one user's attribute, render again: exactly that device's asset, configuration and activation change")
    func serverTokens() throws {
        let dir = try Paths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        // u0000147 is the user of one device; their display name changes.
        let ldif = try String(contentsOfFile: Paths.fixture("demo/directory.ldif"), encoding: .utf8)
        let changed = dir.appendingPathComponent("changed.ldif").path
        let edited = try #require(Self.changeDisplayName(ldif, mail: "u0000147@corp.example"))
        try edited.write(toFile: changed, atomically: true, encoding: .utf8)
        func run(_ directory: String, _ out: String) throws -> [String: [String]] {
            var args = Self.demo
            args[args.firstIndex(of: "--directory")! + 1] = directory
            let r = try render(args + ["--delivery", "ddm", "--asset-base-url", Self.base, "--out", out])
            #expect(r.status == 3, "\(r.stderr)")
            var sets: [String: [String]] = [:]
            for line in try String(contentsOfFile: out + "/index.jsonl", encoding: .utf8).split(separator: "\n") {
                let o = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                sets[o["device"] as! String] = o["declarations"] as? [String]
            }
            return sets
        }
        let before = try run(Paths.fixture("demo/directory.ldif"), dir.appendingPathComponent("a").path)
        let after = try run(changed, dir.appendingPathComponent("b").path)
        let differing = before.keys.filter { before[$0] != after[$0] }
        #expect(differing.count == 1)
        let device = try #require(differing.first)
        // All three of its declarations are new ones; the other devices keep theirs, token for token.
        #expect(Set(before[device]!).isDisjoint(with: after[device]!))
        func tokens(_ out: String) throws -> [String: String] {
            var t: [String: String] = [:]
            for f in try FileManager.default.contentsOfDirectory(atPath: out + "/declarations") {
                let o = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out + "/declarations/" + f))) as! [String: Any]
                t[o["Identifier"] as! String] = o["ServerToken"] as? String
            }
            return t
        }
        let (ta, tb) = (try tokens(dir.appendingPathComponent("a").path), try tokens(dir.appendingPathComponent("b").path))
        #expect(Set(ta.keys).subtracting(tb.keys) == Set(before[device]!))
        #expect(Set(tb.keys).subtracting(ta.keys) == Set(after[device]!))
        for id in Set(ta.keys).intersection(tb.keys) { #expect(ta[id] == tb[id]) }
        for (id, token) in tb where after[device]!.contains(id) { #expect(token.utf8.count == 64 && !ta.values.contains(token)) }
    }

    static func changeDisplayName(_ ldif: String, mail: String) -> String? {
        var entries = ldif.components(separatedBy: "\n\n")
        guard let i = entries.firstIndex(where: { $0.contains("\nmail: \(mail)") }) else { return nil }
        let lines = entries[i].split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        entries[i] = lines.map { $0.hasPrefix("displayName") ? "displayName: Changed Name" : $0 }.joined(separator: "\n")
        return entries.joined(separator: "\n\n")
    }

    @Test("bad delivery options: one clear line, status 2, nothing written")
    func badOptions() throws {
        let dir = try Paths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("out").path, report = dir.appendingPathComponent("report").path
        let cases: [([String], String)] = [
            (["--delivery", "ddm"], "appconfig: --delivery ddm needs --asset-base-url https://… (where the assets will be served) [delivery.option]\n"),
            (["--delivery", "ddm", "--asset-base-url", "http://cdn.example.com"],
             "appconfig: --asset-base-url must be an https:// URL with a host and no query, not \"http://cdn.example.com\" [delivery.option]\n"),
            (["--delivery", "ddm", "--asset-base-url", "https://"],
             "appconfig: --asset-base-url must be an https:// URL with a host and no query, not \"https://\" [delivery.option]\n"),
            (["--delivery", "ddm", "--asset-base-url", "https://cdn.example.com/a?x=1"],
             "appconfig: --asset-base-url must be an https:// URL with a host and no query, not \"https://cdn.example.com/a?x=1\" [delivery.option]\n"),
            (["--delivery", "mdm-settings", "--bundle-id", ""],
             "appconfig: the app needs a bundle identifier (--bundle-id, or the spec's bundleId), not \"\" [delivery.option]\n"),
            (["--delivery", "mdm-install", "--app-store-id", "abc"], "appconfig: --app-store-id takes the App Store's numeric ID, not \"abc\" [delivery.option]\n"),
        ]
        for (options, message) in cases {
            let r = try render(Self.demo + options + ["--out", out, "--report", report])
            #expect(r.status == 2, "\(options)")
            #expect(r.stderr == message)
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path) == [], "\(options) wrote something")
        }
        let binary = try render(Self.demo + ["--delivery", "mdm-settings", "--format", "binary", "--out", out])
        #expect(binary.status == 2)
        #expect(binary.stderr.contains("MDM commands are XML plists: --delivery mdm-settings takes --format xml"))
    }

    @Test("compile --delivery previews one device: the command around the same configuration; the declarations")
    func compilePreview() throws {
        let example = Paths.fixture("reference/example.xml"), values = Paths.fixture("reference/bench-values.json")
        let vars = ["--var", "cn=Jane", "--var", "ou=EMEA", "--var", "serialNumber=C02ABC", "--var", "emailAddress=jane@company.com"]
        let plain = try runProcessData(Paths.appconfigBinary, ["compile", example, "--values", values] + vars)
        let command = try runProcessData(Paths.appconfigBinary, ["compile", example, "--values", values, "--delivery", "mdm-settings"] + vars)
        #expect(plain.status == 0 && command.status == 0, "\(command.stderr)")
        let decodedPlain = try PropertyListSerialization.propertyList(from: plain.stdout, format: nil) as? NSDictionary
        let decoded = try PropertyListSerialization.propertyList(from: command.stdout, format: nil) as? [String: Any]
        let settings = (decoded?["Command"] as? [String: Any])?["Settings"] as? [[String: Any]]
        #expect(settings?.first?["Configuration"] as? NSDictionary == decodedPlain)
        let ddm = try runProcess(Paths.appconfigBinary, ["compile", example, "--values", values, "--delivery", "ddm", "--asset-base-url", Self.base] + vars)
        #expect(ddm.status == 0, "\(ddm.stderr)")
        let jsonLines = ddm.stdout.split(separator: "\n").filter { $0.hasPrefix("{") }
        let types = jsonLines.prefix(3).compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["Type"] as? String }
        #expect(types == ["com.apple.asset.data", "com.apple.configuration.app.managed", "com.apple.activation.simple"])
    }
}
