import AppConfigCLI
import AppConfigCore
@testable import AppConfigPush
import Foundation
import ServerStandIn
import TestSupport
import Testing

/// A rendered demo fleet and a stand-in server to push it into.
struct PushFixture {
    static let apiKey = "k3y-\"Push\\Secret/42"
    static let base = "https://cdn.example.com/appconfig"
    static let secretBase = "https://mdm.example.com/appconfig-secrets"

    let dir: TemporaryDirectory
    var out: String { dir.path("out") }
    var inventory: String
    var directory: String

    init() throws {
        dir = try TemporaryDirectory()
        inventory = dir.path("inventory.csv")
        directory = dir.path("directory.ldif")
        try FileManager.default.copyItem(atPath: Paths.fixture("demo/inventory.csv"), toPath: inventory)
        try FileManager.default.copyItem(atPath: Paths.fixture("demo/directory.ldif"), toPath: directory)
        var csv = "sAMAccountName,password\n"
        for n in 0..<1000 { csv += String(format: "u%07d,", n) + "pw-\(n)-\"x\\y\"" + "\n" }
        _ = try dir.write(csv, to: "passwords.csv")
        _ = try dir.write("""
            {"values": {"serverURL": "https://$(ou).fs.northwind.example/tenant/$(sAMAccountName)", "theme": "system"},
             "credentials": [
              {"identifier": "server-password", "kind": "password", "UserName": "$(sAMAccountName)", "Password": {"secret": "pw"}},
              {"identifier": "device-identity", "kind": "acme", "DirectoryURL": "https://ca.example.com/acme/directory",
               "ClientIdentifier": "$(udid)", "KeyType": "ECSECPrimeRandom", "KeySize": 384, "HardwareBound": true, "Attest": true,
               "Subject": [[["CN", "$(udid)"]]]}]}
            """, to: "values.json")
    }

    func remove() { try? FileManager.default.removeItem(at: dir.url) }

    /// `render --delivery DELIVERY --out out` over the fixture's inputs (in process).
    @discardableResult
    func render(_ delivery: String = "ddm", _ extra: [String] = []) -> (status: Int32, stdout: String, stderr: String) {
        // DDM with credentials (secret documents); MDM commands carry no credentials.
        let values = delivery == "ddm" ? dir.path("values.json") : Paths.fixture("demo/values.json")
        var arguments = ["render", "--spec", Paths.fixture("demo/spec.xml"), "--values", values,
                         "--inventory", inventory, "--directory", directory, "--delivery", delivery, "--out", out, "--quiet"]
        if delivery == "ddm" {
            arguments += ["--asset-base-url", Self.base, "--secret-asset-base-url", Self.secretBase, "--secret", "pw=file:" + dir.path("passwords.csv")]
        }
        return AppConfigCommand.capturing(arguments + extra)
    }

    func options(_ server: StandInServer, _ kind: ServerKind) -> PushOptions {
        var o = PushOptions(source: out, server: kind, url: server.baseURL, apiKey: Self.apiKey)
        o.firstRetryDelay = 0.01
        o.retries = 8
        return o
    }

    func push(_ server: StandInServer, _ kind: ServerKind, _ change: (inout PushOptions) -> Void = { _ in }) async -> PushResult {
        var o = options(server, kind)
        change(&o)
        return await PushJob(o).run()
    }

    /// The published generation's file.
    func file(_ name: String) throws -> [UInt8] { Array(try Data(contentsOf: URL(fileURLWithPath: out + "/" + name))) }

    /// `index.jsonl` as device -> (declarations, removed).
    func index() throws -> [String: (ids: [String], removed: Bool, path: String?)] {
        var out: [String: ([String], Bool, String?)] = [:]
        for line in try file("index.jsonl").split(separator: UInt8(ascii: "\n")) {
            let o = try #require(try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any])
            out[o["device"] as! String] = ((o["declarations"] as? [String]) ?? [], (o["removed"] as? Bool) ?? false, o["path"] as? String)
        }
        return out
    }

    /// `declarations.jsonl` as Identifier -> (Type, Payload as sorted JSON).
    func declarations() throws -> [String: (type: String, payload: String)] {
        var out: [String: (String, String)] = [:]
        for line in try file("declarations.jsonl").split(separator: UInt8(ascii: "\n")) {
            let o = try #require(try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any])
            let payload = try JSONSerialization.data(withJSONObject: o["Payload"]!, options: [.sortedKeys])
            out[o["Identifier"] as! String] = (o["Type"] as! String, String(decoding: payload, as: UTF8.self))
        }
        return out
    }

    /// The server holds exactly the output: every declaration (and no other), every live device's
    /// set as its index line says (given to its enrollment), every device told to sync by a command.
    func expectServerHoldsOutput(_ state: StandInServer.State, notified: Bool = true, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let declarations = try declarations()
        let index = try index()
        let named = Set(index.values.flatMap(\.ids))
        let held = Set(state.declarations.keys)
        #expect(held.subtracting(named).isEmpty && named.subtracting(held).isEmpty,
                "declarations held \(held.count), named \(named.count); not named: \(held.subtracting(named).sorted().prefix(3)), not held: \(named.subtracting(held).sorted().prefix(3))", sourceLocation: sourceLocation)
        for id in named {
            #expect(state.declarations[id]?.payload == declarations[id]?.payload, "\(id)", sourceLocation: sourceLocation)
            #expect(state.declarations[id]?.type == declarations[id]?.type, sourceLocation: sourceLocation)
        }
        for (device, line) in index {
            let sets = state.enrollmentSets[device] ?? []
            if line.removed {
                #expect(sets.isEmpty, "removed \(device) still has \(sets)", sourceLocation: sourceLocation)
                continue
            }
            #expect(sets.count == 1, "\(device): sets \(sets)", sourceLocation: sourceLocation)
            guard let set = sets.first else { continue }
            #expect(state.sets[set] == Set(line.ids), "\(device): its set differs from its index line", sourceLocation: sourceLocation)
            if notified { #expect((state.syncCommands[device] ?? 0) >= 1, "\(device) was never told to sync", sourceLocation: sourceLocation) }
        }
        #expect(state.notifiedWithoutCommand.isEmpty, "notified with an empty command: \(state.notifiedWithoutCommand.count)", sourceLocation: sourceLocation)
        #expect(state.writesWithoutNoNotify == 0, sourceLocation: sourceLocation)
    }
}

extension StandInServer {
    /// A started stand-in.
    static func started(_ flavor: Flavor) throws -> StandInServer {
        let s = StandInServer(flavor: flavor, apiKey: PushFixture.apiKey)
        try s.start()
        return s
    }
}
