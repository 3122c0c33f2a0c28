import AppConfigBatch
@testable import AppConfigOutput
import Digest
import Foundation
import LibPlist
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `render --delivery`: DDM declarations and assets, MDM commands, checked against Apple's schemas
/// by an independent validator (PyYAML reads the schemas, plistlib the plists).
@Suite("Delivery: DDM and MDM commands", .serialized)
struct DeliveryTests {
    static let demo = RenderCommandTests.demo
    static let base = "https://cdn.example.com/appconfig"
    static let bundle = "com.northwind.fieldservice"

    func render(_ arguments: [String]) throws -> ProcessResult {
        try appconfig(["render"] + arguments + ["--quiet"])
    }

    /// Runs the validator; returns its last line.
    func validate(_ arguments: [String]) throws -> (status: Int32, summary: String, output: String) {
        let python = try #require(which("python3"), "python3 is needed for the validator")
        let script = Paths.root.appendingPathComponent("Tests/Oracles/ddm_validator.py").path
        // Apple's schemas, vendored with their MIT license: these tests run in any clone.
        let schemas = Paths.root.appendingPathComponent("Tests/Oracles/apple-device-management").path
        let r = try runProcess(python, [script, schemas] + arguments)
        return (r.status, r.stdout.split(separator: "\n").last.map(String.init) ?? "", r.stdout + r.stderr)
    }

    /// The DDM cases the validator checks: format, `--app-config-key`, `--ddm-layout`.
    static let ddmCases: [(format: String, key: String, layout: String)] = [
        ("binary", "both", "jsonl"), ("xml", "both", "jsonl"), ("binary", "legacy", "jsonl"), ("xml", "managedapp", "jsonl"),
        ("binary", "managedapp", "files"), ("xml", "legacy", "files"), ("binary", "both", "files"),
    ]

    @Test("ddm to a folder and to a tar, every --app-config-key and layout: every declaration valid against Apple's newest schemas, every asset the device's plain plist; the same files both ways",
          arguments: ddmCases)
    func ddm(format: String, key: String, layout: String) throws {
        try withTemporaryDirectory { dir in
            let plain = dir.path("plain"), out = dir.path("ddm")
            let tar = dir.path("ddm.tar")
            let options = ["--format", format, "--delivery", "ddm", "--app-config-key", key, "--ddm-layout", layout]
            #expect(try render(Self.demo + ["--format", format, "--out", plain]).status == 3)
            let r = try render(Self.demo + options + ["--asset-base-url", Self.base + "/", "--out", out])
            #expect(r.status == 3, "\(r.stderr)")
            #expect(try render(Self.demo + options + ["--asset-base-url", Self.base, "--tar", tar]).status == 3)
            // libplist reads every asset as the device's plain plist (plistlib does in the validator).
            let manifest = try String(contentsOfFile: out + "/manifest.tsv", encoding: .utf8).split(separator: "\n").filter { $0.contains("\t") }
            for line in manifest.prefix(50) {
                let fields = line.split(separator: "\t").map(String.init)
                let asset = try Data(contentsOf: URL(fileURLWithPath: out + "/" + fields[1]))
                let key = fields[2]
                let plainBytes = try Data(contentsOf: URL(fileURLWithPath: plain + "/" + Array(key.utf8).withView { OutputNames.relativePath($0) }))
                #expect(try LibPlist.decode(Array(asset)) == LibPlist.decode(Array(plainBytes)))
            }
            for output in [out, tar] {
                let v = try validate(["ddm", output, plain, key])
                #expect(v.status == 0, "\(v.output)")
                #expect(v.summary == "ddm validator: 2926 declarations, 975 assets, 975 devices, 0 problems")
            }
            // The archive holds exactly the folder's files.
            let list = try runProcess("/usr/bin/tar", ["-tf", tar]).stdout.split(separator: "\n").map(String.init)
            let files = try FileManager.default.subpathsOfDirectory(atPath: out + "/").filter { !$0.hasSuffix("/") && $0.contains(".") }
            #expect(Set(list) == Set(files))
            #expect(list.count == files.count)
            #expect(Array(list.suffix(layout == "jsonl" ? 4 : 3)) == (layout == "jsonl" ? ["declarations.jsonl"] : []) + ["index.jsonl", "assets.live", "manifest.tsv"])
            let extracted = dir.path("x")
            try FileManager.default.createDirectory(atPath: extracted, withIntermediateDirectories: true)
            #expect(try runProcess("/usr/bin/tar", ["-xf", tar, "-C", extracted]).status == 0)
            for f in files.prefix(200) + ["index.jsonl", "manifest.tsv", "assets.live"] + (layout == "jsonl" ? ["declarations.jsonl"] : []) {
                #expect(FileManager.default.contents(atPath: extracted + "/" + f) == FileManager.default.contents(atPath: out + "/" + f), "\(f)")
            }
        }
    }

