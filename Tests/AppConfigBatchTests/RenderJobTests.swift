@testable import AppConfigBatch
@testable import AppConfigOutput
import AppConfigCore
import AppConfigCompiler
import AppConfigRender
import AppConfigSources
import AppConfigSpec
import Foundation
import Synchronization
import LibPlist
import TestSupport
import Testing

/// The render job as a library call, with no binary: what an MDM server written in Swift embeds.
@Suite("RenderJob in-process")
struct RenderJobTests {
    static func demoJob() -> RenderJob {
        var job = RenderJob(spec: Paths.fixture("demo/spec.xml"),
                            sources: FleetSources(inventory: Paths.fixture("demo/inventory.csv"), directory: .ldif(Paths.fixture("demo/directory.ldif"))))
        job.values = Paths.fixture("demo/values.json")
        return job
    }

    @Test("the demo to a tar: the summary's counts, the report, and the same bytes as the command line")
    func demoToTar() throws {
        try withTemporaryDirectory { dir in
            var job = Self.demoJob()
            let tar = dir.path("lib.tar"), report = dir.path("nested/report")
            job.output = .tar(tar)
            job.report = report
            let summary = try job.run()
            #expect(summary.devices.inventoryRows == 1000)
            #expect(summary.devices.rendered == 975)
            #expect(summary.devices.failed == 25)
            #expect(summary.devices.usersNotFound == 15)
            #expect(summary.errorsByCode == ["device.missing-variable": 60, "device.pattern": 10, "join.user-not-found": 15])
            #expect(summary.failures.map(\.problems.count).reduce(0, +) == 70)
            #expect(summary.published && summary.output == tar)
            #expect(summary.exitStatus == ExitStatus.partial)
            #expect(Set(summary.seconds.keys) == [.compile, .since, .inventory, .directory, .join, .render, .publish, .report])
            #expect(summary.json().contains("\"seconds\" : {\n    \"compile\" : "))
            // The phases are laps of one clock: up to publishing they add up to the job's time.
            let phases = summary.seconds.filter { $0.key != .report }.values.reduce(0, +)
            #expect(abs(phases - summary.wallSeconds) <= 0.05 * summary.wallSeconds + 1e-6, "\(phases) vs \(summary.wallSeconds)")
            #expect(summary.failures.map(\.problem.location.device).allSatisfy { $0 != nil })
            let errors = try String(contentsOfFile: report + "/errors.jsonl", encoding: .utf8).split(separator: "\n")
            #expect(errors.count == 85)
            let written = try reportSummary(report)
            #expect((written["devices"] as? [String: Int])?["rendered"] == 975)

            let cliTar = dir.path("cli.tar")
            let cli = try runProcess(Paths.appconfigBinary, ["render", "--spec", job.spec, "--values", job.values!, "--inventory", job.sources.inventory,
                                                             "--directory", Paths.fixture("demo/directory.ldif"), "--tar", cliTar, "--quiet"])
            #expect(cli.status == 3)
            #expect(try Data(contentsOf: URL(fileURLWithPath: tar)) == Data(contentsOf: URL(fileURLWithPath: cliTar)))
            let (a, b) = (try String(contentsOfFile: tar + ".manifest.tsv", encoding: .utf8), try String(contentsOfFile: cliTar + ".manifest.tsv", encoding: .utf8))
            #expect(a == b, "\(Set(a.split(separator: "\n")).symmetricDifference(b.split(separator: "\n")).prefix(4))")
            // Each input's fingerprint in the manifest: its size and XXH3-128, as xxHash's own
            // command (`xxhsum -H2`) makes it.
            let inputs = ["spec": job.spec, "values": job.values!, "inventory": job.sources.inventory, "directory": Paths.fixture("demo/directory.ldif")]
            let files = inputs.keys.sorted().map { inputs[$0]! }
            let xxhsum = try runProcess(try #require(which("xxhsum")), ["-H2"] + files)
            let expected = try zip(files, xxhsum.stdout.split(separator: "\n")).map { file, line in
                "\(try FileManager.default.attributesOfItem(atPath: file)[.size] as! Int) xxh3-128:\(line.prefix { $0 != " " })"
            }
            let header = try Manifest.load(tar).header
            #expect(inputs.keys.sorted().map { name in header.first { $0.name == name }?.value ?? "none" } == expected)
        }
    }

    @Test("more failures than allowed: nothing published, status 1, the reason in the summary")
    func maxFailures() throws {
        try withTemporaryDirectory { dir in
            var job = Self.demoJob()
            let out = dir.path("out")
            job.output = .directory(out)
            job.nightly.maxFailures = 24
            let summary = try job.run()
            #expect(!summary.published)
            #expect(summary.notPublished == "more than 24 devices failed (--max-failures)")
            #expect(summary.exitStatus == ExitStatus.failed)
            #expect(!FileManager.default.fileExists(atPath: out))
            #expect(try FileManager.default.contentsOfDirectory(atPath: out + ".generations") == [])
        }
    }

    @Test("cancelled before the render: interrupted, status 130, the temporary tar removed")
    func cancelled() throws {
        try withTemporaryDirectory { dir in
            var job = Self.demoJob()
            job.output = .tar(dir.path("x.tar"))
            let cancellation = Cancellation()
            cancellation.cancel()
            let summary = try job.run(cancellation: cancellation)
            #expect(summary.interrupted && !summary.published)
            #expect(summary.exitStatus == ExitStatus.interrupted)
            // Only the lock file stays (a lock held by no one).
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path) == ["x.tar.lock"])
        }
    }

    @Test("a dry run writes nothing; the observer sees warnings and the render pass")
    func dryRunAndObserver() throws {
        var job = Self.demoJob()
        job.output = .dryRun
        let started = Mutex(0), finished = Mutex(0)
        var observer = RenderJob.Observer()
        observer.renderStarted = { batch in started.withLock { $0 = batch.deviceCount } }
        observer.renderFinished = { finished.withLock { $0 += 1 } }
        let summary = try job.run(observer: observer)
        #expect(summary.dryRun && !summary.published && summary.output == nil)
        #expect(summary.devices.rendered == 975)
        #expect(started.withLock { $0 } == 1000 && finished.withLock { $0 } == 1)
    }

    @Test("an input that cannot be read is one Problem, thrown")
    func missingInput() throws {
        var job = Self.demoJob()
        job.sources.inventory = "/nonexistent/devices.csv"
        #expect(throws: Problem(InputCode.read, at: Location(file: "/nonexistent/devices.csv"),
                                "cannot read /nonexistent/devices.csv: No such file or directory")) {
            try job.run()
        }
    }

    @Test("an inventory cut shorter while the devices render: input.changed thrown, nothing published")
    func inventoryChangedDuringRender() throws {
        try withTemporaryDirectory { dir in
            let inventory = dir.path("devices.csv")
            try FileManager.default.copyItem(atPath: Paths.fixture("demo/inventory.csv"), toPath: inventory)
            let size = try #require(try FileManager.default.attributesOfItem(atPath: inventory)[.size] as? Int)
            var job = Self.demoJob()
            job.sources.inventory = inventory
            job.output = .tar(dir.path("x.tar"))
            var observer = RenderJob.Observer()
            // Read and mapped by now: the rest of the rows' pages are lost under the render.
            observer.renderStarted = { _ in _ = truncate(inventory, 4096) }
            #expect(throws: Problem(InputCode.changed, at: Location(file: inventory),
                                    "\(inventory) is not used: it changed while it was read (\(size) bytes, then 4096)")) {
                try job.run(observer: observer)
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted() == ["devices.csv", "x.tar.lock"])
        }
    }

    @Test("a real Jamf Pro export without a directory: every data row counted, the users from its columns",
          .enabled(if: Paths.hasCorpus, "../shared/corpus is absent"))
    func jamfExportWithoutDirectory() throws {
        let csv = try #require(Paths.corpusFile("inventory/jamf-reports-community/jamf1128_mobile_exportonly@c444c5e8.csv"))
        try withTemporaryDirectory { dir in
            let spec = dir.path("spec.xml")
            try """
                <managedAppConfiguration><version>1</version><bundleId>com.example.jamf</bundleId><dict>
                <string keyName="mail"><defaultValue><userVariable value="emailAddress"/></defaultValue></string>
                <string keyName="domain"><defaultValue><userVariable value="emailAddressDomain"/></defaultValue></string>
                <string keyName="serial"><defaultValue><deviceVariable value="serialNumber"/></defaultValue></string>
                </dict></managedAppConfiguration>
                """.write(toFile: spec, atomically: true, encoding: .utf8)
            var job = RenderJob(spec: spec, sources: FleetSources(inventory: csv))
            job.output = .directory(dir.path("out"))
            job.nightly.maxFailureRatio = 1
            let summary = try job.run()
            #expect((summary.devices.inventoryRows, summary.devices.continuationRows, summary.devices.inventoryDevices) == (16, 12, 4))
            // The fourth device has no email address in the export: both keys that need it are named.
            #expect(summary.devices.rendered == 3)
            #expect(summary.failures.flatMap(\.problems).map { "\($0.location.device ?? "") \($0.location.key ?? "")" }
                    == ["FIXTURE-UDID-FXTRM0000004 domain", "FIXTURE-UDID-FXTRM0000004 mail"])
            let plist = try LibPlist.decode(try readFileBytes(dir.path("out") + "/" + {
                return Array("FIXTURE-UDID-FXTRM0000001".utf8).withView { OutputNames.relativePath($0) }
            }()))
            #expect(plist["mail"] == .string("user1@example.org") && plist["domain"] == .string("example.org") && plist["serial"] == .string("FXTRM0000001"))
        }
    }

    @Test("the inventory keeps the device variables read: by an assignment's value and its condition, not only by the spec")
    func variablesReadByAssignmentsAreKept() throws {
        try withTemporaryDirectory { dir in
            // The spec reads serialNumber and udid; the values' assignment reads model (its match) and imei (its value).
            let values = try dir.write("""
                {"values": {"serverURL": "https://fs.northwind.example", "theme": "system"},
                 "assignments": [{"name": "iphone-15", "match": {"model": "iPhone 15"}, "values": {"region": "IMEI $(imei)"}}]}
                """, to: "values.json")
            var job = Self.demoJob()
            job.values = values
            job.output = .directory(dir.path("out"))
            job.nightly.maxFailureRatio = 1
            _ = try job.run()
            // The demo's first device: an iPhone 15, IMEI 350171420821790.
            let plist = try LibPlist.decode(try readFileBytes(dir.path("out") + "/" + {
                return Array("A8B14A37-9FAD6EA111EF0B59".utf8).withView { OutputNames.relativePath($0) }
            }()))
            #expect(plist["region"] == .string("IMEI 350171420821790"))
        }
    }
}

