@testable import AppConfigStatus
import AppConfigCore
import Foundation
import TestSupport
import Testing

/// The fold kept packed (`PackedReport`) against a fold written here from the semantics alone,
/// over reports Foundation reads: the same device after every report, and the same bytes as the
/// oracle's device packed (so entries are in key order and the last of equal keys is kept).
@Suite("Status: the packed fold")
struct PackedReportTests {
    /// The documented fold, on Foundation's reading of the report: a full report replaces what it
    /// carries; declarations come whole; apps one by one, `_removed` taking one out.
    static func oracle(_ device: inout DeviceReport, _ json: String, received: String?) throws {
        let report = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        func reasons(_ any: Any?) -> [String] {
            ((any as? [[String: Any]]) ?? []).compactMap { r in
                guard let code = r["code"] as? String else { return nil }
                if let d = r["description"] as? String, !d.isEmpty { return "\(code) (\(d))" }
                return code
            }
        }
        let full = report["FullReport"] as? Bool ?? false
        device.reports += 1
        if let received { device.received = received }
        let items = report["StatusItems"] as? [String: Any]
        if let groups = (items?["management"] as? [String: Any])?["declarations"] as? [String: Any] {
            device.declarations = [:]
            // Foundation's dictionary has no order: groups are taken in the text's order here by
            // the test's reports naming each identifier once across groups, or in one group.
            for key in groups.keys.sorted() {
                for item in groups[key] as? [[String: Any]] ?? [] {
                    device.declarations[item["identifier"] as! String] = .init(
                        token: item["server-token"] as? String ?? "", active: item["active"] as? Bool ?? false,
                        valid: item["valid"] as? String ?? "unknown", reasons: reasons(item["reasons"]))
                }
            }
        } else if full {
            device.declarations = [:]
        }
        if full { device.apps = [:] }
        for item in ((items?["app"] as? [String: Any])?["managed"] as? [String: Any])?["list"] as? [[String: Any]] ?? [] {
            let id = item["identifier"] as! String
            if item["_removed"] as? Bool == true {
                device.apps[id] = nil
                continue
            }
            let config = item["config-state"] as? [String: Any]
            var extensions: [String: String] = [:]
            for (k, v) in config?["extension-config-state"] as? [String: Any] ?? [:] {
                if let state = (v as? [String: Any])?["state"] as? String { extensions[k] = state }
            }
            device.apps[id] = .init(state: item["state"] as? String, declaration: item["declaration-identifier"] as? String,
                                    configState: (config?["app-config-state"] as? [String: Any])?["state"] as? String,
                                    extensionStates: extensions, reasons: reasons(item["reasons"]))
        }
        device.errors = ((report["Errors"] as? [[String: Any]]) ?? []).map { e in
            let codes = reasons(e["Reasons"])
            let item = e["StatusItem"] as? String ?? "?"
            return codes.isEmpty ? item : "\(item): \(codes.joined(separator: ", "))"
        }
    }

