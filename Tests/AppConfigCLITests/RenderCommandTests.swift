import AppConfigBatch
@testable import AppConfigOutput
import Foundation
import LibPlist
import TestSupport
import Testing

/// `appconfig render` through the built binary: decoded contents, the error file, exit statuses,
/// shards, interruption, hostile device keys, unwritable outputs.
@Suite("appconfig render, end to end", .serialized)
struct RenderCommandTests {
    static let demo = demo()

    /// The demo job's inputs, with another inventory where given.
    static func demo(inventory: String = Paths.fixture("demo/inventory.csv")) -> [String] {
        ["--spec", Paths.fixture("demo/spec.xml"), "--values", Paths.fixture("demo/values.json"),
         "--inventory", inventory, "--directory", Paths.fixture("demo/directory.ldif")]
    }

    func render(_ arguments: [String]) throws -> ProcessResult {
        try appconfig(["render"] + arguments)
    }

    func relative(_ key: String) -> String {
        return Array(key.utf8).withView { OutputNames.relativePath($0) }
    }

    /// The first device of the demo inventory, as its CSV row and its LDIF entry say.
    static let firstDevice = "A8B14A37-9FAD6EA111EF0B59"
    static func firstDeviceExpected() -> PlistValue {
        let pairs: [(String, PlistValue)] = [
            ("ManagedAppConfigurationVersion", .integer(7)),
            ("allowedDomains", .array([.string("northwind.example"), .string("corp.example"), .string("partners.northwind.example")])),
            ("deviceSerial", .string("7X4X9Q34WXN6")),
            ("deviceUDID", .string(firstDevice)),
            ("displayName", .string("Olusegun Ødegaard (Sales <North>)")),
            ("licenseExpiry", .date(851_990_399)),
            ("mapZoomLevels", .array([.real(10.5), .real(14)])),
            ("offlineMode", .boolean(true)),
            ("photoQuality", .real(0.8)),
            ("region", .string("Americas")),
            ("retryBackoffSeconds", .array([.integer(1), .integer(5), .integer(30)])),
            ("serverURL", .string("https://Americas.fs.northwind.example/tenant/u0000000")),
            ("syncIntervalMinutes", .integer(30)),
            ("theme", .string("system")),
            ("userEmail", .string("u0000000@corp.example")),
        ]
        return .dictionary(pairs.map { (key: $0.0, value: $0.1) })
    }

