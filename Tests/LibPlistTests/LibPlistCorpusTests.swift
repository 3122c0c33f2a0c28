import Foundation
import LibPlist
import TestSupport
import Testing

/// libplist as the engine reads admin values and checks its own outputs with it, on public
/// vectors: CPython's test document in its binary and XML forms (one value), with the values
/// Python's plistlib reads from it; the malformed vectors refused.
@Suite("libplist on the public plist vectors")
struct LibPlistCorpusTests {
    static func decode(_ relative: String) throws -> PlistValue {
        let path = try #require(Paths.corpusFile(relative))
        return try LibPlist.decode([UInt8](try Data(contentsOf: URL(fileURLWithPath: path))), prechecked: false)
    }

    static let hasCorpus = Paths.corpusFile("plists/cpython/apple_testdata.bplist").map { FileManager.default.fileExists(atPath: $0) } ?? false

    @Test("CPython's test document: its binary and XML forms one value, plistlib's values in it", .enabled(if: hasCorpus))
    func appleTestData() throws {
        let binary = try Self.decode("plists/cpython/apple_testdata.bplist")
        let xml = try Self.decode("plists/cpython/apple_testdata.xml.plist")
        #expect(binary == xml)
        // What plistlib.load gives for these keys (python3 -c 'import plistlib; ...').
        #expect(binary["aString"] == .string("Doodah"))
        #expect(binary["anInt"] == .integer(728))
        #expect(binary["aNegativeInt"] == .integer(-5))
        #expect(binary["aNegativeBigInt"] == .integer(-80_000_000_000))
        #expect(binary["aBigInt"] == .integer(9_223_372_036_854_775_764))
        #expect(binary["aFloat"] == .real(0.5))
        #expect(binary["Åbenraa"] == .string("That was a unicode key."))
        #expect(binary["aDict"]?["aUnicodeValue"] == .string("Mässig, Maß"))
        #expect(binary["aDict"]?["anotherString"] == .string("<hello & 'hi' there!>"))
        #expect(binary["someData"] == .data(Array("<binary gunk>".utf8)))
        #expect(binary["anEmptyList"] == .array([]))
    }

    @Test("malformed vectors are refused, never read as something", .enabled(if: hasCorpus),
          arguments: ["plists/rust-plist/xml_error.plist", "plists/rust-plist/binary_circular_array.plist", "plists/rust-plist/binary_zero_offset_size.plist"])
    func refused(_ relative: String) throws {
        #expect(throws: LibPlist.DecodeError.self) { try Self.decode(relative) }
    }
}
