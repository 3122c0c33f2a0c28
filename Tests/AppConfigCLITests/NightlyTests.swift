import AppConfigBatch
@testable import AppConfigOutput
import Digest
import Foundation
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Nightly runs through the built binary: what changed since the last run, only the changes shipped,
/// and a bad night never replacing a good one.
@Suite("Nightly runs: manifests, changes, safe publishing", .serialized)
struct NightlyTests {
    static let spec = ["--spec", Paths.fixture("demo/spec.xml"), "--values", Paths.fixture("demo/values.json")]

    func render(_ arguments: [String]) throws -> ProcessResult {
        try appconfig(["render"] + Self.spec + arguments + ["--quiet"])
    }

    /// A generated fleet of `devices` in `dir` (tools/gen-fleet).
    static func fleet(_ devices: Int, in dir: TemporaryDirectory) throws -> (inventory: String, directory: String) {
        let out = dir.path("fleet")
        let r = try runProcess(Paths.root.appendingPathComponent("tools/gen-fleet").path, ["--devices", "\(devices)", "--out", out])
        #expect(r.status == 0, "\(r.stderr)")
        return (out + "/inventory.csv", out + "/directory.ldif")
    }

    static func lines(_ path: String) throws -> [String] {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
    }

    /// The files of a published folder output, by path (the closing files apart).
    static func files(_ out: String) throws -> [String: Data] {
        var result: [String: Data] = [:]
        for p in try FileManager.default.subpathsOfDirectory(atPath: out + "/") where p.hasSuffix(".plist") {
            result[p] = try Data(contentsOf: URL(fileURLWithPath: out + "/" + p))
        }
        return result
    }

    @Test("30k devices: one user's OU changed, two devices dropped, one added: exactly those four in changes.jsonl; --changed-only writes exactly the changed and added outputs, byte-identical to a full run")
    func changes() throws {
        try withTemporaryDirectory { dir in
            let (inventory, directory) = try Self.fleet(30_000, in: dir)
            let out = dir.path("out"), report = dir.path("report")
            let first = try render(["--inventory", inventory, "--directory", directory, "--out", out])
            // gen-fleet is deterministic: 1% of its devices have no user, so the run publishes with failures.
            #expect(first.status == 3, "\(first.stderr)")
            let before = try Self.files(out)

            // Tonight's inputs. A user with exactly one device, an ASCII DN and a region to move from.
            var rows = try String(contentsOfFile: inventory, encoding: .utf8).components(separatedBy: "\r\n")
            let header = rows.removeFirst()
            if rows.last == "" { rows.removeLast() }
            func mail(_ row: String) -> String { row.components(separatedBy: ",").first { $0.hasSuffix("@corp.example") } ?? "" }
            func udid(_ row: String) -> String { row.components(separatedBy: ",").first { $0.count == 25 && $0.contains("-") && $0 == $0.uppercased() } ?? "" }
            var devicesOfUser: [String: Int] = [:]
            for r in rows { devicesOfUser[mail(r), default: 0] += 1 }
            var ldif = try String(contentsOfFile: directory, encoding: .utf8)
            // The devices rendered last night, by UDID (the file name of their plist).
            let renderedUDIDs = Set(before.keys.map { String($0.split(separator: "/").last!.dropLast(".plist".count)) })
            let entries = Dictionary(ldif.components(separatedBy: "\n\n").compactMap { entry -> (String, String)? in
                guard let line = entry.split(separator: "\n").first(where: { $0.hasPrefix("mail: ") }) else { return nil }
                return (String(line.dropFirst(6)), entry)
            }, uniquingKeysWith: { a, _ in a })
            func plainDN(_ mail: String) -> String? {
                guard let first = entries[mail]?.split(separator: "\n").first, first.hasPrefix("dn: ") else { return nil }
                return String(first.dropFirst(4))
            }
            let moved = try #require(rows.first { r in
                let m = mail(r)
                return devicesOfUser[m] == 1 && plainDN(m)?.contains("OU=EMEA") == true && renderedUDIDs.contains(udid(r))
            })
            let dn = try #require(plainDN(mail(moved)))
            ldif = ldif.replacingOccurrences(of: "dn: " + dn + "\n", with: "dn: " + dn.replacingOccurrences(of: "OU=EMEA", with: "OU=APAC") + "\n")
            let rendered = rows.filter { renderedUDIDs.contains(udid($0)) && $0 != moved }
            let dropped = [rendered[10], rendered[20]]
            var added = rendered[30].components(separatedBy: ",")
            let newUDID = "00000000-0000000000000001"
            added = added.map { $0 == udid(rendered[30]) ? newUDID : $0 }
            let tonight = [header] + rows.filter { !dropped.contains($0) } + [added.joined(separator: ",")]
            let inventory2 = dir.path("tonight.csv"), directory2 = dir.path("tonight.ldif")
            try tonight.joined(separator: "\r\n").write(toFile: inventory2, atomically: true, encoding: .utf8)
            try ldif.write(toFile: directory2, atomically: true, encoding: .utf8)

