import AppConfigCompiler
import AppConfigCore
import CompileSupport
@testable import AppConfigRender
import AppConfigSpec
import LibPlist
import Testing

/// The VM takes a run of constant keys at once (`ProgramImage.constantRunLast`): the runs are
/// the constant keys that follow one another, and a device's plist has every one of them, in
/// order, around keys that are resolved, omitted or failed.
@Suite("VM: runs of constant keys")
struct ConstantRunsTests {
    // Keys are laid out by name: k0 is the spec's version, then these in this order.
    static let spec = specXML("""
        <integer keyName="a-port"><defaultValue><value>443</value></defaultValue></integer>
        <integerArray keyName="b-list"><defaultValue><value>1</value><value>2</value></defaultValue></integerArray>
        <string keyName="c-email"><defaultValue><userVariable value="emailAddress"/></defaultValue></string>
        <boolean keyName="d-on"><defaultValue><value>true</value></defaultValue></boolean>
        <string keyName="e-region"><defaultValue><userVariable value="ou"/></defaultValue><constraint nullable="true"/></string>
        <stringArray keyName="f-none"/>
        <string keyName="g-fixed"><defaultValue><value>blue</value></defaultValue></string>
        """, version: 3)
    /// The values file gives `f-none` its value: an empty array, constant too.
    static func program() throws -> Program { try compileProgram(spec, values: #"{"f-none": []}"#) }

    @Test("each constant key's run ends at the last constant key after it with nothing between")
    func runs() throws {
        let image = ProgramImage(try Self.program())
        #expect(image.program.keys.map(\.name) == ["ManagedAppConfigurationVersion", "a-port", "b-list", "c-email", "d-on", "e-region", "f-none", "g-fixed"])
        #expect(Array(image.constantRunLast) == [2, 2, 2, -1, 4, -1, 7, 7])
    }

    /// (what it is, the device, the keys of its plist besides the constant ones)
    static let devices: [(String, [Variable: String], [String: PlistValue])] = [
        ("every key", [.user(.emailAddress): "a@x.example", .user(.ou): "Sales"],
         ["c-email": .string("a@x.example"), "e-region": .string("Sales")]),
        ("the key between two runs omitted", [.user(.emailAddress): "b@x.example"], ["c-email": .string("b@x.example")]),
    ]

    @Test("the plist holds every constant key around the resolved ones", arguments: [OutputFormat.binary, .xml])
    func plists(format: OutputFormat) throws {
        let renderer = Renderer(image: ProgramImage(try Self.program()), format: format)
        let constants: [String: PlistValue] = [
            "ManagedAppConfigurationVersion": .integer(3), "a-port": .integer(443), "b-list": .array([.integer(1), .integer(2)]),
            "d-on": .boolean(true), "f-none": .array([]), "g-fixed": .string("blue"),
        ]
        for (name, device, resolved) in Self.devices {
            let decoded = try LibPlist.decode(try renderer.renderCopy(device))
            #expect(decoded == plistDict(constants.merging(resolved) { $1 }), "\(name)")
        }
    }

    @Test("a device that fails between two runs fails with its key; the next device has every key again")
    func failureBetweenRuns() throws {
        let renderer = Renderer(image: ProgramImage(try Self.program()), format: .binary)
        let error = #expect(throws: Problem.self) { _ = try renderer.renderCopy([.user(.ou): "Sales"]) }
        #expect(error?.code.rawValue == DeviceCode.missingVariable.rawValue && error?.location.key == "c-email")
        let decoded = try LibPlist.decode(try renderer.renderCopy([.user(.emailAddress): "c@x.example", .user(.ou): "Ops"]))
        guard case .dictionary(let pairs) = decoded else { Issue.record("not a dictionary"); return }
        #expect(pairs.map(\.key) == ["ManagedAppConfigurationVersion", "a-port", "b-list", "c-email", "d-on", "e-region", "f-none", "g-fixed"])
    }
}
