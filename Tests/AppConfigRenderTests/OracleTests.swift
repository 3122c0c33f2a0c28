import AppConfigCompiler
import CompileSupport
import AppConfigRender
import AppConfigSpec
import LibPlist
import Testing

/// Outputs decoded by two decoders nobody here wrote (libplist in-process, Python's plistlib over a
/// batch of files), binary and XML, to exactly the expected values; bytes equal to plistlib.dumps.
@Suite("Rendering checked by libplist and plistlib")
struct OracleTests {
    static let awkward = "Zoë \"Z\" O'Brien & <Co> 😀👩‍👩‍👧"

    static func everyType() throws -> OracleCase {
        let spec = specXML("""
            <boolean keyName="flag"><defaultValue><value>true</value></defaultValue></boolean>
            <boolean keyName="off"><defaultValue><value>false</value></defaultValue></boolean>
            <date keyName="when"><defaultValue><value>2015-07-25T22:12:52.5+02:00</value></defaultValue></date>
            <date keyName="day"><defaultValue><value>2015-07-25</value></defaultValue></date>
            <float keyName="ratio"><defaultValue><value>0.1</value></defaultValue></float>
            <floatArray keyName="ratios"><defaultValue><value>1e16</value><value>1e15</value><value>-0.0</value><value>100</value><value>1e-5</value><value>0.0001</value><value>5e-324</value><value>1.7976931348623157e308</value></defaultValue></floatArray>
            <integer keyName="count"><defaultValue><value>-7</value></defaultValue></integer>
            <integerArray keyName="empty list"/>
            <string keyName="name"><defaultValue><userVariable value="displayName"/></defaultValue></string>
            <string keyName="literal"><defaultValue><value>a &amp; b &lt;c&gt; "d" 'e'</value></defaultValue></string>
            <string keyName="nothing"><defaultValue><value></value></defaultValue></string>
            <string keyName="Größe"><defaultValue><value>groß</value></defaultValue></string>
            <stringArray keyName="mixed"><defaultValue><value>x</value><userVariable value="emailAddress"/><deviceVariable value="serialNumber"/></defaultValue></stringArray>
            <string keyName="url"/>
            """, version: 42)
        let values = #"{"url": "https://$(ou).corp.example/$(serialNumber)?q=1&r=<2>&cost=$$5", "empty list": []}"#
        return OracleCase(
            name: "every-type", program: try compileProgram(spec, values: values),
            device: [.user(.displayName): awkward, .user(.emailAddress): "zoe@corp.example", .device(.serialNumber): "C02XYZ",
                     .user(.ou): "Engineering"],
            expected: plistDict([
                "ManagedAppConfigurationVersion": .integer(42), "flag": .boolean(true), "off": .boolean(false),
                "when": date("2015-07-25T20:12:52.5Z"), "day": date("2015-07-25T00:00:00Z"), "ratio": .real(0.1),
                "ratios": .array([1e16, 1e15, -0.0, 100, 1e-5, 0.0001, Double.leastNonzeroMagnitude, 1.7976931348623157e308].map(PlistValue.real)),
                "count": .integer(-7), "empty list": .array([]), "name": .string(awkward), "literal": .string("a & b <c> \"d\" 'e'"),
                "nothing": .string(""), "Größe": .string("groß"),
                "mixed": .array([.string("x"), .string("zoe@corp.example"), .string("C02XYZ")]),
                "url": .string("https://Engineering.corp.example/C02XYZ?q=1&r=<2>&cost=$5"),
            ]))
    }