    @Test("a 30k fleet as DDM (folder and tar), each --app-config-key: every declaration valid, every asset its device's plain plist",
          arguments: [("both", "binary"), ("legacy", "xml"), ("managedapp", "binary")])
    func ddm30k(key: String, format: String) throws {
        try withTemporaryDirectory { dir in
            let fleet = try NightlyTests.fleet(30_000, in: dir)
            let sources = ["--spec", Paths.fixture("demo/spec.xml"), "--values", Paths.fixture("demo/values.json"),
                           "--inventory", fleet.inventory, "--directory", fleet.directory]
            let plain = dir.path("plain"), out = dir.path("ddm")
            let tar = dir.path("ddm.tar")
            let options = ["--format", format, "--delivery", "ddm", "--app-config-key", key, "--asset-base-url", Self.base]
            #expect(try render(sources + ["--format", format, "--out", plain]).status == 3)
            #expect(try render(sources + options + ["--out", out]).status == 3)
            #expect(try render(sources + options + ["--tar", tar]).status == 3)
            let rendered = try String(contentsOfFile: plain + "/index.jsonl", encoding: .utf8).split(separator: "\n").count
            #expect(rendered > 29_000)
            for output in [out, tar] {
                let v = try validate(["ddm", output, plain, key])
                #expect(v.status == 0, "\(v.output)")
                #expect(v.summary == "ddm validator: \(3 * rendered + 1) declarations, \(rendered) assets, \(rendered) devices, 0 problems")
            }
        }
    }

    @Test("a ddm tar is the same bytes on every run")
    func ddmDeterministic() throws {
        try withTemporaryDirectory { dir in
            let a = dir.path("a.tar"), b = dir.path("b.tar")
            _ = try render(Self.demo + ["--delivery", "ddm", "--asset-base-url", Self.base, "--tar", a])
            _ = try render(Self.demo + ["--delivery", "ddm", "--asset-base-url", Self.base, "--tar", b, "--jobs", "1"])
            #expect(FileManager.default.contents(atPath: a) == FileManager.default.contents(atPath: b))
        }
    }

    @Test("mdm-settings and mdm-install: commands valid for their schemas, plistlib's bytes, the configuration value for value",
          arguments: [["--delivery", "mdm-settings"], ["--delivery", "mdm-install"], ["--delivery", "mdm-install", "--app-store-id", "361309726"]])
    func mdm(_ options: [String]) throws {
        try withTemporaryDirectory { dir in
            let plain = dir.path("plain"), out = dir.path("mdm")
            #expect(try render(Self.demo + ["--format", "xml", "--out", plain]).status == 3)
            let r = try render(Self.demo + options + ["--out", out])
            #expect(r.status == 3, "\(r.stderr)")
            let v = try validate([options[1], out, plain, Self.bundle] + (options.count > 2 ? [options[3]] : []))
            #expect(v.status == 0, "\(v.output)")
            #expect(v.summary == "ddm validator: 975 commands, 0 problems")
            // A rerun gives the same CommandUUIDs (the same bytes).
            let again = dir.path("again")
            _ = try render(Self.demo + options + ["--out", again])
            let name = try #require(try FileManager.default.subpathsOfDirectory(atPath: out + "/").first { $0.hasSuffix(".plist") })
            #expect(FileManager.default.contents(atPath: out + "/" + name) == FileManager.default.contents(atPath: again + "/" + name))
        }
    }

