import AppConfigCompiler
import CompileSupport
import AppConfigCore
@testable import AppConfigRender
import AppConfigSpec
import LibPlist
import Testing

/// The binary emitter's precomputed layout for the common device (every key present, every
/// dynamic string its own object) writes the bytes the general path writes, and devices that are
/// not common (a key omitted, a string equal to a constant or to another string) go the general way.
@Suite("Binary: the precomputed layout against the general path")
struct FixedLayoutTests {
    static let spec = specXML("""
        <string keyName="email"><defaultValue><userVariable value="emailAddress"/></defaultValue></string>
        <string keyName="server"><defaultValue><value>https://mdm.example.com/$(cn)</value></defaultValue></string>
        <string keyName="color"><defaultValue><userVariable value="ou"/></defaultValue><constraint nullable="true"/></string>
        <string keyName="fixed"><defaultValue><value>blue</value></defaultValue></string>
        <stringArray keyName="ids"><defaultValue><deviceVariable value="serialNumber"/><value>fixed</value><userVariable value="cn"/></defaultValue></stringArray>
        <integer keyName="port"><defaultValue><value>443</value></defaultValue></integer>
        <boolean keyName="on"><defaultValue><value>true</value></defaultValue></boolean>
        """)

    static func device(_ email: String, cn: String, ou: String?, serial: String) -> [Variable: String] {
        var d: [Variable: String] = [.user(.emailAddress): email, .user(.cn): cn, .device(.serialNumber): serial]
        d[.user(.ou)] = ou
        return d
    }

    /// (what it is, the device, whether it is common)
    static let devices: [(String, [Variable: String], Bool)] = [
        ("common", device("a@x.example", cn: "Ann", ou: "Sales", serial: "S1"), true),
        ("common again", device("bob@x.example", cn: "Bob", ou: "R&D", serial: "S2"), true),
        ("non-ASCII strings (UTF-16)", device("zoë@x.example", cn: "Łukasz 東京", ou: "Ventes", serial: "S3"), true),
        ("a string over 255 bytes: wider offsets", device(String(repeating: "a", count: 300) + "@x", cn: "C", ou: "O", serial: "S4"), true),
        ("a string over 64 KiB: wider offsets still", device("e@x", cn: String(repeating: "c", count: 70_000), ou: "O", serial: "S5"), true),
        ("a key omitted", device("d@x.example", cn: "Dee", ou: nil, serial: "S6"), false),
        ("a string equal to a constant", device("e@x.example", cn: "Eve", ou: "blue", serial: "S7"), false),
        ("a string equal to another array item", device("f@x.example", cn: "Fay", ou: "O", serial: "fixed"), false),
        ("two strings equal", device("g@x.example", cn: "Gus", ou: "Gus", serial: "S8"), false),
        ("common after uncommon ones", device("h@x.example", cn: "Hal", ou: "Ops", serial: "S9"), true),
    ]

    @Test("each device: the bytes of the general path, the common ones from the layout")
    func sameBytes() throws {
        let image = ProgramImage(try compileProgram(Self.spec))
        let fast = Renderer(image: image, format: .binary)
        let general = Renderer(image: image, format: .binary)
        general.usesFixedLayout = false
        for (name, device, common) in Self.devices {
            let before = fast.fixedLayoutDevices
            let bytes = try fast.renderCopy(device)
            #expect(bytes == (try general.renderCopy(device)), "\(name): the layout's bytes differ from the general path's")
            // The first device makes the layout (the general path writes it): the later ones use it.
            if name != "common" { #expect((fast.fixedLayoutDevices > before) == common, "\(name): layout used \(fast.fixedLayoutDevices > before)") }
            _ = try LibPlist.decode(bytes)
        }
        #expect(general.fixedLayoutDevices == 0)
    }

    @Test("a layout made from a device with non-ASCII strings serves ASCII ones, and the other way round")
    func layoutFromEitherKind() throws {
        let image = ProgramImage(try compileProgram(Self.spec))
        for first in [Self.devices[2].1, Self.devices[0].1] {
            let fast = Renderer(image: image, format: .binary)
            let general = Renderer(image: image, format: .binary)
            general.usesFixedLayout = false
            _ = try fast.renderCopy(first)
            for (name, device, _) in Self.devices {
                #expect(try fast.renderCopy(device) == (try general.renderCopy(device)), "\(name)")
            }
            #expect(fast.fixedLayoutDevices == Self.devices.filter(\.2).count)  // the first device made the layout; every common one used it
        }
    }
}
