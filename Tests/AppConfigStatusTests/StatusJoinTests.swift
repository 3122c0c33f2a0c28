import AppConfigCLI
import AppConfigCore
import AppConfigPush
@testable import AppConfigStatus
import Foundation
import ServerStandIn
import TestSupport
import Testing

/// `appconfig status` (issue 57): every state from its own fixture, read from webhook events and
/// from the stand-in's status endpoints alike; incremental reports folded in order and kept.
@Suite("Status: what devices report, joined", .serialized)
struct StatusJoinTests {
    /// Each DDM fixture and the state (and what the verdict says) it must give.
    static let ddmCases: [(fixture: String, state: DeviceState, detail: String?, reason: String?)] = [
        ("current", .current, nil, nil),
        ("stale", .stale, "at token 4a1c0e5f8d2b7a9c3e6f1d0b8a7c5e42", nil),
        ("pending", .pending, "not active, valid unknown", nil),
        ("invalid-declaration", .invalidDeclaration, "appconfig.config.", "Error.ConfigurationIsInvalid (The configuration is invalid.)"),
        ("asset-failed", .assetFailed, "asset appconfig.asset.", "Error.AssetCannotBeDownloaded (The asset cannot be downloaded.)"),
        ("app-config-rejected", .appConfigRejected, "the app found its configuration invalid", nil),
        ("extension-config-rejected", .appConfigRejected, "extension com.northwind.fieldservice.vpn found its configuration invalid", nil),
        ("app-not-managed", .appNotManaged, "the app is failed", "Error.LicenseNotFound (A license for the app was not available.)"),
    ]