    @Test("every set carries the status subscription to app.managed.list, named by its activation and written once; --no-status-subscription leaves it out")
    func statusSubscription() throws {
        try withTemporaryDirectory { dir in
            let plain = dir.path("plain"), with = dir.path("with"), without = dir.path("without")
            _ = try render(Self.demo + ["--out", plain])
            _ = try render(Self.demo + ["--delivery", "ddm", "--asset-base-url", Self.base, "--out", with])
            _ = try render(Self.demo + ["--delivery", "ddm", "--asset-base-url", Self.base, "--out", without, "--no-status-subscription"])
            let published = try #require(GenerationFolder.published(with))
            let lines = try String(contentsOfFile: published + "/declarations.jsonl", encoding: .utf8).split(separator: "\n")
            let subscriptions = lines.filter { $0.contains("com.apple.configuration.management.status-subscriptions") }
            #expect(subscriptions.count == 1 && lines.first == subscriptions.first)
            #expect(subscriptions.first?.contains(#""Payload":{"StatusItems":[{"Name":"app.managed.list"}]}"#) == true)
            // The validator checks it against Apple's schema, and each set and activation naming it.
            #expect(try validate(["ddm", with, plain]).summary == "ddm validator: 2926 declarations, 975 assets, 975 devices, 0 problems")
            #expect(try validate(["ddm", without, plain, "both", "no-status-subscription"]).summary == "ddm validator: 2925 declarations, 975 assets, 975 devices, 0 problems")
            // Each check can fail: a set without it where it is asked for, and the other way.
            #expect(try validate(["ddm", without, plain]).summary == "ddm validator: 2925 declarations, 975 assets, 975 devices, 975 problems")
            #expect(try validate(["ddm", with, plain, "both", "no-status-subscription"]).summary == "ddm validator: 2926 declarations, 975 assets, 975 devices, 975 problems")
            // Another delivery refuses the option.
            let r = try render(Self.demo + ["--delivery", "mdm-settings", "--out", dir.path("mdm"), "--no-status-subscription"])
            #expect(r.status == 2 && r.stderr.contains("--status-subscription goes with --delivery ddm"))
        }
    }

    @Test("the validator fails a declaration that breaks its schema, and a configuration without the key mode asked for")
    func validatorCatches() throws {
        try withTemporaryDirectory { dir in
            let plain = dir.path("plain"), out = dir.path("ddm")
            _ = try render(Self.demo + ["--out", plain])
            _ = try render(Self.demo + ["--delivery", "ddm", "--asset-base-url", Self.base, "--out", out])
            let published = try #require(GenerationFolder.published(out))
            let lines = try String(contentsOfFile: published + "/declarations.jsonl", encoding: .utf8)
            let first = try #require(lines.range(of: "https://"))
            try lines.replacingCharacters(in: first, with: "http://").write(toFile: published + "/declarations.jsonl", atomically: false, encoding: .utf8)
            let v = try validate(["ddm", out, plain])
            #expect(v.status == 1)
            #expect(v.output.contains("does not start with https://"))
            #expect(v.summary == "ddm validator: 2926 declarations, 975 assets, 975 devices, 1 problems")
            let legacy = try validate(["ddm", out, plain, "legacy"])
            #expect(legacy.summary == "ddm validator: 2926 declarations, 975 assets, 975 devices, 976 problems")
        }
    }

    /// Every declaration of a DDM folder output, by Identifier: its ServerToken and payload.
    static func declarations(_ out: String) throws -> [String: (token: String, payload: [String: Any])] {
        var result: [String: (String, [String: Any])] = [:]
        for line in try String(contentsOfFile: out + "/declarations.jsonl", encoding: .utf8).split(separator: "\n") {
            let d = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            result[d["Identifier"] as! String] = (d["ServerToken"] as! String, d["Payload"] as! [String: Any])
        }
        return result
    }

    /// Each device's set from index.jsonl.
    static func sets(_ out: String) throws -> [String: [String]] {
        var sets: [String: [String]] = [:]
        for line in try String(contentsOfFile: out + "/index.jsonl", encoding: .utf8).split(separator: "\n") {
            let o = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            sets[o["device"] as! String] = o["declarations"] as? [String]
        }
        return sets
    }

