import AppConfigCLI
import AppConfigCore
import AppConfigPush
@testable import AppConfigStatus
import Foundation
import ServerStandIn
import TestSupport
import Testing

/// `push --stages ... --gate ...` against the stand-in, with devices that report once their set
/// reaches them (a task playing the fleet: each enrollment given a set reports a fixture).
@Suite("Status: staged rollouts", .serialized)
struct StagedRolloutTests {
    /// Until cancelled: every enrollment the server gave a set reports `fixture(device)`.
    static func fleet(_ f: StatusFixture, _ fixture: @escaping @Sendable (_ assignments: [String]) -> String) throws -> Task<Void, Never> {
        let devices = try f.devices()
        return Task {
            var reported = Set<String>()
            while !Task.isCancelled {
                let state = f.server.snapshot
                var reports: [String: [UInt8]] = [:]
                for d in devices where !reported.contains(d.key) && !(state.enrollmentSets[d.key] ?? []).isEmpty {
                    if let r = try? f.report(fixture(d.assignments), for: d) { reports[d.key] = Array(r.utf8) }
                }
                if !reports.isEmpty {
                    f.server.update { s in for (k, r) in reports { s.statusReports[k, default: []].append(r) } }
                    reported.formUnion(reports.keys)
                }
                try? await Task.sleep(nanoseconds: 20_000_000)
            }
        }
    }

    static func options(_ f: StatusFixture, stages: String, pilot: String? = nil, timeout: Double = 30) throws -> StagedRollout.Options {
        var status = StatusOptions(source: f.out)
        status.reports = .server(kind: .kmfddm, url: f.server.baseURL, apiKey: StatusFixture.apiKey)
        var o = StagedRollout.Options(stages: try StagedRollout.stages(stages), status: status)
        o.interval = 0.1
        o.gateTimeout = timeout
        o.pilot = pilot
        return o
    }

    @Test("a gate met goes on: 5% first, its devices report current, then the rest; the server ends holding the whole output")
    func gateMet() async throws {
        let f = try await StatusFixture(push: false)
        defer { f.remove() }
        let devices = try f.devices()
        let fleet = try Self.fleet(f) { _ in "current" }
        defer { fleet.cancel() }
        let result = await StagedRollout(push: f.pushOptions(), options: try Self.options(f, stages: "5%,100%")).run()
        #expect(result.exitStatus == 0, "\(result.stopped ?? "") \(String(describing: result.fatal))")
        #expect(result.stages.map(\.devices) == [49, 975])
        #expect(result.stages.map(\.push.summary.devices.pushed) == [49, 926])
        #expect(result.stages[0].doneShare == 1 && result.stages[1].doneShare == nil)
        // The first stage's devices are the first 49 of the stable order, and only they waited for the gate.
        let order = StagedRollout.order(try PushSource(f.out).devices, pilot: nil)
        #expect(result.stages[0].push.summary.plan.waiting == 926)
        let state = f.server.snapshot
        #expect(state.enrollmentSets.count == devices.count)
        #expect(Set(order.prefix(49)).isSubset(of: Set(state.statusReports.keys)))
    }

    @Test("a gate missed stops with exit 1, naming the states and the variant; nothing goes to the rest; the same command resumes once it is fixed")
    func gateMissed() async throws {
        let f = try await StatusFixture(push: false)
        defer { f.remove() }
        let devices = try f.devices()
        let pilot = "cyclists"
        let pilotDevices = Set(devices.filter { $0.assignments.contains(pilot) }.map(\.key))
        try #require(!pilotDevices.isEmpty)
        let rejecting = try Self.fleet(f) { $0.contains(pilot) ? "app-config-rejected" : "current" }
        let stopped = await StagedRollout(push: f.pushOptions(), options: try Self.options(f, stages: "10%,100%", pilot: pilot, timeout: 1)).run()
        rejecting.cancel()
        #expect(stopped.exitStatus == 1)
        let message = try #require(stopped.stopped)
        // The pilot (191 devices, over 10%) is the first stage, then the whole fleet.
        #expect(message.hasPrefix("stage 1/2 reached 0.0% of its \(pilotDevices.count) devices done"), "\(message)")
        #expect(message.contains("below the gate 95.0%: app-config-rejected \(pilotDevices.count) (\(pilot) \(pilotDevices.count)"), "\(message)")
        #expect(message.hasSuffix("the other \(devices.count - pilotDevices.count) devices were not pushed"))
        // Only the pilot's devices hold a set.
        #expect(Set(f.server.snapshot.enrollmentSets.keys) == pilotDevices)

        // Fixed: the pilot's devices now report current. The same rollout sends nothing to them
        // again (the journal), passes their gate and goes on.
        let fixedReports = try Dictionary(uniqueKeysWithValues: devices.filter { pilotDevices.contains($0.key) }.map { ($0.key, [Array(try f.report("current", for: $0).utf8)]) })
        f.server.update { s in for (k, r) in fixedReports { s.statusReports[k] = r } }
        let fleet = try Self.fleet(f) { _ in "current" }
        defer { fleet.cancel() }
        let resumed = await StagedRollout(push: f.pushOptions(), options: try Self.options(f, stages: "10%,100%", pilot: pilot)).run()
        #expect(resumed.exitStatus == 0, "\(resumed.stopped ?? "")")
        #expect(resumed.stages[0].push.summary.devices.pushed == 0 && resumed.stages[0].push.summary.devices.unchanged == pilotDevices.count)
        #expect(resumed.stages.map(\.push.summary.devices.pushed).reduce(0, +) == devices.count - pilotDevices.count)
        #expect(f.server.snapshot.enrollmentSets.count == devices.count)
    }

    @Test("--stages on the command line: bad shares, --pilot alone and an unknown pilot are refused")
    func commandLine() async throws {
        let f = try await StatusFixture(push: false)
        defer { f.remove() }
        setenv("APPCONFIG_ROLLOUT_TEST_KEY", StatusFixture.apiKey, 1)
        let base = ["push", f.out, "--server", "kmfddm", "--url", f.server.baseURL, "--api-key", "env:APPCONFIG_ROLLOUT_TEST_KEY"]
        let bad = await onOwnThread { AppConfigCommand.capturing(base + ["--stages", "10%,5%"]) }
        #expect(bad.status == 2 && bad.stderr.contains("--stages 10%,5%: ascending shares"))
        let alone = await onOwnThread { AppConfigCommand.capturing(base + ["--pilot", "cyclists"]) }
        #expect(alone.status == 2 && alone.stderr.contains("--pilot goes with --stages"))
        let unknown = await onOwnThread { AppConfigCommand.capturing(base + ["--stages", "1%,100%", "--pilot", "no-such-variant"]) }
        #expect(unknown.status == 1 && unknown.stderr.contains("rollout stopped: --pilot no-such-variant: no device of the generation is in that assignment"))
        #expect(f.server.snapshot.requestCount == 0)
    }
}
