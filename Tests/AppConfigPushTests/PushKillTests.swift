import AppConfigCore
@testable import AppConfigPush
import Foundation
import ServerStandIn
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// SIGKILL during a push, then the same command: the server ends exactly as after one clean push
/// (issue 56). The push runs as the binary; the stand-in counts its requests and the test kills it
/// part way.
@Suite("Push: killed and resumed", .serialized)
struct PushKillTests {
    /// `APPCONFIG_PUSH_KILL_DEVICES` shrinks the fleet for a quick local run; the issue asks 30k.
    static let devices = ProcessInfo.processInfo.environment["APPCONFIG_PUSH_KILL_DEVICES"].flatMap(Int.init) ?? 30_000

    @Test("SIGKILL during a 30k push, then rerun: the server equals a clean push's")
    func killAndResume() async throws {
        let dir = try TemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir.url) }
        let generate = try runProcess("/usr/bin/env", ["python3", Paths.root.appendingPathComponent("tools/gen-fleet").path,
                                                       "--devices", String(Self.devices), "--out", dir.path("fleet")])
        try #require(generate.status == 0, "\(generate.stderr)")
        let out = dir.path("out")
        let render = try runProcess(Paths.appconfigBinary, ["render", "--spec", Paths.fixture("demo/spec.xml"), "--values", Paths.fixture("demo/values.json"),
                                                            "--inventory", dir.path("fleet/inventory.csv"), "--directory", dir.path("fleet/directory.ldif"),
                                                            "--delivery", "ddm", "--asset-base-url", "https://cdn.example.com/a", "--out", out, "--quiet"])
        try #require(render.status == 0 || render.status == 3, "\(render.stderr)")
        let expectedDevices = try PushSource(out).devices.count

        let server = try StandInServer.started(.kmfddm)
        defer { server.stop() }
        let variable = "APPCONFIG_TEST_PUSH_KEY"
        var environment = ProcessInfo.processInfo.environment
        environment[variable] = PushFixture.apiKey
        let arguments = ["push", out, "--server", "kmfddm", "--url", server.baseURL, "--api-key", "env:" + variable, "--quiet"]

        // Killed twice: while declarations go, and while sets and notifications go.
        let perDevice = 11
        for fraction in [0.2, 0.6] {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: Paths.appconfigBinary)
            process.arguments = arguments
            process.environment = environment
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            let target = Int(Double(expectedDevices * perDevice) * fraction)
            while process.isRunning && server.snapshot.requestCount < target { try await Task.sleep(nanoseconds: 5_000_000) }
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            #expect(process.terminationReason == .uncaughtSignal, "the push ended before it was killed")
        }
        let rerun = try runProcess(Paths.appconfigBinary, arguments, environment: environment)
        #expect(rerun.status == 0, "\(rerun.stdout) \(rerun.stderr)")
        let resumed = server.snapshot

        let clean = try StandInServer.started(.kmfddm)
        defer { clean.stop() }
        let once = try runProcess(Paths.appconfigBinary, ["push", out, "--server", "kmfddm", "--url", clean.baseURL, "--api-key", "env:" + variable,
                                                          "--journal", dir.path("clean-journal"), "--quiet"], environment: environment)
        #expect(once.status == 0, "\(once.stderr)")
        let expected = clean.snapshot
        #expect(resumed.declarations.count == expected.declarations.count)
        #expect(resumed.declarations == expected.declarations)
        #expect(resumed.sets == expected.sets)
        #expect(resumed.enrollmentSets == expected.enrollmentSets)
        #expect(resumed.enrollmentSets.count == expectedDevices)
        #expect(Set(resumed.syncCommands.keys) == Set(expected.syncCommands.keys))
        #expect(resumed.notifiedWithoutCommand.isEmpty)
        // The journal after the rerun says the server holds everything: another push sends nothing.
        let before = server.snapshot.requestCount
        let again = try runProcess(Paths.appconfigBinary, arguments, environment: environment)
        #expect(again.status == 0)
        #expect(server.snapshot.requestCount == before)
    }
}
