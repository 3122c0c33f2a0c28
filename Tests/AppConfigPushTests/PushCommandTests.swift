import AppConfigCLI
import AppConfigCore
@testable import AppConfigPush
import Foundation
import ServerStandIn
import TestSupport
import Testing

/// `appconfig push` on the command line (issue 56): its statuses, its one-line errors, its plan,
/// its report, and an API key that never shows in anything it writes.
@Suite("Push: the command", .serialized)
struct PushCommandTests {
    static let keyVariable = "APPCONFIG_TEST_PUSH_KEY"

    static func push(_ f: PushFixture, _ server: StandInServer, _ kind: String, _ extra: [String] = [], key: String = PushFixture.apiKey) async -> (status: Int32, stdout: String, stderr: String) {
        setenv(keyVariable, key, 1)
        defer { unsetenv(keyVariable) }
        let arguments = ["push", f.out, "--server", kind, "--url", server.baseURL, "--api-key", "env:" + keyVariable] + extra
        return await onOwnThread { AppConfigCommand.capturing(arguments) }
    }

    @Test("A wrong key: one clear line, status 1; a delivery the server does not take: one line, status 2")
    func wrongKeyAndPairing() async throws {
        let f = try PushFixture()
        defer { f.remove() }
        f.render()
        let server = try StandInServer.started(.kmfddm)
        defer { server.stop() }
        let wrong = await Self.push(f, server, "kmfddm", key: "not-the-key")
        #expect(wrong.status == 1)
        #expect(wrong.stderr == "appconfig: push: kmfddm at \(server.baseURL) refused the API key (401 Unauthorized) for user kmfddm\n")
        #expect(!wrong.stderr.contains("not-the-key"))
        #expect(server.snapshot.declarations.isEmpty)

        let pairing = await Self.push(f, server, "nanomdm")
        #expect(pairing.status == 2)
        #expect(pairing.stderr == "appconfig: push: \(f.out) holds --delivery ddm, which goes to kmfddm or nanohub, not to nanomdm\n")
        let literal = await onOwnThread { AppConfigCommand.capturing(["push", f.out, "--server", "kmfddm", "--url", server.baseURL, "--api-key", "sekret"]) }
        #expect(literal.status == 2)
        #expect(literal.stderr.contains("never the key itself"))
        let remote = await onOwnThread { AppConfigCommand.capturing(["push", f.out, "--server", "kmfddm", "--url", "http://mdm.example.com", "--api-key", "env:HOME"]) }
        #expect(remote.status == 2)
        #expect(remote.stderr.contains("http:// only for loopback"))
    }

    @Test("--dry-run prints the plan and sends nothing; --report; the key in no byte written")
    func dryRunReportAndSecrets() async throws {
        let f = try PushFixture()
        defer { f.remove() }
        f.render()
        let server = try StandInServer.started(.kmfddm)
        defer { server.stop() }
        let devices = try f.index().count
        let plan = await Self.push(f, server, "kmfddm", ["--dry-run"])
        #expect(plan.status == 0)
        #expect(plan.stdout.hasPrefix("plan for kmfddm at \(server.baseURL) (journal \(f.out).push-journal): \(devices) devices: \(devices) new, 0 changed, 0 removed, 0 unchanged\n"))
        #expect(plan.stdout.contains("notify \((devices + 29) / 30)"))
        #expect(plan.stdout.contains("enrollment-set \(devices)"))
        #expect(server.snapshot.requestCount == 0)
        #expect(!FileManager.default.fileExists(atPath: f.out + ".push-journal"))

        let report = f.dir.path("report")
        let run = await Self.push(f, server, "kmfddm", ["--report", report])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.hasPrefix("pushed \(devices) devices and 0 removals to kmfddm at \(server.baseURL) in "))
        let summary = try JSONDecoder().decode(PushSummary.self, from: Data(contentsOf: URL(fileURLWithPath: report + "/summary.json")))
        #expect(summary.devices.pushed == devices)
        #expect(summary.requestsTotal == server.snapshot.requestCount)
        let again = await Self.push(f, server, "kmfddm", ["--report", report])
        #expect(again.stdout == "pushed nothing to kmfddm at \(server.baseURL): \(devices) devices: 0 new, 0 changed, 0 removed, \(devices) unchanged\n")

        // Every byte the runs wrote: journal, report, standard output and error.
        var written = plan.stdout + plan.stderr + run.stdout + run.stderr + again.stdout + again.stderr
        for path in [f.out + ".push-journal", report + "/summary.json", report + "/errors.jsonl"] {
            written += String(decoding: try Data(contentsOf: URL(fileURLWithPath: path)), as: UTF8.self)
        }
        let key = PushFixture.apiKey
        let encoded = Data(("kmfddm:" + key).utf8).base64EncodedString()
        for form in [key, encoded, key.replacingOccurrences(of: "\"", with: "\\\""), Data(key.utf8).base64EncodedString()] {
            #expect(!written.contains(form), "the API key is in what push wrote")
        }
    }

    @Test("--enrollment-id: devices keyed by serial number go to their UDID's enrollment")
    func enrollmentIDs() async throws {
        let f = try PushFixture()
        defer { f.remove() }
        f.render("mdm-settings", ["--device-key", "Serial Number"])
        let server = try StandInServer.started(.nanomdm)
        defer { server.stop() }
        let run = await Self.push(f, server, "nanomdm", ["--enrollment-id", "udid", "--inventory", f.inventory, "--device-key", "Serial Number"])
        #expect(run.status == 0, "\(run.stderr)")
        let index = try f.index()
        let udids = try PushOptions.enrollmentIDs(inventory: f.inventory, variable: "udid", deviceKeyColumn: "Serial Number")
        let state = server.snapshot
        #expect(state.queue.count == index.count)
        for serial in index.keys {
            let udid = try #require(udids[serial])
            #expect(state.queue[udid]?.count == 1, "\(serial) -> \(udid)")
        }
    }
}