    /// Equal strings are stored once in binary, whatever their origin: a resolved value equal to a
    /// key name, to a later constant, to an earlier constant, or to another resolved value.
    static func sharedStrings() throws -> OracleCase {
        let spec = specXML("""
            <string keyName="a"><defaultValue><userVariable value="cn"/></defaultValue></string>
            <string keyName="b"><defaultValue><value>zzz</value></defaultValue></string>
            <string keyName="c"><defaultValue><userVariable value="ou"/></defaultValue></string>
            <string keyName="d"><defaultValue><userVariable value="upn"/></defaultValue></string>
            <string keyName="e"><defaultValue><userVariable value="upn"/></defaultValue></string>
            <string keyName="f"><defaultValue><userVariable value="displayName"/></defaultValue></string>
            <string keyName="g"><defaultValue><value>shared é</value></defaultValue></string>
            <string keyName="light"><defaultValue><value>light</value></defaultValue></string>
            <integer keyName="one"><defaultValue><value>1</value></defaultValue></integer>
            <boolean keyName="yes"><defaultValue><value>true</value></defaultValue></boolean>
            """)
        return OracleCase(
            name: "shared-strings", program: try compileProgram(spec),
            device: [.user(.cn): "light", .user(.ou): "zzz", .user(.upn): "jdoe@corp.example", .user(.displayName): "shared é"],
            expected: plistDict([
                "ManagedAppConfigurationVersion": .integer(1), "a": .string("light"), "b": .string("zzz"), "c": .string("zzz"),
                "d": .string("jdoe@corp.example"), "e": .string("jdoe@corp.example"), "f": .string("shared é"),
                "g": .string("shared é"), "light": .string("light"), "one": .integer(1), "yes": .boolean(true),
            ]))
    }

    /// 300 keys: more than 255 objects, so references are two bytes wide.
    static func manyKeys() throws -> OracleCase {
        var body = ""
        var pairs: [String: PlistValue] = ["ManagedAppConfigurationVersion": .integer(1)]
        for i in 0..<300 {
            if i % 3 == 0 {
                body += "<string keyName=\"key\(i)\"><defaultValue><userVariable value=\"cn\"/></defaultValue></string>\n"
                pairs["key\(i)"] = .string("Jane Doe")
            } else {
                body += "<integer keyName=\"key\(i)\"><defaultValue><value>\(i * 1000)</value></defaultValue></integer>\n"
                pairs["key\(i)"] = .integer(Int64(i * 1000))
            }
        }
        return OracleCase(name: "300-keys", program: try compileProgram(specXML(body)), device: [.user(.cn): "Jane Doe"],
                          expected: plistDict(pairs))
    }

    /// A 70 KiB document: offsets past 64 KiB need four bytes.
    static func bigDocument() throws -> OracleCase {
        let spec = specXML("""
            <string keyName="big"><defaultValue><userVariable value="displayName"/></defaultValue></string>
            <string keyName="wide"><defaultValue><userVariable value="firstName"/></defaultValue></string>
            """)
        let big = String(repeating: "0123456789abcdef", count: 4_500)  // 72,000 bytes
        let wide = String(repeating: "é😀", count: 1_000)
        return OracleCase(name: "70KiB", program: try compileProgram(spec), device: [.user(.displayName): big, .user(.firstName): wide],
                          expected: plistDict(["ManagedAppConfigurationVersion": .integer(1), "big": .string(big), "wide": .string(wide)]))
    }

    /// Counts of 14, 15 and 16: the size marker switches to its extended form at 15.
    static func countEdges() throws -> OracleCase {
        func items(_ n: Int, _ f: (Int) -> String) -> String { (0..<n).map { "<value>\(f($0))</value>" }.joined() }
        let spec = specXML("""
            <stringArray keyName="s15"><defaultValue>\(items(15) { "s\($0)" })</defaultValue></stringArray>
            <integerArray keyName="i16"><defaultValue>\(items(16) { "\($0)" })</defaultValue></integerArray>
            <floatArray keyName="f14"><defaultValue>\(items(14) { "\($0).5" })</defaultValue></floatArray>
            <stringArray keyName="v16"><defaultValue>\(String(repeating: "<userVariable value=\"cn\"/>", count: 16))</defaultValue></stringArray>
            <string keyName="t14"><defaultValue><value>\(String(repeating: "a", count: 14))</value></defaultValue></string>
            <string keyName="t15"><defaultValue><userVariable value="ou"/></defaultValue></string>
            <string keyName="t16"><defaultValue><value>\(String(repeating: "c", count: 16))</value></defaultValue></string>
            <string keyName="u15"><defaultValue><userVariable value="displayName"/></defaultValue></string>
            """)
        return OracleCase(
            name: "count-edges", program: try compileProgram(spec),
            device: [.user(.cn): "v", .user(.ou): String(repeating: "b", count: 15), .user(.displayName): String(repeating: "ü", count: 15)],
            expected: plistDict([
                "ManagedAppConfigurationVersion": .integer(1),
                "s15": .array((0..<15).map { .string("s\($0)") }), "i16": .array((0..<16).map { .integer(Int64($0)) }),
                "f14": .array((0..<14).map { .real(Double($0) + 0.5) }), "v16": .array(Array(repeating: .string("v"), count: 16)),
                "t14": .string(String(repeating: "a", count: 14)), "t15": .string(String(repeating: "b", count: 15)),
                "t16": .string(String(repeating: "c", count: 16)), "u15": .string(String(repeating: "ü", count: 15)),
            ]))
    }