    @Test("identity: change one user's value, render again: that device's configuration and activation keep their Identifiers, the configuration's ServerToken and asset reference change; no other device's tokens change")
    func stableIdentity() throws {
        let dir = try TemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir.url) }
        // u0000147 is the user of one device; their display name changes.
        let ldif = try String(contentsOfFile: Paths.fixture("demo/directory.ldif"), encoding: .utf8)
        let changed = dir.path("changed.ldif")
        let edited = try #require(Self.changeDisplayName(ldif, mail: "u0000147@corp.example"))
        try edited.write(toFile: changed, atomically: true, encoding: .utf8)
        func run(_ directory: String, _ out: String, _ extra: [String] = []) throws {
            var args = Self.demo
            args[args.firstIndex(of: "--directory")! + 1] = directory
            let r = try render(args + ["--delivery", "ddm", "--asset-base-url", Self.base, "--out", out] + extra)
            #expect(r.status == 3, "\(r.stderr)")
        }
        let a = dir.path("a"), b = dir.path("b")
        try run(Paths.fixture("demo/directory.ldif"), a)
        try run(changed, b)
        let (before, after) = (try Self.sets(a), try Self.sets(b))
        let (da, db) = (try Self.declarations(a), try Self.declarations(b))
        #expect(before.keys == after.keys)
        let differing = before.keys.filter { before[$0] != after[$0] }
        #expect(differing.count == 1)
        let device = try #require(differing.first)
        let (old, new) = (before[device]!, after[device]!)
        // Activation, configuration and the status subscription: the same Identifiers; the asset a new one.
        #expect(old[2] == new[2] && old[2].hasPrefix("appconfig.status."))
        #expect(old[0] == new[0] && old[1] == new[1] && old[3] != new[3])
        #expect(old[0].hasPrefix("appconfig.activation.") && old[1].hasPrefix("appconfig.config.") && old[0].utf8.count <= 64 && old[1].utf8.count <= 64)
        #expect(da[old[1]]!.token != db[new[1]]!.token)
        #expect((da[old[1]]!.payload["LegacyAppConfigAssetReference"] as? String) == old[3])
        #expect((db[new[1]]!.payload["LegacyAppConfigAssetReference"] as? String) == new[3])
        #expect(((db[new[1]]!.payload["AppConfig"] as? [String: Any])?["DataAssetReference"] as? String) == new[3])
        // The activation's content (its configuration's Identifier) did not change: nor did its token.
        #expect(da[old[0]]!.token == db[new[0]]!.token)
        // Every other declaration, token for token.
        for (id, d) in da where id != old[1] && id != old[3] { #expect(db[id]?.token == d.token, "\(id)") }
        #expect(Set(db.keys).subtracting(da.keys) == [new[3]])

        // Across shards the Identifiers are the same (they come from the app and the device alone).
        let s0 = dir.path("s0"), s1 = dir.path("s1")
        try run(Paths.fixture("demo/directory.ldif"), s0, ["--shard", "0/2"])
        try run(Paths.fixture("demo/directory.ldif"), s1, ["--shard", "1/2"])
        #expect((try Self.sets(s0)).merging(try Self.sets(s1)) { x, _ in x } == before)
        // A change of install behaviour keeps every Identifier and changes every configuration's token.
        let optional = dir.path("optional")
        try run(Paths.fixture("demo/directory.ldif"), optional, ["--install", "optional"])
        #expect(try Self.sets(optional) == before)
        let dOptional = try Self.declarations(optional)
        for id in Set(before.values.map { $0[1] }) { #expect(dOptional[id]!.token != da[id]!.token) }
    }

    @Test("--changed-only ddm into a folder: the changed device's declarations only, yet every live asset in the generation (linked from the previous one, not copied) and in assets.live")
    func liveAssetsAcrossNights() throws {
        try withTemporaryDirectory { dir in
            let ldif = try String(contentsOfFile: Paths.fixture("demo/directory.ldif"), encoding: .utf8)
            let changed = dir.path("changed.ldif")
            try #require(Self.changeDisplayName(ldif, mail: "u0000147@corp.example")).write(toFile: changed, atomically: true, encoding: .utf8)
            let out = dir.path("out")
            #expect(try render(Self.demo + ["--delivery", "ddm", "--asset-base-url", Self.base, "--out", out]).status == 3)
            let first = try #require(GenerationFolder.published(out))
            var args = Self.demo
            args[args.firstIndex(of: "--directory")! + 1] = changed
            let r = try render(args + ["--delivery", "ddm", "--asset-base-url", Self.base, "--out", out, "--changed-only"])
            #expect(r.status == 3, "\(r.stderr)")
            let second = try #require(GenerationFolder.published(out))
            #expect(second != first)
            func lines(_ f: String) throws -> [String] { try String(contentsOfFile: f, encoding: .utf8).split(separator: "\n").map(String.init) }
            #expect(try lines(second + "/index.jsonl").count == 1)
            // The status subscription (written once per generation), then the device's three.
            #expect(try lines(second + "/declarations.jsonl").count == 4)
            let live = try lines(second + "/assets.live")
            #expect(live.count == 975)
            #expect(Set(try FileManager.default.contentsOfDirectory(atPath: second + "/assets").map { "assets/" + $0 }) == Set(live))
            // An unchanged device's asset is the previous generation's file, linked.
            let kept = try #require(try lines(first + "/assets.live").first { live.contains($0) })
            var a = stat(), b = stat()
            #expect(stat(first + "/" + kept, &a) == 0 && stat(second + "/" + kept, &b) == 0)
            #expect(a.st_ino == b.st_ino)
            #expect(Set(try lines(first + "/assets.live")).symmetricDifference(live).count == 2)
        }
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
        try withTemporaryDirectory { dir in
            let out = dir.path("out"), report = dir.path("report")
            let ddm = ["--delivery", "ddm", "--asset-base-url", Self.base]
            let cases: [([String], String)] = [
                (["--delivery", "ddm"], "--delivery ddm needs --asset-base-url https://… (where the assets will be served)"),
                (["--delivery", "ddm", "--asset-base-url", "http://cdn.example.com"],
                 "--asset-base-url must be an https:// URL with a host and no query, not \"http://cdn.example.com\""),
                (["--delivery", "ddm", "--asset-base-url", "https://"], "--asset-base-url must be an https:// URL with a host and no query, not \"https://\""),
                (["--delivery", "ddm", "--asset-base-url", "https://cdn.example.com/a?x=1"],
                 "--asset-base-url must be an https:// URL with a host and no query, not \"https://cdn.example.com/a?x=1\""),
                (["--delivery", "ddm", "--asset-base-url", "https://cdn.example.com/a\u{1}b"],
                 "--asset-base-url must be an https:// URL with a host and no query, not \"https://cdn.example.com/a\\u0001b\""),
                (["--delivery", "ddm", "--asset-base-url", "https://cdn.example.com:99999/a"],
                 "--asset-base-url must be an https:// URL with a host and no query, not \"https://cdn.example.com:99999/a\""),
                (["--delivery", "mdm-settings", "--bundle-id", ""], "the app needs a bundle identifier (--bundle-id, or the spec's bundleId), not \"\""),
                (["--delivery", "mdm-install", "--app-store-id", "abc"], "--app-store-id takes the App Store's numeric ID, not \"abc\""),
                (ddm + ["--bundle-id", "com.example.app", "--app-store-id", "361309726"],
                 "give one app source (--bundle-id, --app-store-id or --manifest-url), not --bundle-id and --app-store-id"),
                (ddm + ["--app-store-id", "361309726", "--manifest-url", "https://apps.example.com/app.plist"],
                 "give one app source (--bundle-id, --app-store-id or --manifest-url), not --app-store-id and --manifest-url"),
                (ddm + ["--manifest-url", "http://apps.example.com/app.plist"], "--manifest-url must be an https:// URL with a host, not \"http://apps.example.com/app.plist\""),
                (ddm + ["--manifest-url", "https://apps.example.com/app.plist", "--license", "user"],
                 "--license is for App Store apps (--bundle-id or --app-store-id), not an in-house app's --manifest-url"),
                (["--delivery", "mdm-settings", "--manifest-url", "https://apps.example.com/app.plist"], "--manifest-url goes with --delivery ddm or mdm-install"),
                (["--asset-base-url", Self.base], "--asset-base-url goes with --delivery ddm"),
                (["--delivery", "mdm-settings", "--install", "optional"], "--install goes with --delivery ddm"),
                (["--license", "user"], "--license goes with --delivery ddm"),
                (["--app-config-key", "legacy"], "--app-config-key goes with --delivery ddm"),
                (["--include-in-backup", "false"], "--include-in-backup goes with --delivery ddm"),
                (["--ddm-layout", "files"], "--ddm-layout goes with --delivery ddm"),
                (["--extension", "com.northwind.fieldservice.widget=values.json"], "--extension goes with --delivery ddm"),
                (ddm + ["--extension", "com.northwind widget=values.json"],
                 "--extension takes COMPOSED-ID=VALUES with a composed identifier \"Bundle-ID\" or \"Bundle-ID (Team-ID)\", not \"com.northwind widget\""),
                (ddm + ["--extension", "com.a.ext=x.json", "--extension", "com.a.ext=y.json"], "--extension com.a.ext is given twice"),
                (ddm + ["--command-nonce", "n1"], "--command-nonce goes with --delivery mdm-settings or mdm-install"),
                (["--delivery", "mdm-settings", "--command-nonce", "a\tb"], "--command-nonce takes 1 to 256 bytes of printable text"),
            ]
            for (options, message) in cases {
                let r = try render(Self.demo + options + ["--out", out, "--report", report])
                #expect(r.status == 2, "\(options)")
                #expect(r.stderr == "appconfig: \(message) [delivery.option]\n", "\(options)")
                #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path) == [], "\(options) wrote something")
            }
            let binary = try render(Self.demo + ["--delivery", "mdm-settings", "--format", "binary", "--out", out])
            #expect(binary.status == 2)
            #expect(binary.stderr.contains("MDM commands are XML plists: --delivery mdm-settings takes --format xml"))
            for bad in [["--install", "sometimes"], ["--license", "team"], ["--app-config-key", "new"], ["--ddm-layout", "tree"], ["--include-in-backup", "maybe"]] {
                let r = try render(Self.demo + ddm + bad + ["--out", out])
                #expect(r.status == 2, "\(bad)")
                #expect(r.stderr.contains("\(bad[1])"), "\(bad): \(r.stderr)")
                #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path) == [], "\(bad) wrote something")
            }
        }
    }

    @Test("install, license, backup and the app's source: AppManaged as the schema asks (App Store apps with License.Assignment, in-house apps by ManifestURL); valid for the validator",
          arguments: [["--install", "optional", "--license", "user", "--include-in-backup", "false"], ["--app-store-id", "361309726"],
                      ["--manifest-url", "https://apps.example.com/northwind/manifest.plist"]])
    func appManagedOptions(_ options: [String]) throws {
        try withTemporaryDirectory { dir in
            let plain = dir.path("plain"), out = dir.path("ddm")
            _ = try render(Self.demo + ["--out", plain])
            let r = try render(Self.demo + ["--delivery", "ddm", "--asset-base-url", Self.base, "--out", out] + options)
            #expect(r.status == 3, "\(r.stderr)")
            let v = try validate(["ddm", out, plain])
            #expect(v.status == 0, "\(v.output)")
            let configuration = try #require(try Self.declarations(out).values.first { $0.payload["InstallBehavior"] != nil }).payload
            var expected: [String: Any] = [:]
            switch options[0] {
            case "--install":
                expected = ["BundleID": Self.bundle, "IncludeInBackup": false, "InstallBehavior": ["Install": "Optional", "License": ["Assignment": "User"]]]
            case "--app-store-id":
                expected = ["AppStoreID": "361309726", "InstallBehavior": ["Install": "Required", "License": ["Assignment": "Device"]]]
            default:
                expected = ["ManifestURL": options[1], "InstallBehavior": ["Install": "Required"]]
            }
            let asset = try #require(configuration["LegacyAppConfigAssetReference"])
            expected["LegacyAppConfigAssetReference"] = asset
            expected["AppConfig"] = ["DataAssetReference": asset]
            #expect(configuration as NSDictionary == expected as NSDictionary)
        }
    }

    @Test("--extension: each extension's configuration is its own asset, named in ExtensionConfigs; its spec its own with --extension-spec; valid for the validator")
    func extensions() throws {
        try withTemporaryDirectory { dir in
            let plain = dir.path("plain"), out = dir.path("ddm")
            let widgetValues = dir.path("widget.json")
            try #"{"values": {"serverURL": "https://widget.example.com/$(serialNumber)"}}"#.write(toFile: widgetValues, atomically: true, encoding: .utf8)
            let keyboard = dir.path("keyboard.xml"), keyboardValues = dir.path("keyboard.json")
            try Self.tinySpec(bundle: "com.northwind.fieldservice.keyboard", key: "layout").write(toFile: keyboard, atomically: true, encoding: .utf8)
            try #"{"values": {"layout": "$(ou|lower)"}}"#.write(toFile: keyboardValues, atomically: true, encoding: .utf8)
            _ = try render(Self.demo + ["--out", plain])
            let r = try render(Self.demo + ["--delivery", "ddm", "--asset-base-url", Self.base, "--out", out,
                                            "--extension", "com.northwind.fieldservice.widget=\(widgetValues)",
                                            "--extension", "com.northwind.fieldservice.keyboard (ABCDE12345)=\(keyboardValues)",
                                            "--extension-spec", "com.northwind.fieldservice.keyboard (ABCDE12345)=\(keyboard)"])
            #expect(r.status == 3, "\(r.stderr)")
            let v = try validate(["ddm", out, plain])
            #expect(v.status == 0, "\(v.output)")
            let declarations = try Self.declarations(out)
            let sets = try Self.sets(out)
            let (device, set) = try #require(sets.first)
            // Activation, configuration, status subscription, the app's asset, each extension's.
            #expect(set.count == 6, "\(device)")
            let configuration = declarations[set[1]]!.payload
            let extensionConfigs = try #require(configuration["ExtensionConfigs"] as? [String: [String: String]])
            #expect(extensionConfigs.keys.sorted() == ["com.northwind.fieldservice.keyboard (ABCDE12345)", "com.northwind.fieldservice.widget"])
            #expect(extensionConfigs["com.northwind.fieldservice.widget"]?["DataAssetReference"] == set[4])
            #expect(extensionConfigs["com.northwind.fieldservice.keyboard (ABCDE12345)"]?["DataAssetReference"] == set[5])
            // The keyboard's asset is its own spec's plist, with the device's OU.
            let url = try #require((declarations[set[5]]!.payload["Reference"] as? [String: Any])?["DataURL"] as? String)
            let published = try #require(GenerationFolder.published(out))
            let keyboardPlist = try #require(try PropertyListSerialization.propertyList(
                from: Data(contentsOf: URL(fileURLWithPath: published + "/assets/" + url.split(separator: "/").last! + ".plist")), format: nil) as? [String: Any])
            #expect(keyboardPlist.keys.sorted() == ["ManagedAppConfigurationVersion", "layout"])
            #expect((keyboardPlist["layout"] as? String)?.isEmpty == false)
        }
    }

    /// A one-key spec: a string `key`, whose default is empty.
    static func tinySpec(bundle: String, key: String) -> String {
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <managedAppConfiguration>
          <version>1</version>
          <bundleId>\(bundle)</bundleId>
          <dict>
            <string keyName="\(key)"><defaultValue><value></value></defaultValue></string>
          </dict>
        </managedAppConfiguration>
        """
    }

    @Test("a configuration over 1 MB is device.asset-too-large for ddm (the device fails, the rest publish); the same plist is fine bare")
    func assetTooLarge() throws {
        try withTemporaryDirectory { dir in
            let spec = dir.path("spec.xml"), values = dir.path("values.json")
            try Self.tinySpec(bundle: "com.example.big", key: "notes").write(toFile: spec, atomically: true, encoding: .utf8)
            // One device's value ($(device.Notes)) is over 1 MB; the others are short.
            let inventory = dir.path("inventory.csv")
            let big = String(repeating: "x", count: 1_048_576)
            try "Serial Number,UDID,Notes\nS1,U1,short\nS2,U2,\(big)\nS3,U3,also short\n".write(toFile: inventory, atomically: true, encoding: .utf8)
            try #"{"values": {"notes": "$(device.Notes)"}}"#.write(toFile: values, atomically: true, encoding: .utf8)
            let report = dir.path("report")
            let args = ["render", "--spec", spec, "--values", values, "--inventory", inventory, "--quiet", "--max-failure-ratio", "0.5"]
            let r = try appconfig(args + ["--delivery", "ddm", "--asset-base-url", Self.base, "--out", dir.path("ddm"), "--report", report])
            #expect(r.status == 3, "\(r.stdout)\(r.stderr)")
            #expect(r.stdout.contains("rendered 2 of 3 devices"))
            // The made-up UDIDs (U1...) are an export check's warning; the device's failure after it.
            let errors = try String(contentsOfFile: report + "/errors.jsonl", encoding: .utf8).split(separator: "\n").filter { !$0.contains("\"inventory.") }
            #expect(errors.count == 1)
            let error = try #require(try JSONSerialization.jsonObject(with: Data(errors[0].utf8)) as? [String: Any])
            #expect(error["code"] as? String == "device.asset-too-large")
            #expect(error["device"] as? String == "U2")
            #expect((error["message"] as? String)?.hasSuffix("bytes, more than the 1048576 bytes Apple allows app config data (a DDM data asset)") == true)
            let bare = try appconfig(args + ["--out", dir.path("plain")])
            #expect(bare.status == 0, "\(bare.stdout)\(bare.stderr)")
        }
    }

    @Test("--command-nonce: another CommandUUID for the same command, still a valid command; the same nonce, the same UUID")
    func commandNonce() throws {
        try withTemporaryDirectory { dir in
            let plain = dir.path("plain")
            _ = try render(Self.demo + ["--format", "xml", "--out", plain])
            func uuids(_ extra: [String], _ name: String) throws -> [String: String] {
                let out = dir.path(name)
                #expect(try render(Self.demo + ["--delivery", "mdm-settings", "--out", out] + extra).status == 3)
                var result: [String: String] = [:]
                for p in try FileManager.default.subpathsOfDirectory(atPath: out + "/") where p.hasSuffix(".plist") {
                    let c = try PropertyListSerialization.propertyList(from: Data(contentsOf: URL(fileURLWithPath: out + "/" + p)), format: nil) as! [String: Any]
                    result[p] = c["CommandUUID"] as? String
                }
                return result
            }
            let none = try uuids([], "none"), n1 = try uuids(["--command-nonce", "2026-11-25T21:00"], "n1"), again = try uuids(["--command-nonce", "2026-11-25T21:00"], "again")
            #expect(none.count == 975 && n1.count == 975)
            #expect(none.allSatisfy { n1[$0.key] != $0.value })
            #expect(n1 == again)
            let v = try validate(["mdm-settings", dir.path("n1"), plain, Self.bundle])
            #expect(v.status == 0, "\(v.output)")
        }
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
        let asset = FileManager.default.temporaryDirectory.appendingPathComponent("appconfig-preview-\(UUID().uuidString).plist").path
        defer { try? FileManager.default.removeItem(atPath: asset) }
        let ddm = try appconfig(["compile", example, "--values", values, "--delivery", "ddm", "--asset-base-url", Self.base, "--out", asset] + vars)
        #expect(ddm.status == 0, "\(ddm.stderr)")
        let jsonLines = ddm.stdout.split(separator: "\n").filter { $0.hasPrefix("{") }
        let types = jsonLines.prefix(3).compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["Type"] as? String }
        #expect(types == ["com.apple.asset.data", "com.apple.configuration.app.managed", "com.apple.activation.simple"])
        // Render's default: a binary asset, so the preview's hashes are the ones render writes.
        let bytes = try #require(FileManager.default.contents(atPath: asset))
        #expect(bytes.prefix(8) == Data("bplist00".utf8))
        #expect(ddm.stdout.contains(SHA256Digest(of: Array(bytes)).hex))
    }
}