    static func app(_ id: String, state: String? = "managed", config: String? = nil, extensions: [(String, String)] = [], reasons: String = "[]") -> String {
        var fields = [#""identifier":"\#(id)""#]
        if let state { fields.append(#""state":"\#(state)""#) }
        fields.append(#""declaration-identifier":"appconfig.config.\#(id.count)""#)
        if config != nil || !extensions.isEmpty {
            let ext = extensions.map { #""\#($0.0)":{"state":"\#($0.1)"}"# }.joined(separator: ",")
            fields.append(#""config-state":{"app-config-state":{"state":"\#(config ?? "unknown")"},"extension-config-state":{\#(ext)}}"#)
        }
        fields.append(#""reasons":\#(reasons)"#)
        return "{" + fields.joined(separator: ",") + "}"
    }

    static func report(full: Bool, declarations: String? = nil, apps: [String]? = nil, errors: String = "[]") -> String {
        var items: [String] = []
        if let declarations { items.append(#""management":{"declarations":\#(declarations)}"#) }
        if let apps { items.append(#""app":{"managed":{"list":[\#(apps.joined(separator: ","))]}}"#) }
        return #"{"FullReport":\#(full),"StatusItems":{\#(items.joined(separator: ","))},"Errors":\#(errors)}"#
    }

    static let declarations = #"""
    {"configurations":[{"identifier":"appconfig.config.z","server-token":"t2","active":true,"valid":"valid"},
                        {"identifier":"appconfig.config.a","server-token":"t1","active":false,"valid":"invalid",
                         "reasons":[{"code":"Error.ConfigurationIsInvalid","description":"bad"},{"code":"Error.Other","description":""},{"description":"no code"}]}],
     "activations":[{"identifier":"appconfig.activation.\u00e9t\u00e9","server-token":"t3","active":true}],
     "assets":[], "management":[{"identifier":"Zo\u00eb","valid":"unknown"}]}
    """#

    /// Reports folded in turn: every kind of change the fold must make.
    static let sequence: [String] = [
        report(full: true, declarations: declarations, apps: [
            app("com.z.app", config: "valid"), app("com.a.app", state: "installing", reasons: #"[{"code":"Error.LicenseNotFound","description":"none"}]"#),
            app("com.m.app", config: "invalid", extensions: [("com.m.app.widget", "invalid"), ("com.m.app.share", "valid"), ("com.m.app.widget", "valid")]),
        ], errors: #"[{"StatusItem":"app.managed.list","Reasons":[{"code":"Error.NotSupported"}]}]"#),
        // Incremental: one app changed, one removed, one added between the others, one removed that was never there.
        report(full: false, apps: [app("com.m.app", config: "valid"), #"{"identifier":"com.z.app","_removed":true}"#, app("com.b.app"),
                                   #"{"identifier":"com.never","_removed":true}"#]),
        // The same app twice in one report: the last one counts.
        report(full: false, apps: [app("com.b.app", state: "failed"), app("com.b.app", state: "managed", config: "invalid")]),
        // Declarations only: the apps stay.
        report(full: false, declarations: #"{"configurations":[{"identifier":"appconfig.config.a","server-token":"t9","active":true,"valid":"valid"}]}"#),
        // Nothing but errors.
        report(full: false, errors: #"[{"StatusItem":"management.declarations"}]"#),
        // A full report without apps or declarations clears both.
        report(full: true),
        report(full: false, apps: [app("com.q.app"), app("com.c.app")]),
    ]

    @Test("each report of a sequence folds as the semantics say, to the bytes the oracle's device packs to")
    func sequenceFolds() throws {
        var packed = PackedReport.empty, expected = DeviceReport()
        for (n, json) in Self.sequence.enumerated() {
            let received = n == 4 ? nil : "2026-11-28T0\(n):00:00Z"
            let update = try StatusReportReader.read(try #require(LeanJSON(Array(json.utf8))), received: received.map { Array($0.utf8)[...] },
                                                     at: .init(Location(file: "t"), enrollment: "E"))
            packed.apply(update)
            try Self.oracle(&expected, json, received: received)
            #expect(packed.report == expected, "after report \(n)")
            #expect(packed == PackedReport(expected), "after report \(n): the bytes")
        }
        // The fold's last state: apps in key order, the removed one gone.
        #expect(packed.report?.apps.keys.sorted() == ["com.c.app", "com.q.app"])
    }

    @Test("seeded random sequences of incremental and full reports fold as the oracle does", arguments: 0..<8)
    func randomSequences(seed: Int) throws {
        var rng = SplitMix64(seed: UInt64(seed))
        func below(_ n: Int) -> Int { Int.random(in: 0..<n, using: &rng) }
        let ids = ["com.a", "com.b", "com.bb", "com.c", "com.ä", "com.z"]
        var packed = PackedReport.empty, expected = DeviceReport()
        for n in 0..<40 {
            var apps: [String] = []
            for _ in 0..<below(5) {
                let id = ids[below(ids.count)]
                apps.append(below(4) == 0 ? #"{"identifier":"\#(id)","_removed":true}"#
                                              : Self.app(id, state: ["managed", "failed", nil][below(3)], config: ["valid", "invalid", nil][below(3)]))
            }
            let json = Self.report(full: below(6) == 0, declarations: below(3) == 0 ? Self.declarations : nil, apps: below(5) == 0 ? nil : apps)
            let update = try StatusReportReader.read(try #require(LeanJSON(Array(json.utf8))), received: nil, at: .init(Location(file: "t"), enrollment: "E"))
            packed.apply(update)
            try Self.oracle(&expected, json, received: nil)
            #expect(packed == PackedReport(expected), "seed \(seed), report \(n): \(json)")
        }
    }

    @Test("a command's result folds in beside the reports; the view finds it")
    func commandResult() throws {
        var packed = PackedReport.empty
        packed.apply(command: "U2", .init(status: "Error", errorChain: ["D 1: no"]), received: "r1")
        packed.apply(command: "U1", .init(status: "Acknowledged", errorChain: []), received: nil)
        #expect(packed.report?.commands == ["U1": .init(status: "Acknowledged", errorChain: []), "U2": .init(status: "Error", errorChain: ["D 1: no"])])
        #expect(packed.received == "r1")
        packed.bytes.withView { b in
            let view = PackedView(b)
            let found = view.command("U2")
            #expect(found?.status.text == "Error" && found.map { view.texts($0.chain) } == ["D 1: no"])
            #expect(view.command("U3") == nil)
        }
    }
}