    /// Integers at every width boundary, and negatives (always eight bytes).
    static func integerWidths() throws -> OracleCase {
        let values: [Int64] = [0, 1, 255, 256, 65_535, 65_536, 4_294_967_295, 4_294_967_296, .max, -1, -256, .min]
        let spec = specXML("<integerArray keyName=\"widths\"><defaultValue>\(values.map { "<value>\($0)</value>" }.joined())</defaultValue></integerArray>",
                           version: 99_999)
        return OracleCase(name: "integer-widths", program: try compileProgram(spec), device: [:],
                          expected: plistDict(["ManagedAppConfigurationVersion": .integer(99_999), "widths": .array(values.map(PlistValue.integer))]))
    }

    /// Dates with offsets and fractional seconds, before and after 2001.
    static func dates() throws -> OracleCase {
        let texts = ["2015-07-25T22:12:52+00:00", "2015-07-25T21:19Z", "2015-07-25", "2024-02-29T23:59:59.999999-05:00",
                     "1969-12-31T23:59:59.250Z", "2000-12-31T23:59:59.5Z", "1950-06-15T08:30:00+05:30", "2060-01-01T00:00:00.123456Z"]
        var body = ""
        var pairs: [String: PlistValue] = ["ManagedAppConfigurationVersion": .integer(1)]
        for (i, t) in texts.enumerated() {
            body += "<date keyName=\"d\(i)\"><defaultValue><value>\(t)</value></defaultValue></date>\n"
            pairs["d\(i)"] = date(t)
        }
        return OracleCase(name: "dates", program: try compileProgram(specXML(body)), device: [:], expected: plistDict(pairs))
    }

    /// A carriage return: we write `&#13;` so that the XML decodes to the same string as the binary;
    /// plistlib writes a line feed (its bytes differ there on purpose; docs/checking.md says why).
    static func carriageReturn() throws -> OracleCase {
        let spec = specXML("<string keyName=\"note\"><defaultValue><userVariable value=\"displayName\"/></defaultValue></string>")
        return OracleCase(name: "carriage-return", program: try compileProgram(spec), device: [.user(.displayName): "line 1\r\nline 2\rend\t!"],
                          expected: plistDict(["ManagedAppConfigurationVersion": .integer(1), "note": .string("line 1\r\nline 2\rend\t!")]),
                          xmlBytesEqualPlistlib: false)
    }

