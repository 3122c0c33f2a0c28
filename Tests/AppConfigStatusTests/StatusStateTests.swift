import AppConfigCore
@testable import AppConfigStatus
import Foundation
import TestSupport
import Testing

/// The state `appconfig status` keeps between runs: version 2 (binary) read back as written,
/// version 1 (JSON lines, the first releases') still read, and a file cut short or not ours named.
@Suite("Status: the state kept between runs")
struct StatusStateTests {
    /// A fold using every field: apps with and without each optional, extension states, commands,
    /// reasons, errors, an enrollment with text outside ASCII, a device with nothing reported.
    static func richFold() -> StatusFold {
        var fold = StatusFold()
        var a = DeviceReport()
        a.declarations["appconfig.config.1"] = .init(token: "4a1c0e5f", active: true, valid: "valid", reasons: [])
        a.declarations["appconfig.asset.1"] = .init(token: "", active: false, valid: "invalid",
                                                    reasons: ["Error.AssetCannotBeDownloaded (The asset cannot be downloaded.)", "second"])
        a.apps["com.northwind.fieldservice"] = .init(state: "managed", declaration: "appconfig.config.1", configState: "invalid",
                                                      extensionStates: ["com.northwind.fieldservice.widget": "valid", "com.northwind.x": "invalid"],
                                                      reasons: ["Error.ConfigurationIsInvalid"])
        a.apps["com.example.bare"] = .init(state: nil, declaration: nil, configState: nil, extensionStates: [:], reasons: [])
        a.errors = ["app.managed.list: Error.NotSupported"]
        a.reports = 300
        a.received = "2026-11-28T07:00:00Z"
        fold[enrollment: "00008120-001A2B3C4D5E6F70"] = a
        var b = DeviceReport()
        b.commands["6F0D5E3A-1B2C-4D5E-8F90-A1B2C3D4E5F6"] = .init(status: "Error", errorChain: ["MCMDMErrorDomain 12021: The app is not installed."])
        b.commands["0A"] = .init(status: "Acknowledged", errorChain: [])
        b.reports = 2
        fold[enrollment: "Zoë's iPad\t\"quoted\""] = b
        fold[enrollment: "never"] = DeviceReport()
        for i in 0..<5000 { fold[enrollment: "bulk-\(i)"] = a }
        return fold
    }

    @Test("version 2 reads back every field as written; the same fold writes the same bytes")
    func roundTrip() throws {
        let dir = try TemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir.url) }
        let fold = Self.richFold()
        let path = dir.path("s.status-state")
        try StatusState.write(fold, to: path)
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(bytes.starts(with: Array("appconfig-status-state 2\n".utf8)))
        let read = try StatusState.read(path)
        #expect(read.devices == fold.devices)
        try StatusState.write(read, to: dir.path("again"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: dir.path("again"))) == Data(bytes))
    }

    @Test("a version 1 state (JSON lines) is still read")
    func version1() throws {
        let dir = try TemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir.url) }
        let path = dir.path("v1.status-state")
        let text = #"""
        {"state":"appconfig-status-state 1"}
        {"enrollment":"E1","report":{"apps":{"com.northwind.fieldservice":{"extensionStates":{"w":"invalid"},"reasons":["R"],"state":"managed","declaration":"appconfig.config.1","configState":"valid"}},"commands":{"U1":{"errorChain":["D 1: no"],"status":"Error"}},"declarations":{"appconfig.config.1":{"active":true,"reasons":[],"token":"t1","valid":"valid"}},"errors":["e"],"received":"2026-11-28T07:00:00Z","reports":3}}

        """#
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        let fold = try StatusState.read(path)
        var e1 = DeviceReport()
        e1.apps["com.northwind.fieldservice"] = .init(state: "managed", declaration: "appconfig.config.1", configState: "valid",
                                                       extensionStates: ["w": "invalid"], reasons: ["R"])
        e1.commands["U1"] = .init(status: "Error", errorChain: ["D 1: no"])
        e1.declarations["appconfig.config.1"] = .init(token: "t1", active: true, valid: "valid", reasons: [])
        e1.errors = ["e"]
        e1.received = "2026-11-28T07:00:00Z"
        e1.reports = 3
        #expect(fold.devices == ["E1": e1])
    }

    /// Damage done to a version 2 file, and the error it must give.
    static let damage: [(name: String, change: @Sendable ([UInt8]) -> [UInt8], message: String)] = [
        ("cut inside a record", { Array($0.prefix(40)) }, "the state file is cut short (a record of"),
        ("cut before the end mark", { Array($0.dropLast(12)) }, "the state file is cut short (no end mark)"),
        ("bytes after the end mark", { $0 + [0] }, "bytes after the end mark"),
        ("a record's string longer than the record", { b in
            var b = b
            b[25 + 4] = 0x7F
            return b
        }, "is not one appconfig status wrote"),
        ("not ours", { _ in Array("hello\n".utf8) }, "is not a state file appconfig status wrote"),
    ]

    @Test("a state file cut short, damaged or not ours: a clear error naming the file and the byte", arguments: damage.indices)
    func damaged(_ i: Int) throws {
        let dir = try TemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir.url) }
        let path = dir.path("s.status-state")
        var fold = StatusFold()
        var r = DeviceReport()
        r.declarations["appconfig.config.1"] = .init(token: "t", active: true, valid: "valid", reasons: [])
        fold[enrollment: "E1"] = r
        fold[enrollment: "E2"] = r
        try StatusState.write(fold, to: path)
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        try Data(Self.damage[i].change(bytes)).write(to: URL(fileURLWithPath: path))
        let error = #expect(throws: Problem.self) { try StatusState.read(path) }
        #expect(error?.code.rawValue == StatusCode.state.rawValue, "\(Self.damage[i].name)")
        #expect(error?.message.contains(Self.damage[i].message) == true, "\(Self.damage[i].name): \(error?.message ?? "")")
        #expect(error?.message.contains(path) == true || error?.location.file == path)
    }
}
