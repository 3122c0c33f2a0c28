import AppConfigCLI
import AppConfigCore
import AppConfigPush
@testable import AppConfigStatus
import Foundation
import ServerStandIn
import TestSupport
import Testing

/// `appconfig status` on the command line: exit statuses, the report folder, the page, bad events
/// named and not fatal, the API key nowhere, events from standard input.
@Suite("Status: the command", .serialized)
struct StatusCommandTests {
    @Test("every device current: exit 0; --report and --html written; the API key in no byte the run wrote")
    func allCurrent() async throws {
        let f = try await StatusFixture()
        defer { f.remove() }
        let devices = try f.devices()
        var reports: [String: [[UInt8]]] = [:]
        for d in devices { reports[d.key] = [Array(try f.report("current", for: d).utf8)] }
        f.server.update { $0.statusReports = reports }
        let keyFile = f.dir.path("api-key")
        try StatusFixture.apiKey.write(toFile: keyFile, atomically: true, encoding: .utf8)
        let report = f.dir.path("report"), page = f.dir.path("status.html")
        let r = await onOwnThread { AppConfigCommand.capturing(["status", f.out, "--server", "kmfddm", "--url", f.server.baseURL, "--api-key", "file:" + keyFile,
                                                                "--report", report, "--html", page]) }
        #expect(r.status == 0, "\(r.stdout) \(r.stderr)")
        #expect(r.stdout.hasPrefix("975 devices (ddm): current 975\ndone: 100.0%"), "\(r.stdout)")
        let lines = try String(contentsOfFile: report + "/status.jsonl", encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 975)
        let first = try #require(try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any])
        #expect(first["state"] as? String == "current" && first["device"] as? String == devices[0].key && first["assignments"] as? [String] == devices[0].assignments)
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report + "/summary.json"))) as? [String: Any])
        #expect(summary["devices"] as? Int == 975 && summary["doneShare"] as? Double == 1)
        let html = try String(contentsOfFile: page, encoding: .utf8)
        // Self-contained: no external script, style, image or link; a chart row per variant, every device a row.
        for external in ["src=", "href=", "@import", "url("] { #expect(!html.contains(external), "\(external)") }
        #expect(html.contains("<input id=\"q\" type=\"search\"") && html.components(separatedBy: "<tr><td>").count - 1 == 975)
        #expect(html.contains("title=\"cyclists\""))
        // The key: in no output, file, page or state.
        var written = r.stdout + r.stderr
        for file in ["status.jsonl", "summary.json", "errors.jsonl"] { written += try String(contentsOfFile: report + "/" + file, encoding: .utf8) }
        written += html + String(decoding: try Data(contentsOf: URL(fileURLWithPath: f.out + ".status-state")), as: UTF8.self)
        #expect(!written.contains(StatusFixture.apiKey) && !written.contains("st4tus"))
    }

    @Test("unreadable events are named (line, enrollment) and the rest folded: exit 3; events from standard input")
    func badEvents() async throws {
        let f = try await StatusFixture()
        defer { f.remove() }
        let d = try f.devices()[0]
        let good = try StatusFixture.statusEvent(try f.report("current", for: d), enrollment: d.key)
        let noIdentifier = try StatusFixture.statusEvent(#"{"StatusItems":{"app":{"managed":{"list":[{"state":"managed"}]}}}}"#, enrollment: "E-2")
        let notJSONReport = try StatusFixture.statusEvent("{not json", enrollment: "E-3")
        let events = [
            "{\"topic\": \"mdm.DeclarativeManagement\", \"checkin_event\": {\"enrollment_id\": \"E-1\", \"raw_payload\": \"%%%\"}}",
            "[1, 2]",
            "not json at all",
            noIdentifier,
            notJSONReport,
            "{\"topic\": \"mdm.Authenticate\", \"checkin_event\": {\"enrollment_id\": \"E-9\", \"raw_payload\": \"\"}}",
            good,
        ]
        let path = f.dir.path("events.jsonl")
        try (events.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        let report = f.dir.path("report")
        let r = await onOwnThread { AppConfigCommand.capturing(["status", f.out, "--events", path, "--report", report]) }
        #expect(r.status == 3)
        let errors = try String(contentsOfFile: report + "/errors.jsonl", encoding: .utf8).split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: String])
        }
        #expect(errors.map { $0["where"] ?? "" } == ["\(path):1", "\(path):2", "\(path):3", "\(path):4", "\(path):5"])
        #expect(errors[0]["message"] == "enrollment E-1: its raw_payload is not base64")
        #expect(errors[1]["message"] == "an event is a JSON object, not an array")
        #expect(errors[2]["message"]?.hasPrefix("not a JSON event: ") == true)
        #expect(errors[3]["message"] == "the status report of E-2: app.managed.list holds an entry without an identifier" && errors[3]["code"] == "status.report")
        #expect(errors[4]["message"]?.hasPrefix("enrollment E-3: its status report is not JSON") == true)
        #expect(r.stderr.contains("appconfig: status: \(path):1: error: enrollment E-1: its raw_payload is not base64 [status.event]"), "\(r.stderr)")
        // The good event was folded all the same.
        let lines = try String(contentsOfFile: report + "/status.jsonl", encoding: .utf8)
        #expect(lines.contains("\"device\":\"\(d.key)\",\"enrollment\":\"\(d.key)\",\"state\":\"current\""))

        // The same events on standard input (the binary: a pipe), into another state file.
        let p = try runProcess(Paths.appconfigBinary, ["status", f.out, "--events", "-", "--state", f.dir.path("stdin.state")], stdin: events.joined(separator: "\n"))
        #expect(p.status == 3)
        #expect(p.stderr.contains("<stdin>:1: error: enrollment E-1: its raw_payload is not base64"), "\(p.stderr)")
        #expect(p.stdout.contains("current 1, "))
    }

    @Test("usage: two sources, a server without status, an MDM output against a DDM server: exit 2; an unreachable server: exit 1")
    func usage() async throws {
        let f = try await StatusFixture()
        defer { f.remove() }
        setenv("APPCONFIG_STATUS_TEST_KEY", StatusFixture.apiKey, 1)
        let both = await onOwnThread { AppConfigCommand.capturing(["status", f.out, "--events", "x.jsonl", "--server", "kmfddm", "--url", f.server.baseURL, "--api-key", "env:APPCONFIG_STATUS_TEST_KEY"]) }
        #expect(both.status == 2 && both.stderr.contains("give --events or --server, not both"))
        let nanomdm = await onOwnThread { AppConfigCommand.capturing(["status", f.out, "--server", "nanomdm", "--url", f.server.baseURL, "--api-key", "env:APPCONFIG_STATUS_TEST_KEY"]) }
        #expect(nanomdm.status == 2 && nanomdm.stderr.contains("NanoMDM keeps no status"))
        let plainKey = await onOwnThread { AppConfigCommand.capturing(["status", f.out, "--server", "kmfddm", "--url", f.server.baseURL, "--api-key", StatusFixture.apiKey]) }
        #expect(plainKey.status == 2 && !plainKey.stderr.contains(StatusFixture.apiKey))
        let notOutput = await onOwnThread { AppConfigCommand.capturing(["status", f.dir.path("nothing"), "--events", "x.jsonl"]) }
        #expect(notOutput.status == 2)
        let missingEvents = await onOwnThread { AppConfigCommand.capturing(["status", f.out, "--events", f.dir.path("missing.jsonl")]) }
        #expect(missingEvents.status == 2 && missingEvents.stderr.contains("missing.jsonl"))
        f.server.stop()
        let down = await onOwnThread { AppConfigCommand.capturing(["status", f.out, "--server", "kmfddm", "--url", f.server.baseURL, "--api-key", "env:APPCONFIG_STATUS_TEST_KEY", "--retries", "0"]) }
        #expect(down.status == 1, "\(down.stderr)")
        #expect(down.stderr.contains("[status.server]") && !down.stderr.contains(StatusFixture.apiKey))
    }

    @Test("a device --remove-missing took out is removed, not never-reported")
    func removed() async throws {
        let f = try await StatusFixture()
        defer { f.remove() }
        let devices = try f.devices()
        // Tonight's inventory without the first device's row.
        let csv = try String(contentsOfFile: Paths.fixture("demo/inventory.csv"), encoding: .utf8)
        let kept = csv.components(separatedBy: "\r\n").filter { !$0.contains(devices[0].key) }.joined(separator: "\r\n")
        let inventory = f.dir.path("inventory.csv")
        try kept.write(toFile: inventory, atomically: true, encoding: .utf8)
        let r = await onOwnThread { AppConfigCommand.capturing(["render", "--spec", Paths.fixture("demo/spec.xml"), "--values", Paths.fixture("demo/assignments.json"),
                                            "--inventory", inventory, "--directory", Paths.fixture("demo/directory.ldif"), "--delivery", "ddm",
                                            "--asset-base-url", StatusFixture.base, "--out", f.out, "--quiet", "--remove-missing"]) }
        #expect(r.status == 3, "\(r.stderr)")
        let result = try await f.status(events: [])
        #expect(result.verdict(devices[0].key)?.state == .removed)
        #expect(result.summary.states["removed"] == 1)
    }
}
