import AppConfigCLI
import AppConfigCore
import AppConfigPush
@testable import AppConfigStatus
import Foundation
import ServerStandIn
import TestSupport
import Testing

/// The demo fleet rendered with its assignments (variants), pushed into a stand-in server, and
/// what its devices report made from the fixtures in `Fixtures/status/` (Apple's shapes, with
/// `${CONFIG}`-style places for each device's Identifiers and the server's tokens).
struct StatusFixture {
    static let apiKey = "st4tus-\"Key\\Secret/57"
    static let base = "https://cdn.example.com/appconfig"

    let dir: TemporaryDirectory
    var out: String { dir.path("out") }
    let delivery: String
    let server: StandInServer

    /// Renders the demo as `delivery` and pushes it (DDM into KMFDDM, MDM into NanoMDM).
    init(delivery: String = "ddm", extra: [String] = [], push: Bool = true) async throws {
        dir = try TemporaryDirectory()
        self.delivery = delivery
        var arguments = ["render", "--spec", Paths.fixture("demo/spec.xml"), "--values", Paths.fixture("demo/assignments.json"),
                         "--inventory", Paths.fixture("demo/inventory.csv"), "--directory", Paths.fixture("demo/directory.ldif"),
                         "--delivery", delivery, "--out", dir.path("out"), "--quiet"] + extra
        if delivery == "ddm" { arguments += ["--asset-base-url", Self.base] }
        let render = arguments
        let r = await onOwnThread { AppConfigCommand.capturing(render) }
        try #require(r.status == 3, "\(r.stderr)")
        let kind: ServerKind = delivery == "ddm" ? .kmfddm : .nanomdm
        server = StandInServer(flavor: delivery == "ddm" ? .kmfddm : .nanomdm, apiKey: Self.apiKey)
        try server.start()
        guard push else { return }
        var o = PushOptions(source: dir.path("out"), server: kind, url: server.baseURL, apiKey: Self.apiKey)
        o.firstRetryDelay = 0.01
        let pushed = await PushJob(o).run()
        try #require(pushed.exitStatus == 0, "\(String(describing: pushed.fatal))")
    }

    func pushOptions() -> PushOptions {
        var o = PushOptions(source: out, server: delivery == "ddm" ? .kmfddm : .nanomdm, url: server.baseURL, apiKey: Self.apiKey)
        o.firstRetryDelay = 0.01
        return o
    }

    func remove() {
        server.stop()
        try? FileManager.default.removeItem(at: dir.url)
    }

    /// `index.jsonl`: device -> (declarations, assignments), in order.
    func devices() throws -> [(key: String, ids: [String], assignments: [String])] {
        try String(contentsOfFile: out + "/index.jsonl", encoding: .utf8).split(separator: "\n").map { line in
            let o = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            return (o["device"] as! String, (o["declarations"] as? [String]) ?? [], (o["assignments"] as? [String]) ?? [])
        }
    }

    /// A report fixture filled in for `device`: its Identifiers and the tokens the server holds.
    func report(_ name: String, for device: (key: String, ids: [String], assignments: [String])) throws -> String {
        var text = try String(contentsOfFile: Paths.fixture("status/reports/\(name).json"), encoding: .utf8)
        let state = server.snapshot
        let names = ["ACTIVATION", "CONFIG", "STATUS", "ASSET"]
        for (i, name) in names.enumerated() {
            let id = device.ids[i]
            text = text.replacingOccurrences(of: "${\(name)_TOKEN}", with: try #require(state.declarations[id]?.token, "\(id) is not on the server"))
            text = text.replacingOccurrences(of: "${\(name)}", with: id)
        }
        return text.replacingOccurrences(of: "${BUNDLE}", with: "com.northwind.fieldservice")
    }

    /// The webhook event (one line) carrying `report` as `enrollment`'s status check-in.
    static func statusEvent(_ report: String, enrollment: String, at time: String = "2026-11-28T06:00:00Z") throws -> String {
        let plist = try fill("checkin-status.plist", ["REPORT_BASE64": Data(report.utf8).base64EncodedString(), "ENROLLMENT": enrollment])
        return try fill("declarative-management.json", ["ENROLLMENT": enrollment, "RAW_PAYLOAD": Data(plist.utf8).base64EncodedString(),
                                                        "CREATED_AT": time, "EVENT_ID": UUID().uuidString]).trimmingCharacters(in: .newlines)
    }

    /// A command result event (`Acknowledged`, `Error`, `NotNow`).
    static func resultEvent(_ status: String, uuid: String, enrollment: String) throws -> String {
        let plist = try fill("connect-\(status.lowercased()).plist", ["COMMAND_UUID": uuid, "ENROLLMENT": enrollment])
        return try fill("connect.json", ["ENROLLMENT": enrollment, "RAW_PAYLOAD": Data(plist.utf8).base64EncodedString(), "COMMAND_UUID": uuid,
                                         "STATUS": status, "CREATED_AT": "2026-11-28T06:00:00Z", "EVENT_ID": UUID().uuidString])
            .trimmingCharacters(in: .newlines)
    }

    static func fill(_ file: String, _ values: [String: String]) throws -> String {
        var text = try String(contentsOfFile: Paths.fixture("status/events/" + file), encoding: .utf8)
        for (k, v) in values { text = text.replacingOccurrences(of: "${\(k)}", with: v) }
        return text
    }

    /// Writes events (one per line) and runs the job on them.
    func status(events: [String], _ change: (inout StatusOptions) -> Void = { _ in }) async throws -> StatusResult {
        let path = dir.path("events-\(UUID().uuidString).jsonl")
        try (events.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        var o = StatusOptions(source: out)
        o.reports = .events(path)
        change(&o)
        return try await StatusJob(o).run()
    }

    /// Runs the job against the stand-in's status endpoints.
    func statusFromServer(_ change: (inout StatusOptions) -> Void = { _ in }) async throws -> StatusResult {
        var o = StatusOptions(source: out)
        o.reports = .server(kind: .kmfddm, url: server.baseURL, apiKey: Self.apiKey)
        o.statePath = dir.path("server.status-state")
        change(&o)
        return try await StatusJob(o).run()
    }
}

extension StatusResult {
    func verdict(_ device: String) -> DeviceVerdict? { verdicts.first { $0.device == device } }
}