    @Test("every DDM state from its own fixture, from webhook events and from the server's status endpoints alike")
    func ddmStates() async throws {
        let f = try await StatusFixture()
        defer { f.remove() }
        let devices = try f.devices()
        #expect(devices.count == 975)
        var events: [String] = []
        for (i, c) in Self.ddmCases.enumerated() {
            let report = try f.report(c.fixture, for: devices[i])
            events.append(try StatusFixture.statusEvent(report, enrollment: devices[i].key))
            f.server.update { $0.statusReports[devices[i].key] = [Array(report.utf8)] }
        }
        // An enrollment the generation does not know: counted, not dropped.
        events.append(try StatusFixture.statusEvent(try f.report("current", for: devices[0]), enrollment: "0000-NOT-IN-THIS-FLEET"))
        let fromEvents = try await f.status(events: events)
        let fromServer = try await f.statusFromServer()
        for result in [fromEvents, fromServer] {
            for (i, c) in Self.ddmCases.enumerated() {
                let v = try #require(result.verdict(devices[i].key))
                #expect(v.state == c.state, "\(c.fixture): \(v.state) \(v.detail ?? "")")
                if let detail = c.detail { #expect(v.detail?.contains(detail) == true, "\(c.fixture): \(v.detail ?? "nil")") }
                if let reason = c.reason { #expect(v.reasons.contains(reason), "\(c.fixture): \(v.reasons)") }
                #expect(v.assignments == devices[i].assignments)
            }
            // Every other device reported nothing.
            let untouched = try #require(result.verdict(devices[Self.ddmCases.count].key))
            #expect(untouched.state == .neverReported)
            #expect(result.summary.states["never-reported"] == devices.count - Self.ddmCases.count)
            #expect(result.summary.devices == devices.count)
        }
        #expect(fromEvents.verdict("0000-NOT-IN-THIS-FLEET")?.state == .unknownDevice)
        #expect(fromEvents.summary.unknownDevices == 1)
        #expect(fromEvents.summary.events == Self.ddmCases.count + 1 && fromEvents.summary.reports == Self.ddmCases.count + 1)
        #expect(!fromEvents.summary.allDone)
        // The server was asked per batch of enrollments, and each device's newest raw report.
        let requests = f.server.snapshot.requests
        #expect(requests["GET declaration-status/{ids}"] == (devices.count + 49) / 50)
        #expect(requests["GET status-report/{id}"] == devices.count)
    }

    @Test("the report fixtures are in Apple's shapes: the validator checks each against the status items' schemas, and fails a wrong one")
    func fixturesInApplesShapes() throws {
        let python = try #require(which("python3"), "python3 is needed for the validator")
        let script = Paths.root.appendingPathComponent("Tests/Oracles/ddm_validator.py").path
        let schemas = Paths.root.appendingPathComponent("Tests/Oracles/apple-device-management").path
        let folder = Paths.fixture("status/reports")
        let reports = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".json") }.sorted().map { folder + "/" + $0 }
        #expect(reports.count == 11)
        let r = try runProcess(python, [script, schemas, "status-reports"] + reports)
        #expect(r.status == 0 && r.stdout.hasSuffix("ddm validator: 11 status reports, 0 problems\n"), "\(r.stdout)")
        try withTemporaryDirectory { dir in
            let bad = try dir.write(#"{"StatusItems":{"app":{"managed":{"list":[{"identifier":"x","config-state":{"app-config-state":{"state":"rejected"}}}]}}}}"#, to: "bad.json")
            let v = try runProcess(python, [script, schemas, "status-reports", bad])
            #expect(v.status == 1 && v.stdout.contains("'rejected' is not one of ['unknown', 'invalid', 'valid']"))
        }
    }

    @Test("incremental reports fold in order onto a full one, across runs through the state file; a removed app leaves the device current")
    func incremental() async throws {
        let f = try await StatusFixture()
        defer { f.remove() }
        let d = try f.devices()[0]
        let first = try await f.status(events: [
            try StatusFixture.statusEvent(try f.report("stale", for: d), enrollment: d.key),
            try StatusFixture.statusEvent(try f.report("incremental-declarations-current", for: d), enrollment: d.key, at: "2026-11-28T07:00:00Z"),
        ])
        #expect(first.verdict(d.key)?.state == .current)
        #expect(first.verdict(d.key)?.reported == "2026-11-28T07:00:00Z")
        // A later run reads only the new events: the state file carries the fold.
        let second = try await f.status(events: [try StatusFixture.statusEvent(try f.report("incremental-app-rejected", for: d), enrollment: d.key)])
        #expect(second.verdict(d.key)?.state == .appConfigRejected)
        let third = try await f.status(events: [try StatusFixture.statusEvent(try f.report("incremental-app-removed", for: d), enrollment: d.key)])
        #expect(third.verdict(d.key)?.state == .current)
        // A run without reports judges the kept state.
        var o = StatusOptions(source: f.out)
        o.reports = nil
        #expect(try await StatusJob(o).run().verdict(d.key)?.state == .current)
        // Another state file knows nothing.
        let fresh = try await f.status(events: []) { $0.statePath = f.dir.path("other.state") }
        #expect(fresh.verdict(d.key)?.state == .neverReported)
    }

    @Test("a fleet pushed, 1% reporting an older token, one variant whose app rejects its configuration: the roll-up names that variant first")
    func rollUpNamesTheVariant() async throws {
        let f = try await StatusFixture()
        defer { f.remove() }
        let devices = try f.devices()
        let broken = "cyclists"
        var events: [String] = []
        var stale = 0, rejected = 0
        for (i, d) in devices.enumerated() {
            let fixture: String
            if d.assignments.contains(broken) {
                fixture = "app-config-rejected"
                rejected += 1
            } else if i % 100 == 7 {
                fixture = "stale"
                stale += 1
            } else {
                fixture = "current"
            }
            events.append(try StatusFixture.statusEvent(try f.report(fixture, for: d), enrollment: d.key))
        }
        try #require(rejected > 0 && stale > 0)
        let result = try await f.status(events: events) { $0.inventory = Paths.fixture("demo/inventory.csv") }
        let s = result.summary
        #expect(s.states["stale"] == stale && s.states["app-config-rejected"] == rejected && s.states["current"] == devices.count - stale - rejected)
        #expect(s.rollups["assignment"]?[broken]?["app-config-rejected"] == rejected)
        #expect(s.rollups["assignment"]?[broken]?["current"] == nil)
        // Model and OS version from the inventory.
        #expect(s.rollups["model"]?["iPhone 15"] != nil && s.rollups["os"]?["18.1"] != nil)
        let text = s.text()
        let lines = text.split(separator: "\n")
        let byAssignment = try #require(lines.firstIndex { $0 == "by assignment, most not done first:" })
        #expect(lines[byAssignment + 1].hasPrefix("  \(broken): \(rejected) of \(rejected) not done (100%): app-config-rejected \(rejected)"), "\(text)")
    }

    @Test("MDM commands: acknowledged, error with its chain, not-now, pending; a removed device is removed")
    func mdmStates() async throws {
        let f = try await StatusFixture(delivery: "mdm-settings")
        defer { f.remove() }
        let devices = try f.devices()
        let journal = try #require(try PushJournal.existing(at: f.out + ".push-journal"))
        func uuid(_ i: Int) throws -> String { try #require(journal.device(devices[i].key)?.commandUUID) }
        let events = [
            try StatusFixture.resultEvent("Acknowledged", uuid: try uuid(0), enrollment: devices[0].key),
            try StatusFixture.resultEvent("Error", uuid: try uuid(1), enrollment: devices[1].key),
            try StatusFixture.resultEvent("NotNow", uuid: try uuid(2), enrollment: devices[2].key),
            // A result for another command of the device: not this generation's.
            try StatusFixture.resultEvent("Acknowledged", uuid: "6F0F3A53-0000-4000-8000-000000000000", enrollment: devices[3].key),
        ]
        let r = try await f.status(events: events)
        #expect(r.verdict(devices[0].key)?.state == .acknowledged)
        let error = try #require(r.verdict(devices[1].key))
        #expect(error.state == .error && error.reasons == ["MCMDMErrorDomain 12021: The app “com.northwind.fieldservice” is not managed."])
        #expect(r.verdict(devices[2].key)?.state == .notNow)
        #expect(r.verdict(devices[3].key)?.state == .pending)
        #expect(r.summary.states["pending"] == devices.count - 3)
        // The server's status endpoints are DDM's: an MDM output is a usage error there.
        let refused = await #expect(throws: Problem.self) { try await f.statusFromServer() }
        #expect(refused?.code.rawValue == StatusCode.usage.rawValue)
        #expect(refused?.message.hasSuffix("its results come as mdm.Connect events (--events), not from a DDM server") == true)
    }
}
