@testable import AppConfigCLI
import AppConfigCompiler
import AppConfigCore
import AppConfigPattern
import AppConfigRender
import AppConfigSpec
import TestSupport
import Testing

/// `appconfig bench`'s synthetic devices: shaped as devices report their identifiers, so that a
/// spec's checks pass and the rate measured is that of rendered devices.
@Suite("bench's synthetic devices")
struct BenchCommandTests {
    @Test("each device variable in its real shape, first and far devices", arguments: [
        (DeviceVariable.serialNumber, "^[A-Z0-9]{12}$"),
        (.udid, "^0000[0-9A-F]{4}-[0-9A-F]{16}$"),
        (.imei, "^[0-9]{15}$"),
        (.meid, "^[0-9A-F]{14}$"),
        (.iccid, "^89[0-9]{17}$"),
        (.imsi, "^[0-9]{15}$"),
        (.phoneNumber, #"^\+1[0-9]{10}$"#),
        (.wifiMacAddress, "^([0-9a-f]{2}:){5}[0-9a-f]{2}$"),
    ])
    func shapes(_ variable: DeviceVariable, _ shape: String) throws {
        let pattern = try Pattern(shape)
        for device in [0, 7, 99_999, 1_000_000] {
            let value = SyntheticFleet.value(of: .device(variable), device: device)
            #expect(pattern.search(value) == .match, "\(variable) of device \(device): \(value)")
        }
        #expect(SyntheticFleet.value(of: .device(variable), device: 1) != SyntheticFleet.value(of: .device(variable), device: 2))
    }

    @Test("the demo spec and values render every synthetic device (its serial pattern failed them all)")
    func demoRenders() throws {
        let program = try Compiler.compile(specFile: Paths.fixture("demo/spec.xml"), valuesFile: Paths.fixture("demo/values.json")).0
        let fleet = SyntheticFleet(slots: program.slots, count: 2000)
        for format in [OutputFormat.binary, .xml] {
            let renderer = Renderer(image: ProgramImage(program), format: format)
            var failures: [String] = []
            var slots = [SlotValue](repeating: .missing, count: fleet.slotCount)
            for i in 0..<fleet.count {
                do { _ = try fleet.withDevice(i, into: &slots) { v throws(Problem) in try renderer.render(v) } } catch { failures.append("device \(i): \(error)") }
            }
            #expect(failures.isEmpty, "\(format): \(failures.prefix(3))")
        }
    }
}