    @Test("the demo, both formats, to a folder: exact contents, the error file, status 3", arguments: ["binary", "xml"])
    func demoToFolder(format: String) throws {
        try withTemporaryDirectory { dir in
            let out = dir.path("out"), report = dir.path("report")
            let r = try render(Self.demo + ["--format", format, "--out", out, "--report", report])
            #expect(r.status == 3, "\(r.stderr)")
            #expect(r.stdout.hasPrefix("rendered 975 of 1000 devices (\(format)) to \(out) in "))
            #expect(r.stdout.contains("; 25 failed, 0 skipped\nerrors: device.missing-variable 60, device.pattern 10, join.user-not-found 15\n"))
            let bytes = try Data(contentsOf: URL(fileURLWithPath: out + "/" + relative(Self.firstDevice)))
            // The same values in both formats (the date has no fraction for XML to drop).
            #expect(try LibPlist.decode(Array(bytes)) == Self.firstDeviceExpected())
            #expect(bytes.starts(with: format == "xml" ? Array("<?xml".utf8) : Array("bplist00".utf8)))
            // Every rendered device has a file; the failed ones have none.
            let files = try FileManager.default.subpathsOfDirectory(atPath: out + "/").filter { $0.hasSuffix(".plist") }
            #expect(files.count == 975)
            // The error file: first the 15 users not found (the causes), then every problem of each
            // failed device (a device without a user misses four variables in three keys: four lines),
            // with its key, variable, value, source, serial number and user key.
            let errors = try String(contentsOfFile: report + "/errors.jsonl", encoding: .utf8).split(separator: "\n")
            #expect(errors.count == 60 + 10 + 15)
            #expect(errors.prefix(15).allSatisfy { $0.hasPrefix(#"{"code":"join.user-not-found""#) })
            let csv = Paths.fixture("demo/inventory.csv")
            #expect(Array(errors.dropFirst(15).prefix(4)) == [
                #"{"code":"device.missing-variable","device":"070AA671-7E505868A60C485F","key":"allowedDomains","message":"$(emailAddressDomain) is missing for this device","serialNumber":"Y9YHCPW488RQ","source":"\#(csv):85","userKey":"gone0000083@corp.example","variable":"emailAddressDomain"}"#,
                #"{"code":"device.missing-variable","device":"070AA671-7E505868A60C485F","key":"serverURL","message":"$(ou) is missing for this device","serialNumber":"Y9YHCPW488RQ","source":"\#(csv):85","userKey":"gone0000083@corp.example","variable":"ou"}"#,
                #"{"code":"device.missing-variable","device":"070AA671-7E505868A60C485F","key":"serverURL","message":"$(sAMAccountName) is missing for this device","serialNumber":"Y9YHCPW488RQ","source":"\#(csv):85","userKey":"gone0000083@corp.example","variable":"sAMAccountName"}"#,
                #"{"code":"device.missing-variable","device":"070AA671-7E505868A60C485F","key":"userEmail","message":"$(emailAddress) is missing for this device","serialNumber":"Y9YHCPW488RQ","source":"\#(csv):85","userKey":"gone0000083@corp.example","variable":"emailAddress"}"#,
            ])
            #expect(errors.contains { $0.contains(#""code":"device.pattern","device":"46C85FFB-D4E67C37061C2B02","key":"deviceSerial""#)
                                      && $0.contains(#""serialNumber":"3wwh42-3tllp3","source":"\#(csv):136","userKey":"u0000134@corp.example","value":"3wwh42-3tllp3","variable":"serialNumber""#) })
            #expect(errors.allSatisfy { $0.contains(#""device":""#) })
            let summary = try reportSummary(report)
            let devices = try #require(summary["devices"] as? [String: Int])
            #expect(devices == ["inventoryRows": 1000, "continuationRows": 0, "inventoryDevices": 1000, "inShard": 1000, "rendered": 975, "failed": 25, "skipped": 0, "usersNotFound": 15, "devicesWithoutUser": 0, "excluded": 0, "carried": 0])
            #expect(summary["published"] as? Bool == true)
        }
    }

    @Test("the demo as a tar: the same files, in device-key order, read by Python's tarfile")
    func demoToTar() throws {
        try withTemporaryDirectory { dir in
            let tar = dir.path("fleet.tar"), out = dir.path("out")
            #expect(try render(Self.demo + ["--format", "xml", "--tar", tar]).status == 3)
            #expect(try render(Self.demo + ["--format", "xml", "--out", out]).status == 3)
            let python = try #require(which("python3"))
            let script = """
                import os, sys, tarfile
                t = tarfile.open(sys.argv[1])
                names = t.getnames()
                assert names[-2:] == ["index.jsonl", "manifest.tsv"], names[-2:]
                names = names[:-2]
                assert len(names) == 975, len(names)
                for m in t.getmembers():
                    assert m.isfile() and m.mode == 0o644 and m.mtime == 0, m.name
                    assert t.extractfile(m).read() == open(os.path.join(sys.argv[2], m.name), "rb").read(), m.name
                keys = [n.split("/", 1)[1][:-len(".plist")] for n in names]
                assert keys == sorted(keys, key=lambda k: k.encode()), "not in device-key order"
                print("ok", len(names))
                """
            let check = try runProcess(python, ["-c", script, tar, out])
            #expect(check.stdout == "ok 975\n", "\(check.stderr)")
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.contains(".tmp-") }
            #expect(leftovers.isEmpty)
        }
    }

    @Test("--tar - into a pipe closed early: one line and status 1, no SIGPIPE")
    func closedPipe() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Paths.appconfigBinary)
        process.arguments = ["render"] + Self.demo + ["--tar", "-", "--quiet"]
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try out.fileHandleForReading.close()  // the reader is gone before the first byte
        try process.run()
        let errData = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationReason == .exit)
        #expect(process.terminationStatus == 1)
        #expect(String(decoding: errData, as: UTF8.self).hasSuffix("cannot write -: Broken pipe [output.write]\n"))
    }

    @Test("--tar - streams the archive to stdout and the summary to stderr")
    func tarToStdout() throws {
        let r = try runProcessData(Paths.appconfigBinary, ["render"] + Self.demo + ["--tar", "-", "--quiet"])
        #expect(r.status == 3)
        #expect(r.stderr.hasPrefix("rendered 975 of 1000 devices (binary) to - in "))
        #expect(r.stdout.count % 512 == 0)
        #expect(r.stdout.count > 975 * 1024)
        #expect(r.stdout.suffix(1024).allSatisfy { $0 == 0 })  // the two zero blocks that end an archive
        // A pipe cannot seek: the closing files' headers are written after their bodies are made.
        try withTemporaryDirectory { dir in
            let tar = dir.url.appendingPathComponent("stdout.tar")
            try r.stdout.write(to: tar)
            #expect(try Self.closingFiles(ofArchive: tar.path) == "ok 975 975 975\n")
        }
    }

    /// The demo archive's closing files as Python's tarfile reads them: "ok" and the counts of plist
    /// members, index lines (each a device's object) and manifest entries, or tarfile's error.
    static func closingFiles(ofArchive tar: String) throws -> String {
        let script = """
            import sys, tarfile
            t = tarfile.open(sys.argv[1])
            names = t.getnames()
            assert names[-2:] == ["index.jsonl", "manifest.tsv"], names[-2:]
            index = t.extractfile("index.jsonl").read().decode().splitlines()
            manifest = t.extractfile("manifest.tsv").read().decode().splitlines()
            assert all(l.startswith('{"device":') for l in index), index[:1]
            assert manifest[0] == "appconfig-manifest 4", manifest[0]
            assert manifest[-1].startswith("end\\t"), manifest[-1]
            print("ok", len(names) - 2, len(index), len(manifest) - manifest.index("") - 2)
            """
        let check = try runProcess(try #require(which("python3")), ["-c", script, tar])
        return check.stdout.isEmpty ? check.stderr : check.stdout
    }

    @Test("--tar - into a file, written over (seekable) or appended to (O_APPEND, where pwrite appends): a whole archive",
          arguments: [">", ">>"])
    func tarToStdoutFile(_ redirect: String) throws {
        try withTemporaryDirectory { dir in
            let tar = dir.path("out.tar")
            _ = FileManager.default.createFile(atPath: tar, contents: nil)
            let command = ([Paths.appconfigBinary, "render"] + Self.demo + ["--tar", "-", "--quiet"]).map { "'\($0)'" }.joined(separator: " ")
            let r = try runProcess("/bin/sh", ["-c", "\(command) \(redirect) '\(tar)'"])
            #expect(r.status == 3, "\(r.stderr)")
            #expect(try Self.closingFiles(ofArchive: tar) == "ok 975 975 975\n")
        }
    }

    @Test("the union of shards 0/3, 1/3, 2/3 is the single run, byte for byte; JOB_COMPLETION_INDEX picks the same shard")
    func shards() throws {
        try withTemporaryDirectory { dir in
            func files(_ root: String) throws -> [String: Data] {
                var out: [String: Data] = [:]
                for p in try FileManager.default.subpathsOfDirectory(atPath: root + "/") where p.hasSuffix(".plist") {
                    out[p] = try Data(contentsOf: URL(fileURLWithPath: root + "/" + p))
                }
                return out
            }
            let single = dir.path("all"), report = dir.path("report")
            let whole = try render(Self.demo + ["--out", single, "--report", report])
            #expect(whole.status == 3, "\(whole.stdout)\(whole.stderr)")
            // The devices that fail, from the whole run's error file: a shard exits 3 exactly when it has one.
            let failing = try String(contentsOfFile: report + "/errors.jsonl", encoding: .utf8).split(separator: "\n").compactMap { line -> String? in
                let o = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                return (o?["code"] as? String)?.hasPrefix("device.") == true ? o?["device"] as? String : nil
            }
            #expect(Set(failing).count == 25)
            var union: [String: Data] = [:]
            var counts: [Int] = []
            for i in 0..<3 {
                let shard = dir.path("shard\(i)")
                let r = try render(Self.demo + ["--out", shard, "--shard", "\(i)/3"])
                let shardFails = failing.contains { key in
                    return Array(key.utf8).withView { Shard(index: i, count: 3).contains(hash: OutputNames.hash($0)) }
                }
                #expect(r.status == (shardFails ? 3 : 0))
                let part = try files(shard)
                counts.append(part.count)
                union.merge(part) { a, _ in a }
            }
            #expect(counts.reduce(0, +) == 975)
            #expect(counts.allSatisfy { $0 > 250 })
            #expect(union == (try files(single)))

            // The scheduler's environment: a Kubernetes Indexed Job's index with --shard-count.
            let k8s = dir.path("k8s")
            let process = Process()
            process.executableURL = URL(fileURLWithPath: Paths.appconfigBinary)
            process.arguments = ["render"] + Self.demo + ["--out", k8s, "--shard-count", "3", "--quiet"]
            process.environment = ["JOB_COMPLETION_INDEX": "1"]
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            process.waitUntilExit()
            #expect(try files(k8s) == (try files(dir.path("shard1"))))

            // Slurm (0- or 1-based arrays) and AWS Batch array jobs pick the same shards.
            let schedulers: [(env: [String: String], count: [String], shard: Int)] = [
                (["SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_COUNT": "3"], [], 2),
                (["SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "3", "SLURM_ARRAY_TASK_MIN": "1"], ["--shard-base", "1"], 0),
                // One failed index resubmitted (sbatch --array=2): the task id itself, not relative to MIN.
                (["SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_COUNT": "1", "SLURM_ARRAY_TASK_MIN": "2"], ["--shard-count", "3"], 2),
                (["AWS_BATCH_JOB_ARRAY_INDEX": "2"], ["--shard-count", "3"], 2),
            ]
            for (n, s) in schedulers.enumerated() {
                let out = dir.path("scheduler\(n)")
                let r = try runProcess(Paths.appconfigBinary, ["render"] + Self.demo + ["--out", out, "--quiet"] + s.count, environment: s.env)
                #expect(r.stdout.contains("shard \(s.shard)/3"), "\(s.env): \(r.stdout)\(r.stderr)")
                #expect(try files(out) == (try files(dir.path("shard\(s.shard)"))), "\(s.env)")
            }
        }
    }

    @Test("a scheduler's index without a count, or out of range: status 2, the variable named")
    func schedulerErrors() throws {
        let cases: [([String: String], [String], String)] = [
            (["JOB_COMPLETION_INDEX": "1"], [], "appconfig: JOB_COMPLETION_INDEX is set; give --shard-count N [shard.index]\n"),
            (["AWS_BATCH_JOB_ARRAY_INDEX": "3"], ["--shard-count", "3"], "appconfig: AWS_BATCH_JOB_ARRAY_INDEX=3 is not a shard index below 3: the tasks of 3 shards are numbered 0 to 2 [shard.index]\n"),
            // sbatch --array=1-4 without --shard-base 1: Slurm says where the array starts.
            (["SLURM_ARRAY_TASK_ID": "4", "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_MIN": "1"], [],
             "appconfig: SLURM_ARRAY_TASK_MIN=1: this array's tasks are numbered from 1; give --shard-base 1 [shard.index]\n"),
            // A stepped array (--array=0-6:2): four tasks, ids up to 6.
            (["SLURM_ARRAY_TASK_ID": "6", "SLURM_ARRAY_TASK_COUNT": "4"], [],
             "appconfig: SLURM_ARRAY_TASK_ID=6 is not a shard index below 4: the tasks of 4 shards are numbered 0 to 3 [shard.index]\n"),
            (["SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_COUNT": "4"], ["--shard-base", "1"],
             "appconfig: SLURM_ARRAY_TASK_ID=0 is not a shard index below 4: the tasks of 4 shards are numbered 1 to 4 (--shard-base 1) [shard.index]\n"),
            ([:], ["--shard-count", "3"], "appconfig: --shard-count 3 needs the shard's index: none of JOB_COMPLETION_INDEX, "
             + "SLURM_ARRAY_TASK_ID, AWS_BATCH_JOB_ARRAY_INDEX is set (or give --shard I/3) [shard.index]\n"),
        ]
        for (env, extra, message) in cases {
            let r = try runProcess(Paths.appconfigBinary, ["render"] + Self.demo + ["--dry-run", "--quiet"] + extra, environment: env)
            #expect(r.status == 2, "\(env)")
            #expect(r.stderr == message)
        }
    }

    @Test("exit statuses: 0 all rendered, 1 over --max-failures (nothing published), 2 usage")
    func statuses() throws {
        try withTemporaryDirectory { dir in
            // Only devices that render: drop the rows of the demo that fail (users gone, serials such as "3wwh42-3tllp3").
            let rows = try String(contentsOfFile: Paths.fixture("demo/inventory.csv"), encoding: .utf8).components(separatedBy: "\r\n")
            let clean = rows.filter { !$0.contains("gone") && $0.range(of: #",[0-9a-z]{6}-[0-9a-z]{6},"#, options: .regularExpression) == nil }
            let inventory = dir.path("clean.csv")
            try clean.joined(separator: "\r\n").write(toFile: inventory, atomically: true, encoding: .utf8)
            let ok = try render(Self.demo(inventory: inventory) + ["--out", dir.path("ok")])
            #expect(ok.status == 0, "\(ok.stdout)\(ok.stderr)")
            #expect(ok.stdout.hasPrefix("rendered 975 of 975 devices"))

            let over = dir.path("over")
            let r = try render(Self.demo + ["--out", over, "--max-failures", "5"])
            #expect(r.status == 1)
            #expect(r.stdout.hasSuffix("more than 5 devices failed (--max-failures): nothing was published\n"))
            #expect(!FileManager.default.fileExists(atPath: over))
            #expect((try? FileManager.default.contentsOfDirectory(atPath: over + ".generations")) == [])

            #expect(try render(Self.demo).status == 2)  // no output given
            #expect(try render(Self.demo + ["--out", "x", "--tar", "y"]).status == 2)
            #expect(try render(Self.demo + ["--out", "x", "--shard", "3/3"]).status == 2)
        }
    }

    @Test("a missing input file and an unwritable output folder: one clear line, status 1")
    func fatalErrors() throws {
        let r1 = try render(Self.demo(inventory: "/nonexistent/inventory.csv") + ["--out", "/tmp/never"])
        #expect(r1.status == 1)
        #expect(r1.stderr == "appconfig: cannot read /nonexistent/inventory.csv: No such file or directory [input.read]\n")

        try withTemporaryDirectory { dir in
            let locked = dir.path("locked")
            try FileManager.default.createDirectory(atPath: locked, withIntermediateDirectories: false)
            chmod(locked, 0o555)
            defer { chmod(locked, 0o755) }
            if getuid() == 0 {
                // root writes anywhere: a regular file in the way of the output path makes it unwritable.
                #expect(FileManager.default.createFile(atPath: locked + "/out.generations", contents: Data()))
            }
            let r2 = try render(Self.demo + ["--out", locked + "/out"])
            #expect(r2.status == 1)
            #expect(r2.stderr.hasPrefix("appconfig: cannot create \(locked)/out.generations")
                    || r2.stderr.hasPrefix("appconfig: \(locked)/out.generations is not a folder"), "\(r2.stderr)")
            #expect(r2.stderr.split(separator: "\n").count == 1)
            // A missing parent folder is made; a file in its way is one clear line.
            #expect(FileManager.default.createFile(atPath: dir.path + "/file", contents: Data()))
            let r3 = try render(Self.demo + ["--tar", dir.path + "/file/sub/fleet.tar"])
            #expect(r3.status == 1)
            #expect(r3.stderr.hasPrefix("appconfig: cannot create \(dir.path)/file/sub: "))
            #expect(r3.stderr.hasSuffix(" [output.write]\n"))
            let made = dir.path("new/parents/fleet.tar")
            #expect(try render(Self.demo + ["--tar", made, "--quiet"]).status == 3)
            #expect(FileManager.default.fileExists(atPath: made))
        }
    }

    @Test("device keys such as ../../etc/passwd stay inside the output folder; keys with a newline or tab are refused (csv.bad-device-key)")
    func hostileKeys() throws {
        try withTemporaryDirectory { dir in
            let keys = ["../../etc/passwd", "a\nb", "..", ".hidden", "x/y", "%41", "ok-1", "tab\there", String(repeating: "k", count: 300)]
            var csv = "UDID,Serial Number\r\n"
            for (i, k) in keys.enumerated() { csv += "\"\(k)\",S\(i)\r\n" }
            let inventory = dir.path("inv.csv")
            try csv.write(toFile: inventory, atomically: true, encoding: .utf8)
            let spec = dir.path("spec.xml")
            try "<managedAppConfiguration><version>1</version><bundleId>com.example.k</bundleId><dict><string keyName=\"udid\"><defaultValue><deviceVariable value=\"udid\"/></defaultValue></string></dict></managedAppConfiguration>"
                .write(toFile: spec, atomically: true, encoding: .utf8)
            let out = dir.path("out")
            let r = try render(["--spec", spec, "--inventory", inventory, "--out", out])
            // The two keys with control characters are skipped rows (status 3); the others render.
            #expect(r.status == 3, "\(r.stdout)\(r.stderr)")
            #expect(r.stdout.contains("; 0 failed, 2 skipped"), "\(r.stdout)")
            let kept = keys.filter { !$0.contains("\n") && !$0.contains("\t") }
            let files = try FileManager.default.subpathsOfDirectory(atPath: out + "/").filter { $0.hasSuffix(".plist") }
            #expect(files.count == kept.count)
            for path in files {
                let parts = path.split(separator: "/")
                #expect(parts.count == 2 && parts[0].count == 3)
                #expect(!parts[1].hasPrefix(".") && parts[1].allSatisfy { $0.isASCII && !$0.isWhitespace && $0 != "\\" })
            }
            #expect(files.contains { $0.hasSuffix("/%2E.%2F..%2Fetc%2Fpasswd.plist") })
            #expect(files.contains { $0.hasSuffix("/%2541.plist") })
            // Each file holds its own device's key: nothing collided or got mixed up.
            for k in kept {
                let bytes = try Data(contentsOf: URL(fileURLWithPath: out + "/" + relative(k)))
                #expect(try LibPlist.decode(Array(bytes))["udid"] == .string(k))
            }
            // Nothing was written outside the output's own two paths.
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted() == ["inv.csv", "out", "out.generations", "out.lock", "spec.xml"])
        }
    }

    @Test("SIGINT in the middle of a large render: status 130, no partial file under a final name")
    func interrupt() throws {
        try withTemporaryDirectory { dir in
            let fleet = dir.path("fleet")
            let gen = try runProcess(Paths.root.appendingPathComponent("tools/gen-fleet").path, ["--devices", "60000", "--out", fleet])
            #expect(gen.status == 0)
            let arguments = ["render", "--spec", Paths.fixture("demo/spec.xml"), "--values", Paths.fixture("demo/values.json"),
                             "--inventory", fleet + "/inventory.csv", "--directory", fleet + "/directory.ldif", "--jobs", "1"]
            for target in [["--out", dir.path("out")], ["--tar", dir.path("fleet.tar")]] {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: Paths.appconfigBinary)
                process.arguments = arguments + target
                process.standardOutput = FileHandle.nullDevice
                process.standardError = FileHandle.nullDevice
                try process.run()
                // Wait until rendering has begun (files or a temporary tar appear), then interrupt.
                let deadline = Date().addingTimeInterval(30)
                while Date() < deadline {
                    let names = (try? FileManager.default.subpathsOfDirectory(atPath: dir.path)) ?? []
                    if names.contains(where: { $0.hasSuffix(".plist") || $0.contains("fleet.tar.tmp-") }) { break }
                    usleep(20_000)
                }
                kill(process.processIdentifier, SIGINT)
                process.waitUntilExit()
                #expect(process.terminationStatus == 130)
                // No final name exists, and nothing is left of the interrupted generation or tar.
                #expect(!FileManager.default.fileExists(atPath: dir.path("out")))
                #expect(!FileManager.default.fileExists(atPath: dir.path("fleet.tar")))
                let generations = (try? FileManager.default.contentsOfDirectory(atPath: dir.path("out.generations"))) ?? []
                #expect(generations.isEmpty)
                #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.contains(".tmp-") }.isEmpty)
            }
        }
    }

    @Test("a rerun with --rerender over the same output publishes a new generation and keeps the one before")
    func rerun() throws {
        try withTemporaryDirectory { dir in
            let out = dir.path("out")
            for _ in 0..<3 { #expect(try render(Self.demo + ["--out", out, "--rerender", "--quiet"]).status == 3) }
            let generations = try FileManager.default.contentsOfDirectory(atPath: out + ".generations").filter { !$0.hasPrefix(".") }  // markers aside
            #expect(generations.count == 2)
            let target = try FileManager.default.destinationOfSymbolicLink(atPath: out)
            #expect(target == "out.generations/" + generations.sorted().last!)
        }
    }

    @Test("--verify finds nothing to report; --dry-run writes nothing; a job file gives the same result, the command line overriding it")
    func verifyDryRunJobFile() throws {
        try withTemporaryDirectory { dir in
            let verify = try render(Self.demo + ["--out", dir.path("v"), "--verify", "--format", "xml"])
            #expect(verify.status == 3)
            #expect(!verify.stdout.contains("verify"))
            #expect(verify.stdout.contains("; 25 failed"))
            // The MDM deliveries' fragments are verified as well (they were skipped).
            for delivery in ["mdm-settings", "mdm-install"] {
                let mdm = try render(Self.demo + ["--dry-run", "--verify", "--delivery", delivery])
                #expect(mdm.status == 3 && mdm.stdout.contains("; 25 failed") && !mdm.stdout.contains("verify"), "\(mdm.stdout)")
            }

            let dry = try render(Self.demo + ["--dry-run", "--report", dir.path("dry")])
            #expect(dry.status == 3)
            #expect(dry.stdout.hasPrefix("checked 975 of 1000 devices (binary) in "))
            // The folder output, its generations, its lock and its directory and inventory images; the dry run only its report.
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted() == ["dry", "v", "v.generations", "v.inventory", "v.lock", "v.users"])

            let job = dir.path("nightly.json")
            let jobOut = dir.path("job")
            try """
                {"spec": "\(Paths.fixture("demo/spec.xml"))", "values": "\(Paths.fixture("demo/values.json"))",
                 "inventory": "\(Paths.fixture("demo/inventory.csv"))", "directory": "\(Paths.fixture("demo/directory.ldif"))",
                 "format": "binary", "out": "\(jobOut)", "jobs": 2, "quiet": true}
                """.write(toFile: job, atomically: true, encoding: .utf8)
            let r = try appconfig(["render", job, "--format", "xml"])
            #expect(r.status == 3, "\(r.stderr)")
            #expect(r.stdout.hasPrefix("rendered 975 of 1000 devices (xml) to \(jobOut)"))
            let bytes = try Data(contentsOf: URL(fileURLWithPath: jobOut + "/" + relative(Self.firstDevice)))
            #expect(bytes.starts(with: Array("<?xml".utf8)))
        }
    }

    /// Runs the binary with stderr on a pseudo-terminal (Python's pty) and returns what the
    /// terminal received, as Python's repr of the bytes, and the exit status.
    func renderOnTerminal(_ arguments: [String], progressAfter: String) throws -> (terminal: String, status: Int32) {
        let python = try #require(which("python3"), "python3 is needed for the terminal test")
        let script = """
            import os, pty, subprocess, sys
            master, slave = pty.openpty()
            env = dict(os.environ, APPCONFIG_PROGRESS_AFTER=sys.argv[1])
            p = subprocess.Popen(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=slave, env=env)
            os.close(slave)
            seen = b""
            while True:
                try:
                    chunk = os.read(master, 4096)
                except OSError:
                    break
                if not chunk:
                    break
                seen += chunk
            sys.stdout.write(repr(seen))
            sys.exit(p.wait())
            """
        let r = try runProcess(python, ["-c", script, progressAfter, Paths.appconfigBinary, "render"] + arguments)
        return (r.stdout, r.status)
    }

    @Test("on a terminal, a progress line across the phases, cleared at the end; none for a job faster than its delay")
    func progressOnTerminal() throws {
        let shown = try renderOnTerminal(Self.demo + ["--dry-run"], progressAfter: "0")
        #expect(shown.status == 3)
        // Drawn at once (delay 0): the first phase, then the line cleared before the summary.
        #expect(shown.terminal.contains(#"\r\x1b[K  compiling the spec  "#), "\(shown.terminal)")
        #expect(shown.terminal.hasSuffix(#"\r\x1b[K'"#), "\(shown.terminal)")
        let quiet = try renderOnTerminal(Self.demo + ["--dry-run"], progressAfter: "5")
        #expect(quiet.status == 3)
        #expect(quiet.terminal == "b''")
    }
}