    /// Template filters, each applied by the VM in the device's buffer; the expected strings are
    /// written out by hand (the percent-encoding byte by byte from the UTF-8).
    static func filters() throws -> OracleCase {
        let keys = ["lower", "upper", "url", "trim", "replace", "grow", "fallback", "emptyFallback", "chain", "plain",
                    "partialUPN", "last4", "substr", "pieces", "beyond"]
        let spec = specXML(keys.map { "<string keyName=\"\($0)\"/>" }.joined(separator: "\n"))
        let values = #"""
            {"lower": "$(ou|lower).corp", "upper": "$(displayName|upper)", "url": "https://x/$(cn|urlencode)",
             "trim": "[$(firstName|trim)]", "replace": "$(lastName|replace: :_|replace:__:_)", "grow": "$(sAMAccountName|replace:a:<&>)",
             "fallback": "$(locale|default:en-US)", "emptyFallback": "$(upn|upper|default:n/a)", "chain": "$(ou|trim|replace: :-|lower|urlencode)",
             "plain": "$(ou)", "partialUPN": "$(emailAddress|split:@:0)", "last4": "$(serialNumber|last:4)-$(udid|last:40)",
             "substr": "$(displayName|substr:2:3)|$(displayName|substr:-5)|$(displayName|substr:-50:2)|$(displayName|substr:99)",
             "pieces": "$(ou|trim|split: :-1)/$(lastName|split:  :1)/$(cn|split:&:1|trim)", "beyond": "[$(lastName|split: :9)]"}
            """#
        return OracleCase(
            name: "filters", program: try compileProgram(spec, values: values),
            device: [.user(.ou): "  Sales EMEA ", .user(.displayName): "Zoë Ødegaard", .user(.cn): awkward,
                     .user(.firstName): " \t Ann \n", .user(.lastName): "Van  der Berg", .user(.sAMAccountName): "banana", .user(.upn): "",
                     .user(.emailAddress): "zoë.ødegaard@corp.example", .device(.serialNumber): "F17XK2ABCD12", .device(.udid): "00008030-001A"],
            expected: plistDict([
                "ManagedAppConfigurationVersion": .integer(1),
                "lower": .string("  sales emea .corp"), "upper": .string("ZOË ØDEGAARD"),
                "url": .string("https://x/Zo%C3%AB%20%22Z%22%20O%27Brien%20%26%20%3CCo%3E%20%F0%9F%98%80%F0%9F%91%A9%E2%80%8D%F0%9F%91%A9%E2%80%8D%F0%9F%91%A7"),
                "trim": .string("[Ann]"), "replace": .string("Van_der_Berg"), "grow": .string("b<&>n<&>n<&>"),
                "fallback": .string("en-US"), "emptyFallback": .string("N/A"), "chain": .string("sales-emea"), "plain": .string("  Sales EMEA "),
                // Characters are Unicode scalars: "ë" and "Ø" are one each.
                "partialUPN": .string("zoë.ødegaard"), "last4": .string("CD12-00008030-001A"),
                "substr": .string("ë Ø|gaard|Zo|"), "pieces": .string("EMEA/der Berg/<Co> 😀👩‍👩‍👧"), "beyond": .string("[]"),
            ]))
    }

    static let cases: [(String, @Sendable () throws -> OracleCase)] = [
        ("every type", everyType), ("shared strings", sharedStrings), ("300 keys", manyKeys), ("70 KiB", bigDocument),
        ("count edges", countEdges), ("integer widths", integerWidths), ("dates", dates), ("carriage return", carriageReturn),
        ("filters", filters),
    ]

    @Test("both formats, both decoders, plistlib's bytes", arguments: cases.map(\.0))
    func oracles(_ name: String) throws {
        let make = try #require(Self.cases.first { $0.0 == name }?.1)
        try checkWithOracles([make()])
    }

    @Test("the binary layout behind the cases: 2-byte references past 255 objects, 4-byte offsets past 64 KiB")
    func widths() throws {
        func trailer(_ c: OracleCase) throws -> (offsetSize: UInt8, refSize: UInt8, objects: UInt64) {
            let bytes = try Renderer(image: ProgramImage(c.program), format: .binary).renderCopy(c.device)
            let t = bytes.suffix(32)
            let objects = t.dropFirst(8).prefix(8).reduce(0) { $0 << 8 | UInt64($1) }
            return (t[t.startIndex + 6], t[t.startIndex + 7], objects)
        }
        let many = try trailer(Self.manyKeys())
        #expect(many.refSize == 2)
        #expect(many.objects > 255)
        let big = try trailer(Self.bigDocument())
        #expect(big.offsetSize == 4)
        #expect(big.refSize == 1)
        // Shared strings: root + 11 keys + the values not equal to a key (1, zzz, upn, "shared é", true) = 17,
        // which is what plistlib writes for the same dictionary.
        #expect(try trailer(Self.sharedStrings()).objects == 17)
    }
}