/// `--verify`'s slow path: a plist that does not say what the program means is a device error.
@Suite("Verifier")
struct VerifierTests {
    /// One key, `name`, the user's `cn`.
    static func nameProgram() throws -> Program {
        let spec = SpecParser.parse(Array("""
            <managedAppConfiguration><version>1</version><bundleId>com.example.app</bundleId>
            <dict><string keyName="name"><defaultValue><userVariable value="cn"/></defaultValue></string></dict>
            </managedAppConfiguration>
            """.utf8), file: "s.xml").spec
        return try Compiler.compile(try #require(spec))
    }

    @Test("a corrupted output is a device.verify-mismatch naming the key; an unreadable one says so")
    func mismatch() throws {
        let program = try Self.nameProgram()
        let renderer = Renderer(image: ProgramImage(program), format: .xml)
        let value = Array("Jane".utf8)
        try value.withView { v in
            let slots = [SlotValue(v)]
            try slots.withView { slots in
                var bytes = Array(try renderer.render(slots))
                let verifier = Verifier(program: program, format: .xml)
                #expect(bytes.withView { verifier.check($0, slots: slots) } == nil)
                // "Jane" becomes "Jame" in the written file.
                let at = try #require(bytes.firstRange(of: Array("Jane".utf8))).lowerBound
                bytes[at + 2] = UInt8(ascii: "m")
                let wrong = try #require(bytes.withView { verifier.check($0, slots: slots) })
                #expect(wrong.code == DeviceCode.verifyMismatch)
                #expect(wrong.location.key == "name")
                #expect(wrong.message == "libplist reads Optional(LibPlist.PlistValue.string(\"Jame\")), expected string(\"Jane\")")
                let garbage = try #require([UInt8]("not a plist".utf8).withView { verifier.check($0, slots: slots) })
                #expect(garbage.code == DeviceCode.verifyMismatch)
                #expect(garbage.message.hasPrefix("libplist cannot read the rendered plist"))
            }
        }
    }

    @Test("an MDM command's nested fragment is verified too: read as a plist's body, a corrupted value named")
    func fragment() throws {
        let program = try Self.nameProgram()
        // As mdm-settings renders it: the dictionary's body, four tabs deep.
        let renderer = Renderer(image: ProgramImage(program), format: .xml, xmlNesting: 4)
        let value = Array("Jane".utf8)
        try value.withView { v in
            let slots = [SlotValue(v)]
            try slots.withView { slots in
                var bytes = Array(try renderer.render(slots))
                #expect(!bytes.starts(with: Array("<?xml".utf8)))
                let verifier = Verifier(program: program, format: .xml, fragment: true)
                #expect(bytes.withView { verifier.check($0, slots: slots) } == nil)
                let at = try #require(bytes.firstRange(of: Array("Jane".utf8))).lowerBound
                bytes[at + 2] = UInt8(ascii: "m")
                let wrong = try #require(bytes.withView { verifier.check($0, slots: slots) })
                #expect(wrong.code == DeviceCode.verifyMismatch && wrong.location.key == "name")
            }
        }
    }

    @Test("the verifier evaluates template filters its own way and agrees with the VM, or names the key")
    func filters() throws {
        let spec = try #require(SpecParser.parse(Array("""
            <managedAppConfiguration><version>1</version><bundleId>com.example.app</bundleId>
            <dict><string keyName="u"/></dict></managedAppConfiguration>
            """.utf8), file: "s.xml").spec)
        let values = AdminValuesReader.read(Array(#"{"u": "$(ou|trim|replace: :-|lower|urlencode)/$(cn|default:x é|upper)/$(ou|trim|split: :-1|last:3)/$(ou|substr:2:5)"}"#.utf8),
                                            file: "v.json", spec: spec)
        let program = try Compiler.compile(spec, values: values.values)
        for format in OutputFormat.allCases {
            let renderer = Renderer(image: ProgramImage(program), format: format)
            let ou = Array("  Sales Ünit ".utf8)
            try ou.withView { v in
                // $(ou) present, $(cn) missing: the default, then upper.
                let slots = program.slots.map { $0 == .user(.ou) ? SlotValue(v) : SlotValue.missing }
                try slots.withView { slots in
                    let bytes = Array(try renderer.render(slots))
                    #expect(try LibPlist.decode(bytes)["u"] == .string("sales-%C3%BCnit/X É/nit/Sales"))
                    let verifier = Verifier(program: program, format: format)
                    #expect(bytes.withView { verifier.check($0, slots: slots) } == nil)
                }
            }
        }
    }
}
