@testable import AppConfigBatch
@testable import AppConfigOutput
import AppConfigSpec
import Foundation
import TestSupport
import Testing

/// Issue 31's defects, each named for what the probe found; each failed on the main before it.
@Suite("Faults, round 3", .serialized)
struct FaultsRound3Tests {
    static let job = ["render", "--spec", Paths.fixture("demo/spec.xml"), "--values", Paths.fixture("demo/values.json"),
                      "--inventory", Paths.fixture("demo/inventory.csv"), "--directory", Paths.fixture("demo/directory.ldif"), "--quiet"]

    func render(_ arguments: [String]) throws -> ProcessResult { try appconfig(Self.job + arguments) }

    /// A first night rendered to `DIR/out`: the output, its generations' folder, the generation.
    func firstNight(in dir: TemporaryDirectory) throws -> (out: String, root: String, generation: String) {
        let out = dir.path("out")
        #expect(try render(["--out", out]).status == 3)
        return (out, out + ".generations", try #require(GenerationFolder.published(out)))
    }

    /// Renames a published generation (and its marker) in `root` and points `out` at it anew.
    func rename(_ generation: String, to name: String, in root: String, publishedAt out: String) throws {
        let files = FileManager.default
        try files.moveItem(atPath: generation, toPath: root + "/" + name)
        try files.moveItem(atPath: root + "/" + Generations.markerName(of: PathText.name(of: generation)), toPath: root + "/" + Generations.markerName(of: name))
        try files.removeItem(atPath: out)
        try files.createSymbolicLink(atPath: out, withDestinationPath: PathText.name(of: root) + "/" + name)
    }

    /// A root-owned file stands for the victim: a planted symlink must never lead a write to it.
    func victim(in dir: TemporaryDirectory) throws -> String {
        let path = dir.path("victim")
        try "precious\n".write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test("a symlink planted at an atomic file's old temporary name (PATH.tmp-PID) is not followed; the final name is a file")
    func plantedTemporary() throws {
        try withTemporaryDirectory { dir in
            let victim = try victim(in: dir)
            let final = dir.path("errors.jsonl")
            try FileManager.default.createSymbolicLink(atPath: final + ".tmp-\(getpid())", withDestinationPath: victim)
            try writeFileAtomically(Array("{}\n".utf8), to: final)
            #expect(try String(contentsOfFile: victim, encoding: .utf8) == "precious\n")
            #expect(try String(contentsOfFile: final, encoding: .utf8) == "{}\n")
            #expect(try FileManager.default.attributesOfItem(atPath: final)[.type] as? FileAttributeType == .typeRegular)
        }
    }

    @Test("a symlink planted at the report's writability probe (.appconfig-probe-PID) is not followed")
    func plantedProbe() throws {
        try withTemporaryDirectory { dir in
            let victim = try victim(in: dir)
            let report = dir.path("report")
            try FileManager.default.createDirectory(atPath: report, withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(atPath: report + "/.appconfig-probe-\(getpid())", withDestinationPath: victim)
            try RunReport.prepare(report)
            #expect(try String(contentsOfFile: victim, encoding: .utf8) == "precious\n")
        }
    }

    @Test("a planted OUT.generations symlink is refused and the folder it names keeps every entry")
    func plantedGenerations() throws {
        try withTemporaryDirectory { dir in
            let foreign = dir.path("home")
            for folder in ["git", "go", "games"] { try FileManager.default.createDirectory(atPath: foreign + "/" + folder, withIntermediateDirectories: true) }
            try "A+\n".write(toFile: foreign + "/grades.txt", atomically: true, encoding: .utf8)
            let out = dir.path("out")
            try FileManager.default.createSymbolicLink(atPath: out + ".generations", withDestinationPath: foreign)
            let r = try render(["--out", out])
            #expect(r.status == 1)
            #expect(r.stderr == "appconfig: \(out).generations is a symlink: the generations of an output are a folder of its own; nothing was written [output.exists]\n")
            #expect(try FileManager.default.contentsOfDirectory(atPath: foreign).sorted() == ["games", "git", "go", "grades.txt"])
        }
    }

    @Test("a planted OUT.lock symlink to a missing path is refused; its target is not created")
    func plantedLock() throws {
        try withTemporaryDirectory { dir in
            let out = dir.path("out"), target = dir.path("etc-cron")
            try FileManager.default.createSymbolicLink(atPath: out + ".lock", withDestinationPath: target)
            let r = try render(["--out", out])
            #expect(r.status == 1)
            #expect(r.stderr == "appconfig: \(out).lock is a symlink; nothing was written [output.exists]\n")
            #expect(!FileManager.default.fileExists(atPath: target))
        }
    }

    @Test("--keep prunes by publication order: a generation named by a clock that ran ahead goes first, never last night's")
    func keepBySequence() throws {
        try withTemporaryDirectory { dir in
            // Night 1's generation, as if its clock had read 2099.
            let (out, root, first) = try firstNight(in: dir)
            try rename(first, to: "g40999999999999-1", in: root, publishedAt: out)
            #expect(try render(["--out", out, "--rerender"]).status == 3)
            let second = try #require(GenerationFolder.published(out))
            #expect(try render(["--out", out, "--rerender"]).status == 3)
            let third = try #require(GenerationFolder.published(out))
            // --keep 2: the third night and the second stay (with their markers); the one named ahead of them went.
            let kept = [second, third].map { PathText.name(of: $0) }
            #expect(Set(try FileManager.default.contentsOfDirectory(atPath: root)) == Set(kept + kept.map(Generations.markerName)))
        }
    }

    @Test("an unfinished generation (its manifest not yet renamed) is not complete: the next run removes it, keeps the good one")
    func unfinishedManifest() throws {
        try withTemporaryDirectory { dir in
            let (out, root, good) = try firstNight(in: dir)
            // What a run killed while writing its manifest leaves: a marker, a partial manifest.
            let killed = root + "/g40000000000000-99"
            try FileManager.default.createDirectory(atPath: killed, withIntermediateDirectories: true)
            try "appconfig-generation 7\n".write(toFile: root + "/" + Generations.markerName(of: "g40000000000000-99"), atomically: true, encoding: .utf8)
            try "appconfig-manifest 1\nprogram x\n".write(toFile: killed + "/manifest.tsv.partial", atomically: true, encoding: .utf8)
            // A night with nothing to render still cleans up.
            #expect(try render(["--out", out]).status == 0)
            #expect(!FileManager.default.fileExists(atPath: killed))
            #expect(!FileManager.default.fileExists(atPath: root + "/" + Generations.markerName(of: "g40000000000000-99")))
            #expect(FileManager.default.fileExists(atPath: good))
        }
    }

    @Test("a manifest cut at a line's end, or edited, is refused: its end line counts and hashes the device lines")
    func manifestTrailer() throws {
        try withTemporaryDirectory { dir in
            let tar = dir.path("last.tar")
            #expect(try render(["--tar", tar]).status == 3)
            let lines = try String(contentsOfFile: tar + ".manifest.tsv", encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
            #expect(lines.dropLast().last?.hasPrefix("end\t975\t") == true)
            let cut = dir.path("cut.tsv"), edited = dir.path("edited.tsv")
            // Cut after 510 devices, at a line's end: it read as 510 unchanged and 465 added.
            let headerLines = lines.firstIndex(of: "")! + 1
            try lines.prefix(headerLines + 510).joined(separator: "\n").appending("\n").write(toFile: cut, atomically: true, encoding: .utf8)
            var changed = lines
            changed[headerLines + 3] = "0000000000000000000000000000000000000000000000000000000000000000" + changed[headerLines + 3].dropFirst(64)
            try changed.joined(separator: "\n").write(toFile: edited, atomically: true, encoding: .utf8)
            for (manifest, message) in [(cut, "the manifest has no end line: it was cut short"),
                                        (edited, "the device lines do not match the end line's XXH3-128: the manifest was edited or damaged")] {
                let r = try render(["--tar", dir.path("tonight.tar"), "--since", manifest])
                #expect(r.status == 1)
                #expect(r.stderr.hasSuffix(": \(message) [manifest.syntax]\n"), "\(r.stderr)")
            }
        }
    }

    @Test("SIGTERM and SIGINT end a run blocked before the render (an exec: secret that does not end): exit 130 within a second, nothing written, the child gone", arguments: [SIGTERM, SIGINT])
    func signalBeforeRender(_ sig: Int32) throws {
        try withTemporaryDirectory { dir in
            let out = dir.path("out"), pidFile = dir.path("child.pid")
            let process = Process()
            process.executableURL = URL(fileURLWithPath: Paths.appconfigBinary)
            process.arguments = try FaultsRound4Tests.blockedJob(in: dir, pidFile: pidFile) + ["--out", out]
            let err = Pipe()
            process.standardError = err
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            usleep(800_000)  // compiling, blocked reading the secret
            kill(process.processIdentifier, sig)
            let sent = Date()
            process.waitUntilExit()
            #expect(Date().timeIntervalSince(sent) < 1.0)
            #expect(process.terminationStatus == 130)
            #expect(String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).hasSuffix("appconfig: interrupted: nothing was published\n"))
            #expect(!FileManager.default.fileExists(atPath: out))
            // The secret's command ended with the job (gone, or a zombie for the machine's init).
            #expect(FaultsRound4Tests.hasEnded(try String(contentsOfFile: pidFile, encoding: .utf8)))
        }
    }

    @Test("each shard's report holds its own devices' join problems only; --partial-exit 0 for schedulers; --shard 0/1 overrides an array's variables")
    func shardReports() throws {
        try withTemporaryDirectory { dir in
            var notFound = 0
            for i in 0..<2 {
                let report = dir.path("report\(i)")
                let r = try render(["--shard", "\(i)/2", "--dry-run", "--report", report, "--partial-exit", "0"])
                #expect(r.status == 0, "\(r.stderr)")
                let summary = try reportSummary(report)
                let devices = try #require(summary["devices"] as? [String: Int])
                let errors = try String(contentsOfFile: report + "/errors.jsonl", encoding: .utf8).split(separator: "\n")
                #expect(errors.filter { $0.contains("join.user-not-found") }.count == devices["usersNotFound"])
                notFound += devices["usersNotFound"] ?? 0
            }
            // The demo's 15 users not found, each in one shard's report.
            #expect(notFound == 15)
            // A whole-fleet job inside an array task: --shard 0/1 wins over the inherited variables.
            let whole = try runProcess(Paths.appconfigBinary, Self.job + ["--shard", "0/1", "--dry-run"], environment: ["SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "4"])
            #expect(whole.status == 3)
            #expect(whole.stdout.hasPrefix("checked 975 of 1000 devices (binary) in"), "\(whole.stdout)")
        }
    }

    @Test("--since a file that is no manifest is refused from its first line (a large one is not read whole)")
    func sinceNotAManifest() throws {
        try withTemporaryDirectory { dir in
            let big = dir.path("archive.bin")
            // 64 MiB, sparse: reading it whole took seconds and as much memory.
            let fd = open(big, O_WRONLY | O_CREAT, 0o644)
            #expect(ftruncate(fd, 64 << 20) == 0)
            close(fd)
            let r = try render(["--dry-run", "--since", big])
            #expect(r.status == 1)
            #expect(r.stderr == "\(big):1: error: not an appconfig manifest (version 1 to 4) [manifest.syntax]\n")
        }
    }

    @Test("values and specs written on one long line read in linear time: 10,000 assignments (the limit said), 40,000 reals, 20,000 keys")
    func oneLongLine() throws {
        try withTemporaryDirectory { dir in
            let values = dir.path("many.json"), spec = dir.path("spec.xml")
            let assignments = (0..<10_000).map { #"{"name": "a\#($0)", "match": {"ou": "x\#($0)"}, "values": {"theme": "dark"}}"# }
            try (#"{"values": {"mapZoomLevels": ["# + Array(repeating: "0.5", count: 40_000).joined(separator: ", ") + #"]}, "assignments": ["#
                 + assignments.joined(separator: ", ") + "]}").write(toFile: values, atomically: true, encoding: .utf8)
            let r = try appconfig(["lint", Paths.fixture("demo/spec.xml"), "--values", values])
            #expect(r.status == 1)
            // The 65th assignment, found where it stands on the line.
            #expect(r.stdout.contains(":1:") && r.stdout.contains("error: more than 64 assignments [assignment.syntax]"), "\(r.stdout)")
            try ("<managedAppConfiguration><version>1</version><bundleId>com.example.app</bundleId><dict>"
                 + (0..<20_000).map { #"<string keyName="k\#($0)"/>"# }.joined() + "<bad/></dict></managedAppConfiguration>")
                .write(toFile: spec, atomically: true, encoding: .utf8)
            let l = try appconfig(["lint", spec])
            #expect(l.status == 1)
            let column = 87 + (0..<20_000).reduce(0) { $0 + #"<string keyName="k\#($1)"/>"#.count } + 1
            #expect(l.stdout.contains("\(spec):1:\(column): error:"), "\(l.stdout.prefix(300))")
        }
    }

    @Test("a report that cannot be written publishes nothing (exit 1 means nothing was published)")
    func reportBeforeSwitch() throws {
        try withTemporaryDirectory { dir in
            let out = dir.path("out"), report = dir.path("report")
            // errors.jsonl is a folder with something in it: the report's rename fails, as a full disk would.
            try FileManager.default.createDirectory(atPath: report + "/errors.jsonl/x", withIntermediateDirectories: true)
            let r = try render(["--out", out, "--report", report])
            #expect(r.status == 1)
            #expect(r.stderr.contains("[report.write]"), "\(r.stderr)")
            #expect(GenerationFolder.published(out) == nil)
            #expect(!FileManager.default.fileExists(atPath: out))
            // The same with a report that can be written: published, and the report says so.
            try FileManager.default.removeItem(atPath: report + "/errors.jsonl")
            #expect(try render(["--out", out, "--report", report]).status == 3)
            let summary = try reportSummary(report)
            #expect(summary["published"] as? Bool == true && summary["output"] as? String == out)
            #expect((summary["seconds"] as? [String: Double])?["publish"] != nil)
        }
    }

    @Test("a device key re-cased by the export is rekeyed: written under its new key, never removed (--remove-missing)")
    func rekeyed() throws {
        try withTemporaryDirectory { dir in
            let out = dir.path("out"), report = dir.path("report")
            #expect(try render(["--out", out, "--delivery", "mdm-settings", "--format", "xml"]).status == 3)
            let key = "A8B14A37-9FAD6EA111EF0B59"  // the demo's first device, which renders
            let inventory = dir.path("inv.csv")
            try String(contentsOfFile: Paths.fixture("demo/inventory.csv"), encoding: .utf8)
                .replacingOccurrences(of: key, with: key.lowercased()).write(toFile: inventory, atomically: true, encoding: .utf8)
            let args = ["render", "--spec", Paths.fixture("demo/spec.xml"), "--values", Paths.fixture("demo/values.json"), "--inventory", inventory,
                        "--directory", Paths.fixture("demo/directory.ldif"), "--quiet", "--out", out, "--delivery", "mdm-settings", "--format", "xml",
                        "--changed-only", "--remove-missing", "--report", report]
            let r = try appconfig(args)
            #expect(r.status == 3, "\(r.stderr)")
            #expect(r.stdout.contains("since \(out): 0 added, 0 changed, 0 removed, 0 missing, 974 unchanged (974 not rendered: their inputs are last night's), 1 re-keyed"), "\(r.stdout)")
            #expect(try String(contentsOfFile: report + "/changes.jsonl", encoding: .utf8)
                    == #"{"device":"\#(key.lowercased())","change":"rekeyed","from":"\#(key)"}"# + "\n")
            let published = try #require(GenerationFolder.published(out))
            let written = try FileManager.default.subpathsOfDirectory(atPath: published).filter { $0.hasSuffix(".plist") }
            #expect(written.count == 1 && written[0].hasSuffix("/\(key.lowercased()).plist"))
            // No removal command: the device keeps its app.
            let command = try String(contentsOfFile: published + "/" + written[0], encoding: .utf8)
            #expect(command.contains("<key>Configuration</key>"))
        }
    }

    @Test("--since a generation made another way is since.mismatch (exit 2): another shard, another delivery, a header with lines removed")
    func sinceMismatch() throws {
        try withTemporaryDirectory { dir in
            let shard = dir.path("shard.tar"), whole = dir.path("whole.tar")
            #expect(try render(["--shard", "1/2", "--tar", shard, "--delivery", "mdm-settings", "--format", "xml"]).status == 3)
            let r = try render(["--tar", whole, "--since", shard, "--delivery", "mdm-settings", "--format", "xml", "--changed-only", "--remove-missing", "--force"])
            #expect(r.status == 2)
            #expect(r.stderr == "appconfig: the previous generation (\(shard)) was made with shard 1/2, this run's is 0/1: compared, its devices would read as removed or changed; give --since a generation made the same way, or none [since.mismatch]\n")
            #expect(!FileManager.default.fileExists(atPath: whole))
            // A manifest whose header lost its lines.
            let manifest = try String(contentsOfFile: shard + ".manifest.tsv", encoding: .utf8)
            let edited = dir.path("edited.tsv")
            try manifest.split(separator: "\n", omittingEmptySubsequences: false).filter { !$0.hasPrefix("delivery ") }.joined(separator: "\n")
                .write(toFile: edited, atomically: true, encoding: .utf8)
            let e = try render(["--shard", "1/2", "--tar", whole, "--since", edited, "--delivery", "mdm-settings", "--format", "xml"])
            #expect(e.status == 2)
            #expect(e.stderr == "appconfig: the previous generation (\(edited)) has no delivery line in its manifest: compared, its devices would read as removed or changed; give --since a generation made the same way, or none [since.mismatch]\n")
            // The same output folder switched to another delivery: not compared (a warning), not refused.
            let out = dir.path("out")
            #expect(try render(["--out", out]).status == 3)
            let switched = try render(["--out", out, "--delivery", "mdm-settings", "--format", "xml"])
            #expect(switched.status == 3)
            #expect(switched.stderr.contains("was made with format binary, this run's is xml: not compared; every device is written, none is removed [since.mismatch]"), "\(switched.stderr)")
        }
    }

    @Test("a whole folder generation holds every device its manifest keeps: the files of devices failed or missing tonight are linked from the previous generation")
    func keptDevicesKeepTheirFiles() throws {
        try withTemporaryDirectory { dir in
            func path(_ name: String) -> String { dir.path(name) }
            try MergeCommandTests.spec.write(toFile: path("spec.xml"), atomically: true, encoding: .utf8)
            try #"{"values": {"tier": "$(device.Tier)"}}"#.write(toFile: path("values.json"), atomically: true, encoding: .utf8)
            func inventory(_ night: Int) -> String {
                // Night 2: DEV-3 has no tier (it fails), DEV-7 is gone from the export (missing).
                "Serial Number,UDID,Tier\n" + (0..<10).filter { night == 1 || $0 != 7 }
                    .map { "S\($0),DEV-\($0),\(night == 2 && $0 == 3 ? "" : "gold")\n" }.joined()
            }
            for night in 1...2 { try inventory(night).write(toFile: path("inventory\(night).csv"), atomically: true, encoding: .utf8) }
            func render(_ night: Int, _ options: [String]) throws -> ProcessResult {
                try appconfig(["render", "--spec", path("spec.xml"), "--values", path("values.json"), "--inventory", path("inventory\(night).csv"),
                                                       "--quiet", "--no-strict-inventory", "--max-failure-ratio", "0.5"] + options)
            }
            #expect(try render(1, ["--out", path("out")]).status == 0)
            let first = URL(fileURLWithPath: path("out")).resolvingSymlinksInPath().path
            let second = try render(2, ["--out", path("out"), "--report", path("report")])
            #expect(second.status == 3, "\(second.stdout)\(second.stderr)")
            #expect(second.stdout.contains("missing: 1 devices are not in tonight's inputs; they keep their last configuration"))
            let generation = URL(fileURLWithPath: path("out")).resolvingSymlinksInPath().path
            #expect(generation != first)
            let index = try String(contentsOfFile: generation + "/index.jsonl", encoding: .utf8).split(separator: "\n")
            #expect(index.count == 10)
            for key in ["DEV-3", "DEV-7"] {
                let line = try #require(index.first { $0.hasPrefix("{\"device\":\"\(key)\"") })
                let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                let file = try #require(object["path"] as? String)
                // The previous generation's file itself (a hard link), with the digest the manifest keeps.
                let now = try FileManager.default.attributesOfItem(atPath: generation + "/" + file)
                let before = try FileManager.default.attributesOfItem(atPath: first + "/" + file)
                #expect(now[.systemFileNumber] as? Int == before[.systemFileNumber] as? Int)
                #expect(try String(contentsOfFile: generation + "/manifest.tsv", encoding: .utf8).contains("\t\(file)\t\(key)\t"))
            }
            // Compared with an archive, a folder generation cannot link them: it says so.
            #expect(try render(1, ["--tar", path("n1.tar")]).status == 0)
            let fromTar = try render(2, ["--out", path("out2"), "--since", path("n1.tar"), "--report", path("report2")])
            #expect(fromTar.status == 3)
            #expect(fromTar.stdout.contains("kept: 2 devices keep their previous configuration (failed or missing tonight) but their files are not in this generation (the previous one is not a folder, or lacks them): keep serving those files"), "\(fromTar.stdout)")
            #expect(try reportSummary(path("report2"))["keptNotLinked"] as? Int == 2)
        }
    }
}
