import AppConfigCompiler
import AppConfigCore
import CompileSupport
@testable import AppConfigRender
import AppConfigSpec
import LibPlist
import Testing

/// Binary plists store equal strings once. A device's string is hashed and looked up among the
/// constant strings only when one has its length (`ProgramImage.mayBeConstantString`), and
/// compared with its other strings only when they have its length: the bytes must be those of the
/// general path with the layout turned off, and every object written once.
@Suite("Binary: equal strings found by length first")
struct StringDedupTests {
    static let long = String(repeating: "L", count: 5_000)
    static let longer = String(repeating: "L", count: 4_999) + "M"
    static let spec = specXML("""
        <string keyName="a"><defaultValue><userVariable value="cn"/></defaultValue></string>
        <string keyName="b"><defaultValue><userVariable value="ou"/></defaultValue></string>
        <string keyName="c"><defaultValue><value>abcde</value></defaultValue></string>
        <string keyName="d"><defaultValue><value>\(long)</value></defaultValue></string>
        """)

    @Test("the constants' lengths, those past 4095 in one bucket")
    func lengths() throws {
        let image = ProgramImage(try compileProgram(Self.spec))
        // The key names (1 byte, and the version key's), "abcde" and the long value.
        for n in [1, 5, "ManagedAppConfigurationVersion".utf8.count, 4_095, 5_000, 9_000] { #expect(image.mayBeConstantString(length: n), "\(n)") }
        for n in [0, 2, 4, 6, 4_094] { #expect(!image.mayBeConstantString(length: n), "\(n)") }
    }

    /// (what it is, cn, ou)
    static let devices: [(String, String, String)] = [
        ("the length of a constant, other bytes", "abcdf", "zzzzz"),
        ("equal to a constant", "abcde", "x"),
        ("equal to a key name", "d", "y"),
        ("equal to each other, no constant's length", "same!!", "same!!"),
        ("the same length, other bytes", "pair-1", "pair-2"),
        ("equal to the long constant", long, "q"),
        ("past 4095 bytes, not equal to the long constant", longer, longer),
    ]

    @Test("each device: the general path's bytes, decoded by libplist", arguments: devices)
    func sameBytes(name: String, cn: String, ou: String) throws {
        let image = ProgramImage(try compileProgram(Self.spec))
        let fast = Renderer(image: image, format: .binary)
        let general = Renderer(image: image, format: .binary)
        general.usesFixedLayout = false
        let device: [Variable: String] = [.user(.cn): cn, .user(.ou): ou]
        let bytes = try fast.renderCopy(device)
        #expect(bytes == (try general.renderCopy(device)))
        #expect(try LibPlist.decode(bytes) == plistDict([
            "ManagedAppConfigurationVersion": .integer(1), "a": .string(cn), "b": .string(ou), "c": .string("abcde"), "d": .string(Self.long),
        ]))
        // Each distinct string once (the five key names, "abcde", the long value, cn and ou unless
        // equal to one of them), then the version's integer and the dictionary.
        let strings = Set(["ManagedAppConfigurationVersion", "a", "b", "c", "d", "abcde", Self.long, cn, ou])
        #expect(Self.objectCount(bytes) == strings.count + 2, "\(name)")
    }

    /// The object count of a binary plist, from its trailer.
    static func objectCount(_ bytes: [UInt8]) -> Int {
        bytes[(bytes.count - 24)..<(bytes.count - 16)].reduce(0) { $0 << 8 | Int($1) }
    }
}