            // The full run of tonight's inputs, into its own folder, is what the changes must equal.
            let full = dir.path("full")
            _ = try render(["--inventory", inventory2, "--directory", directory2, "--out", full])
            let fullFiles = try Self.files(full)

            // --changed-only against the published generation (the default --since for --out); the
            // dropped devices removed (without --remove-missing they would be kept, as missing).
            let r = try render(["--inventory", inventory2, "--directory", directory2, "--out", out, "--changed-only", "--remove-missing", "--report", report])
            #expect(r.status == 3, "\(r.stdout)\(r.stderr)")
            let changes = try Self.lines(report + "/changes.jsonl").map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: String] }
            let expected = [(udid(moved), "changed"), (udid(dropped[0]), "removed"), (udid(dropped[1]), "removed"), (newUDID, "added")]
                .sorted { $0.0.utf8.lexicographicallyPrecedes($1.0.utf8) }
            #expect(changes.map { [$0["device"]!, $0["change"]!] } == expected.map { [$0.0, $0.1] })
            let summary = try reportSummary(report)
            let counts = try #require(summary["changes"] as? [String: Int])
            #expect(counts["added"] == 1 && counts["changed"] == 1 && counts["removed"] == 2)
            #expect(counts["unchanged"] == before.count - 3)
            let written = try Self.files(out)
            #expect(Set(written.keys) == Set(fullFiles.keys.filter { $0.hasSuffix("/\(udid(moved)).plist") || $0.hasSuffix("/\(newUDID).plist") }))
            for (path, bytes) in written { #expect(bytes == fullFiles[path], "\(path)") }
            // The manifest still lists the whole fleet, so the next night compares with all of it.
            let manifest = try Self.lines(out + "/manifest.tsv").filter { $0.count > 64 && $0.contains("\t") && !$0.hasPrefix("end\t") }
            #expect(manifest.count == fullFiles.count)
            let index = try Self.lines(out + "/index.jsonl")
            #expect(index.count == 2)
        }
    }

    @Test("a device gone from the inventory keeps its set and is missing; --remove-missing writes its removal (mdm-settings: Settings, mdm-install: RemoveApplication, ddm: an empty set); a tar's manifest serves as --since",
          arguments: [["--delivery", "mdm-settings"], ["--delivery", "mdm-install"], ["--delivery", "ddm", "--asset-base-url", "https://cdn.example.com/a"]])
    func removals(_ delivery: [String]) throws {
        try withTemporaryDirectory { dir in
            let directory = ["--directory", Paths.fixture("demo/directory.ldif")]
            let tar = dir.path("last.tar"), tonight = dir.path("tonight.tar")
            #expect(try render(delivery + directory + ["--inventory", Paths.fixture("demo/inventory.csv"), "--tar", tar]).status == 3)
            let lastManifest = try Self.lines(tar + ".manifest.tsv")
            let rows = try String(contentsOfFile: Paths.fixture("demo/inventory.csv"), encoding: .utf8).components(separatedBy: "\r\n")
            let gone = "A8B14A37-9FAD6EA111EF0B59"  // the first device, which renders
            let inventory = dir.path("inv.csv")
            try rows.filter { !$0.contains(gone) }.joined(separator: "\r\n").write(toFile: inventory, atomically: true, encoding: .utf8)
            let report = dir.path("report")
            func names(_ tar: String) throws -> [String] { try runProcess("/usr/bin/tar", ["-tf", tar]).stdout.split(separator: "\n").map(String.init) }

            // Without --remove-missing: nothing removes it; it is missing, and carried in the manifest.
            let kept = try render(delivery + directory + ["--inventory", inventory, "--tar", tonight, "--since", tar, "--changed-only", "--report", report])
            #expect(kept.status == 3, "\(kept.stderr)")
            #expect(kept.stdout.contains("\nmissing: 1 devices are not in tonight's inputs; they keep their last configuration (--remove-missing removes the app from them)\n"))
            #expect(try Self.lines(report + "/changes.jsonl") == [#"{"device":"\#(gone)","change":"missing"}"#])
            // Its line is carried into tonight's manifest as it was (the header names tonight's inputs).
            #expect(try Self.lines(tonight + ".manifest.tsv").filter { $0.contains("\t") } == lastManifest.filter { $0.contains("\t") })
            #expect(try names(tonight).allSatisfy { !$0.contains(gone) })
            if delivery[1] == "ddm" {
                let extracted = dir.path("kept")
                try FileManager.default.createDirectory(atPath: extracted, withIntermediateDirectories: true)
                #expect(try runProcess("/usr/bin/tar", ["-xf", tonight, "-C", extracted]).status == 0)
                #expect(try String(contentsOfFile: extracted + "/index.jsonl", encoding: .utf8).isEmpty)
                // Its asset is still live: the archive's assets.live is the last one's.
                let lastLive = try runProcess("/usr/bin/tar", ["-xOf", tar, "assets.live"]).stdout
                #expect(try String(contentsOfFile: extracted + "/assets.live", encoding: .utf8) == lastLive)
            }

            // With --remove-missing: its removal. The manifest inside the archive (the one beside it removed) is found as well.
            try FileManager.default.removeItem(atPath: tar + ".manifest.tsv")
            try? FileManager.default.removeItem(atPath: tonight)
            let r = try render(delivery + directory + ["--inventory", inventory, "--tar", tonight, "--since", tar, "--changed-only", "--remove-missing", "--report", report])
            #expect(r.status == 3, "\(r.stderr)")
            let list = try names(tonight)
            // The removal command is listed with its path (changes.jsonl, index.jsonl); a DDM set in
            // the jsonl layout is a line of the index, with no file of its own.
            let path = delivery[1] == "ddm" ? "" : #","path":"\#(list.first!.prefix(3))/\#(gone).plist""#
            #expect(try Self.lines(report + "/changes.jsonl") == [#"{"device":"\#(gone)","change":"removed"\#(path)}"#])
            #expect(r.stdout.split(separator: "\n").dropFirst().first?.hasPrefix("removal: 1 devices gone from the inputs lose ") == true, "\(r.stdout)")
            let extracted = dir.path("x")
            try FileManager.default.createDirectory(atPath: extracted, withIntermediateDirectories: true)
            #expect(try runProcess("/usr/bin/tar", ["-xf", tonight, "-C", extracted]).status == 0)
            switch delivery[1] {
            case "mdm-settings", "mdm-install":
                #expect(list.filter { $0.hasSuffix(".plist") } == ["\(list.first!.prefix(3))/\(gone).plist"])
                let command = try PropertyListSerialization.propertyList(from: Data(contentsOf: URL(fileURLWithPath: extracted + "/" + list.first!)), format: nil) as! [String: Any]
                let body = command["Command"] as! [String: Any]
                if delivery[1] == "mdm-settings" {
                    let item = (body["Settings"] as! [[String: Any]])[0]
                    #expect(item["Item"] as? String == "ApplicationConfiguration" && item["Configuration"] == nil)
                    #expect(item["Identifier"] as? String == "com.northwind.fieldservice")
                } else {
                    #expect(body as NSDictionary == ["RequestType": "RemoveApplication", "Identifier": "com.northwind.fieldservice"] as NSDictionary)
                }
                #expect(try String(contentsOfFile: extracted + "/index.jsonl", encoding: .utf8)
                        == #"{"device":"\#(gone)","path":"\#(list.first!)","removed":true}"# + "\n")
            default:
                #expect(try String(contentsOfFile: extracted + "/index.jsonl", encoding: .utf8) == #"{"device":"\#(gone)","declarations":[],"removed":true}"# + "\n")
                #expect(!list.contains { $0.hasPrefix("assets/") || $0.hasPrefix("declarations/") })
            }
            #expect(Array(list.suffix(2)) == [delivery[1] == "ddm" ? "assets.live" : "index.jsonl", "manifest.tsv"])
            #expect(try !Self.lines(tonight + ".manifest.tsv").contains { $0.hasSuffix("\t" + gone) })
        }
    }

    @Test("--max-removal-ratio: a third of the fleet gone with --remove-missing is held back (status 1); without it they are missing and kept",
          arguments: [["--delivery", "ddm", "--asset-base-url", "https://cdn.example.com/a"], ["--delivery", "mdm-settings"]])
    func removalGuard(_ delivery: [String]) throws {
        try withTemporaryDirectory { dir in
            let directory = ["--directory", Paths.fixture("demo/directory.ldif")]
            let out = dir.path("out")
            #expect(try render(delivery + directory + ["--inventory", Paths.fixture("demo/inventory.csv"), "--out", out]).status == 3)
            let good = try #require(GenerationFolder.published(out))
            let rows = try String(contentsOfFile: Paths.fixture("demo/inventory.csv"), encoding: .utf8).components(separatedBy: "\r\n")
            let inventory = dir.path("inv.csv")
            // The header and two rows of every three: 321 of the 975 devices rendered last night.
            try rows.enumerated().filter { $0.offset == 0 || $0.offset % 3 != 0 }.map(\.element).joined(separator: "\r\n")
                .write(toFile: inventory, atomically: true, encoding: .utf8)
            let held = try render(delivery + directory + ["--inventory", inventory, "--out", out, "--remove-missing"])
            #expect(held.status == 1)
            let lines = held.stdout.split(separator: "\n").map(String.init)
            #expect(lines.dropFirst().first?.hasPrefix("removal: 321 devices gone from the inputs would lose ") == true, "\(held.stdout)")
            #expect(held.stdout.contains("321 of 975 devices would lose the app (32.9%, more than --max-removal-ratio 0.01: a wrong input? --force publishes it): nothing was published"), "\(held.stdout)")
            #expect(GenerationFolder.published(out) == good)
            let kept = try render(delivery + directory + ["--inventory", inventory, "--out", out])
            #expect(kept.status == 3, "\(kept.stdout)")
            #expect(kept.stdout.contains("missing: 321 devices are not in tonight's inputs"))
            let manifest = try Self.lines(out + "/manifest.tsv").filter { $0.count > 64 && $0.contains("\t") && !$0.hasPrefix("end\t") }
            #expect(manifest.count == (try Self.lines(good + "/manifest.tsv").filter { $0.count > 64 && $0.contains("\t") && !$0.hasPrefix("end\t") }.count))
        }
    }

    @Test("a night whose directory export is empty: nothing published, status 1, the good generation stays; the report says what would have happened")
    func emptyDirectory() throws {
        try withTemporaryDirectory { dir in
            let out = dir.path("out"), report = dir.path("report")
            let demo = ["--inventory", Paths.fixture("demo/inventory.csv")]
            #expect(try render(demo + ["--directory", Paths.fixture("demo/directory.ldif"), "--out", out]).status == 3)
            let good = try #require(GenerationFolder.published(out))
            // A file without entries is refused as it is read; one whose entries hold no person loads
            // no user, every device fails, and the render is not published.
            let empty = dir.path("empty.ldif")
            try "# the export failed\n".write(toFile: empty, atomically: true, encoding: .utf8)
            let refused = try appconfig(["render"] + Self.spec + demo + ["--directory", empty, "--out", out])
            #expect(refused.status == 1)
            #expect(refused.stderr == "appconfig: \(empty) holds no directory entries [directory.empty]\n")
            #expect(GenerationFolder.published(out) == good)
            try "dn: ou=People,dc=corp,dc=example\nobjectClass: organizationalUnit\n".write(toFile: empty, atomically: true, encoding: .utf8)
            let unjoined = try appconfig(["render"] + Self.spec + demo + ["--directory", empty, "--out", out])
            #expect(unjoined.status == 1)
            #expect(unjoined.stderr.hasSuffix("(--allow-unjoined renders the devices without users) [join.none]\n"), "\(unjoined.stderr)")
            let r = try appconfig(["render"] + Self.spec + demo + ["--directory", empty, "--out", out, "--report", report, "--allow-unjoined"])
            #expect(r.status == 1)
            #expect(r.stdout.contains("no device rendered: nothing was published\n"), "\(r.stdout)")
            #expect(GenerationFolder.published(out) == good)
            let summary = try reportSummary(report)
            #expect(summary["published"] as? Bool == false)
            #expect((summary["devices"] as? [String: Int])?["failed"] == 1000)
            #expect(summary["notPublished"] as? String == "no device rendered")
            // A failed share under the ratio is published (exit 3), and --force publishes past it.
            // (--rerender: tonight's inputs are the good generation's.)
            #expect(try render(demo + ["--directory", Paths.fixture("demo/directory.ldif"), "--out", out, "--max-failure-ratio", "0.02", "--rerender"]).status == 1)
            #expect(try render(demo + ["--directory", Paths.fixture("demo/directory.ldif"), "--out", out, "--max-failure-ratio", "0.02", "--force", "--rerender"]).status == 3)
        }
    }

    @Test("a night that changes most devices is held back (a wrong input?) unless --force; --dry-run --since shows the counts and writes nothing")
    func changeRatio() throws {
        try withTemporaryDirectory { dir in
            let out = dir.path("out")
            let sources = ["--inventory", Paths.fixture("demo/inventory.csv"), "--directory", Paths.fixture("demo/directory.ldif")]
            #expect(try render(sources + ["--out", out]).status == 3)
            let good = try #require(GenerationFolder.published(out))
            let values = dir.path("values.json")
            try String(contentsOfFile: Paths.fixture("demo/values.json"), encoding: .utf8)
                .replacingOccurrences(of: "\"syncIntervalMinutes\": 30", with: "\"syncIntervalMinutes\": 45").write(toFile: values, atomically: true, encoding: .utf8)
            let changed = ["--spec", Paths.fixture("demo/spec.xml"), "--values", values] + sources
            let dry = try appconfig(["render"] + changed + ["--dry-run", "--since", out])
            // The check before a rollout: the counts, and the status the run would have (held back: 1).
            #expect(dry.status == 1)
            #expect(dry.stdout.contains("since \(out): 0 added, 975 changed, 0 removed, 0 missing, 0 unchanged\n"), "\(dry.stdout)")
            #expect(dry.stdout.contains("(100.0%, more than --max-change-ratio 0.5: a wrong input? --force publishes it): it would not be published\n"))
            #expect(GenerationFolder.published(out) == good)
            let held = try appconfig(["render"] + changed + ["--out", out])
            #expect(held.status == 1)
            #expect(held.stdout.contains("975 changed and 0 removed of 975 devices (100.0%, more than --max-change-ratio 0.5: a wrong input? --force publishes it): nothing was published"), "\(held.stdout)")
            #expect(GenerationFolder.published(out) == good)
            #expect(try appconfig(["render"] + changed + ["--out", out, "--force", "--quiet"]).status == 3)
            #expect(GenerationFolder.published(out) != good)
            // --keep 1: only the published generation stays (--rerender: the same inputs again).
            #expect(try appconfig(["render"] + changed + ["--out", out, "--keep", "1", "--rerender", "--quiet"]).status == 3)
            #expect(try FileManager.default.contentsOfDirectory(atPath: out + ".generations").filter { !$0.hasPrefix(".") }.count == 1)
        }
    }

    @Test("a second render to an output that another run holds fails with one clear line and writes nothing")
    func lock() throws {
        try withTemporaryDirectory { dir in
            let out = dir.path("out")
            let fd = open(out + ".lock", O_RDWR | O_CREAT, 0o644)
            #expect(flock(fd, LOCK_EX | LOCK_NB) == 0)
            let r = try render(["--inventory", Paths.fixture("demo/inventory.csv"), "--directory", Paths.fixture("demo/directory.ldif"), "--out", out])
            #expect(r.status == 1)
            #expect(r.stderr == "appconfig: \(out) is being written by another appconfig run (it holds \(out).lock); nothing was written [output.locked]\n")
            #expect(!FileManager.default.fileExists(atPath: out + ".generations"))
            close(fd)
            #expect(try render(["--inventory", Paths.fixture("demo/inventory.csv"), "--directory", Paths.fixture("demo/directory.ldif"), "--out", out]).status == 3)
        }
    }

    @Test("--changed-only on a first night publishes every device and says so; a job file's flag is turned off by --no-changed-only")
    func changedOnlyWithoutPrevious() throws {
        try withTemporaryDirectory { dir in
            let out = dir.path("out")
            let sources = ["--inventory", Paths.fixture("demo/inventory.csv"), "--directory", Paths.fixture("demo/directory.ldif")]
            let r = try render(sources + ["--out", out, "--changed-only"])
            #expect(r.status == 3, "\(r.stderr)")
            #expect(r.stderr == "warning: --changed-only: no previous generation to compare with (a first night): every device is published [since.missing]\n")
            let first = try #require(GenerationFolder.published(out))
            #expect(try Self.files(first).count == 975)
            // A job file that sets the flag, and the command line that turns it off.
            let job = dir.path("job.json")
            try #"{"changed-only": true, "force": true}"#.write(toFile: job, atomically: true, encoding: .utf8)
            let full = try appconfig(["render", job] + Self.spec + sources + ["--out", out, "--no-changed-only", "--no-force", "--rerender", "--quiet"])
            #expect(full.status == 3, "\(full.stderr)")
            #expect(try Self.files(try #require(GenerationFolder.published(out))).count == 975)
        }
    }

    @Test("--changed-only with nothing added, changed, removed or missing publishes nothing new and says so; the good generation stays")
    func nothingChanged() throws {
        try withTemporaryDirectory { dir in
            let out = dir.path("out"), report = dir.path("report")
            let sources = ["--inventory", Paths.fixture("demo/inventory.csv"), "--directory", Paths.fixture("demo/directory.ldif")]
            #expect(try render(sources + ["--out", out]).status == 3)
            let good = try #require(GenerationFolder.published(out))
            // --rerender: past the fingerprints (the same inputs), to the digests.
            let r = try render(sources + ["--out", out, "--changed-only", "--rerender", "--report", report])
            #expect(r.status == 3, "\(r.stderr)")
            #expect(r.stdout.contains("since \(out): 0 added, 0 changed, 0 removed, 0 missing, 975 unchanged\n"), "\(r.stdout)")
            #expect(r.stdout.hasSuffix("nothing changed since \(out): nothing new was published\n"), "\(r.stdout)")
            #expect(GenerationFolder.published(out) == good)
            #expect(try FileManager.default.contentsOfDirectory(atPath: out + ".generations").filter { !$0.hasPrefix(".") }.count == 1)
            let summary = try reportSummary(report)
            #expect(summary["nothingChanged"] as? Bool == true && summary["published"] as? Bool == false)
        }
    }

    @Test("summary.json is rewritten on every exit: a fatal night records its error and published false; the lock of another run is not overwritten")
    func summaryOnFatalExit() throws {
        try withTemporaryDirectory { dir in
            let out = dir.path("out"), report = dir.path("report")
            let sources = ["--inventory", Paths.fixture("demo/inventory.csv"), "--directory", Paths.fixture("demo/directory.ldif")]
            #expect(try render(sources + ["--out", out, "--report", report]).status == 3)
            func summary() throws -> [String: Any] {
                try reportSummary(report)
            }
            #expect(try summary()["published"] as? Bool == true)
            let missing = dir.path("gone.csv")
            let r = try render(["--inventory", missing, "--out", out, "--report", report])
            #expect(r.status == 1)
            let s = try summary()
            #expect(s["published"] as? Bool == false)
            #expect(s["error"] as? [String: String] == ["code": "input.read", "message": "cannot read \(missing): No such file or directory"])
            #expect(try Self.lines(report + "/errors.jsonl") == [#"{"code":"input.read","message":"cannot read \#(missing): No such file or directory","source":"\#(missing)"}"#])
            // A spec that does not compile: its problems are the errors.
            let spec = dir.path("bad.xml")
            try "<managedAppConfiguration><version>1</version></managedAppConfiguration>".write(toFile: spec, atomically: true, encoding: .utf8)
            let bad = try appconfig(["render", "--spec", spec] + sources + ["--out", out, "--report", report, "--quiet"])
            #expect(bad.status == 1)
            #expect(try summary()["error"] as? [String: String] == ["code": "structure.missing-element", "message": "<managedAppConfiguration> needs a <bundleId> element"])
            // Another run holds the output's lock: its report is its own, not this refused run's.
            let before = try Data(contentsOf: URL(fileURLWithPath: report + "/summary.json"))
            let holder = Process()
            holder.executableURL = URL(fileURLWithPath: "/usr/bin/flock")
            holder.arguments = [out + ".lock", "sleep", "30"]
            try holder.run()
            defer { holder.terminate() }
            // Held once a non-blocking flock of the same file fails.
            for _ in 0..<200 where try runProcess("/usr/bin/flock", ["-n", out + ".lock", "true"]).status == 0 { usleep(20_000) }
            let refused = try render(sources + ["--out", out, "--report", report])
            #expect(refused.status == 1)
            #expect(refused.stderr.contains("[output.locked]"), "\(refused.stderr)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: report + "/summary.json")) == before)
        }
    }

    @Test("--dry-run on the command line leaves the job file's report folder as it is, and says so; --report writes it")
    func dryRunReport() throws {
        try withTemporaryDirectory { dir in
            let out = dir.path("out"), report = dir.path("report")
            let job = dir.path("job.json")
            try #"{"inventory": "\#(Paths.fixture("demo/inventory.csv"))", "directory": "\#(Paths.fixture("demo/directory.ldif"))", "out": "\#(out)", "report": "\#(report)"}"#
                .write(toFile: job, atomically: true, encoding: .utf8)
            #expect(try appconfig(["render", job] + Self.spec + ["--quiet"]).status == 3)
            let night = try Data(contentsOf: URL(fileURLWithPath: report + "/summary.json"))
            // The dry run compares with the job's output, as the night would: the same inputs, nothing to do (0).
            let dry = try appconfig(["render", job] + Self.spec + ["--dry-run", "--quiet"])
            #expect(dry.status == 0)
            #expect(dry.stderr == "appconfig: --dry-run: the job file's report folder \(report) is left as it is (give --report to write one)\n")
            #expect(try Data(contentsOf: URL(fileURLWithPath: report + "/summary.json")) == night)
            let other = dir.path("dry")
            #expect(try appconfig(["render", job] + Self.spec + ["--dry-run", "--report", other, "--quiet"]).status == 0)
            let s = try reportSummary(other)
            #expect(s["dryRun"] as? Bool == true)
        }
    }

    @Test("relative outputs of one letter, in the working folder: --out o twice (the second replaces the first), --tar t")
    func relativeOutputs() throws {
        try withTemporaryDirectory { dir in
            let job = (["render"] + Self.spec + ["--inventory", Paths.fixture("demo/inventory.csv"), "--directory", Paths.fixture("demo/directory.ldif"), "--quiet"])
                .map { "'\($0)'" }.joined(separator: " ")
            for output in ["--out o", "--out o --rerender", "--tar t"] {
                let r = try runProcess("/bin/sh", ["-c", "cd '\(dir.path)' && '\(Paths.appconfigBinary)' \(job) \(output)"])
                #expect(r.status == 3, "\(output): \(r.stderr)")
            }
            let published = try #require(GenerationFolder.published(dir.path("o")))
            #expect(try Self.files(published).count == 975)
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path("o.generations")).filter { !$0.hasPrefix(".") }.count == 2)
            #expect(FileManager.default.fileExists(atPath: dir.path("t.manifest.tsv")))
        }
    }

    @Test("devices without a user (shared iPads): join.no-user, failures that say so, counted apart from users not found; the refusal names --missing and --force")
    func devicesWithoutUser() throws {
        try withTemporaryDirectory { dir in
            // Every tenth device's Email Address (its user key) emptied.
            var rows = try String(contentsOfFile: Paths.fixture("demo/inventory.csv"), encoding: .utf8).components(separatedBy: "\r\n")
            var shared = 0
            for i in stride(from: 1, to: rows.count, by: 10) where rows[i].contains("@corp.example") {
                rows[i] = rows[i].replacingOccurrences(of: #",u\d{7}@corp\.example,"#, with: ",,", options: .regularExpression)
                shared += 1
            }
            let inventory = dir.path("inv.csv")
            try rows.joined(separator: "\r\n").write(toFile: inventory, atomically: true, encoding: .utf8)
            let report = dir.path("report")
            let r = try render(["--inventory", inventory, "--directory", Paths.fixture("demo/directory.ldif"), "--dry-run", "--report", report])
            #expect(r.status == 1)
            #expect(r.stdout.contains("devices have no user; --missing empty|omit renders devices whose variables are missing, --force publishes anyway"), "\(r.stdout)")
            let summary = try reportSummary(report)
            let devices = try #require(summary["devices"] as? [String: Int])
            let errors = try String(contentsOfFile: report + "/errors.jsonl", encoding: .utf8).split(separator: "\n")
                .map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any] }
            // The emptied rows are devices without a user (less any row the inventory reader skips).
            let noUser = errors.filter { $0["code"] as? String == "join.no-user" }.count
            #expect(devices["devicesWithoutUser"] == noUser)
            #expect(noUser >= shared - 1 && noUser > 90)
            // Users not found are the directory's misses alone (the demo's 15, less those emptied).
            #expect((devices["usersNotFound"] ?? 0) <= 15 && (devices["usersNotFound"] ?? 0) == errors.filter { $0["code"] as? String == "join.user-not-found" }.count)
            #expect(errors.contains { ($0["message"] as? String)?.hasSuffix(#"is missing for this device (the device has no user: its "Email Address" is empty)"#) == true })
            #expect(errors.first { $0["code"] as? String == "join.no-user" }?["message"] as? String
                    == #"the device has no user: its "Email Address" is empty (a shared device?); its user variables are missing"#)
        }
    }

    @Test("an unwritable --report is found before anything is rendered or published")
    func unwritableReport() throws {
        try withTemporaryDirectory { dir in
            let out = dir.path("out"), blocker = dir.path("file")
            #expect(FileManager.default.createFile(atPath: blocker, contents: Data()))
            let r = try render(["--inventory", Paths.fixture("demo/inventory.csv"), "--directory", Paths.fixture("demo/directory.ldif"),
                                "--out", out, "--report", blocker + "/report"])
            #expect(r.status == 1)
            #expect(r.stderr.hasPrefix("appconfig: cannot create \(blocker)/report: "))
            #expect(r.stderr.hasSuffix(" [report.write]\n"))
            #expect(!FileManager.default.fileExists(atPath: out) && !FileManager.default.fileExists(atPath: out + ".generations"))
        }
    }

    @Test("SIGKILL at random points of a 300k-device run, 20 times: the published generation is always whole and matches its manifest; the next run cleans up")
    func sigkill() throws {
        try withTemporaryDirectory { dir in
            let (inventory, directory) = try Self.fleet(300_000, in: dir)
            let out = dir.path("out")
            let arguments = ["render"] + Self.spec + ["--inventory", inventory, "--directory", directory, "--out", out, "--quiet", "--max-failure-ratio", "1"]
            var generator = SystemRandomNumberGenerator()
            var published = Set<String>()
            for round in 0..<20 {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: Paths.appconfigBinary)
                process.arguments = arguments
                process.standardOutput = FileHandle.nullDevice
                process.standardError = FileHandle.nullDevice
                try process.run()
                // Anywhere from loading the inputs to publishing (a full run takes a few seconds here).
                usleep(UInt32.random(in: 200_000...6_000_000, using: &generator))
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
                if let current = GenerationFolder.published(out) {
                    published.insert(current)
                    try Self.checkWhole(current)
                }
                #expect(!FileManager.default.fileExists(atPath: out) || GenerationFolder.published(out) != nil, "round \(round): a link to an incomplete generation")
            }
            let last = try appconfig(arguments)
            #expect(last.status == 3, "\(last.stderr)")
            let current = try #require(GenerationFolder.published(out))
            try Self.checkWhole(current)
            // Only complete generations are left, at most --keep of them.
            let generations = try FileManager.default.contentsOfDirectory(atPath: out + ".generations").filter { !$0.hasPrefix(".") }  // markers aside
            #expect(generations.count <= 2)
            for g in generations { #expect(FileManager.default.fileExists(atPath: out + ".generations/" + g + "/manifest.tsv")) }
            // Every generation seen published during the kills is either gone (beyond --keep) or still whole.
            for generation in published where FileManager.default.fileExists(atPath: generation) { try Self.checkWhole(generation) }
        }
    }

    /// A generation's files are exactly its manifest's, with its digests.
    static func checkWhole(_ generation: String) throws {
        let manifest = try lines(generation + "/manifest.tsv").filter { $0.contains("\t") && !$0.hasPrefix("end\t") }
        var files = Set(try FileManager.default.subpathsOfDirectory(atPath: generation).filter { $0.hasSuffix(".plist") })
        #expect(manifest.count == files.count, "\(generation)")
        for (i, line) in manifest.enumerated() {
            let fields = line.split(separator: "\t")
            let path = String(fields[1])
            #expect(files.remove(path) != nil, "\(path) listed, not there")
            // Every file's digest for a sample, the whole count for all.
            if i % 997 == 0 {
                let data = try Data(contentsOf: URL(fileURLWithPath: generation + "/" + path))
                let digest = data.withUnsafeBytes { SHA256.hex($0) }
                #expect(digest == String(fields[0]), "\(path)")
            }
        }
        #expect(files.isEmpty)
    }
}
