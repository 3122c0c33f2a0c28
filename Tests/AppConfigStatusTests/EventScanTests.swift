@testable import AppConfigStatus
import AppConfigCore
import AppConfigSpec
import Foundation
import TestSupport
import Testing

/// The events' lean read against the values' reader: the same answers on every event it reads,
/// and no answer (the values' reader's turn) on anything it cannot.
@Suite("Status: the events' fast path")
struct EventScanTests {
    /// An event's fields as `StatusFold.parse` looks them up: `topic` at the top, `id` in `event`.
    static func scan(_ text: String) -> [String?]? {
        guard let j = LeanJSON(Array(text.utf8)) else { return nil }
        return [j.string(j.member(0, "topic")), j.string(j.member(j.member(0, "event"), "id"))]
    }

    @Test("the fields asked for, at their place only", arguments: [
        (#"{"topic":"t","event":{"id":"a"}}"#, ["t", "a"]),
        (#" { "event" : { "x" : [1, -2.5e3, true, null, {"id":"no"}], "id" : "a" } , "topic" : "t" } "#, ["t", "a"]),
        // A key deeper down, or in another member, is not the field.
        (#"{"event":{"url_params":{"topic":"spoof","id":"spoof"}},"other":{"id":"x"},"topic":"t"}"#, ["t", nil]),
        // The first of a key given twice.
        (#"{"topic":"t","topic":"u"}"#, ["t", nil]),
        // An escape elsewhere is fine, and one in the field is undone.
        (#"{"note":"a \"quoted\" word","topic":"t"}"#, ["t", nil]),
        (#"{"topic":"t\u0041"}"#, ["tA", nil]),
    ] as [(String, [String?])])
    func reads(_ text: String, _ expected: [String?]) {
        #expect(Self.scan(text) == expected)
    }

    @Test("nothing for text the full reader must judge", arguments: [
        #"{"topic":"t""#, #"{"topic" "t"}"#, #"{"topic":"t",}"#, #"{"topic":"t"} x"#, #"[1,2"#, "", #"{"a":tru}"#,
        "{\"a\":\"line\nbreak\"}",
    ])
    func refuses(_ text: String) {
        #expect(Self.scan(text) == nil)
    }

    @Test("the flat check-in plist: its strings and data; nested containers, entities and binary plists go to libplist")
    func flatPlist() throws {
        let plist = try StatusFixture.fill("checkin-status.plist", ["REPORT_BASE64": "e30=", "ENROLLMENT": "E-1"])
        let fields = try #require(FlatPlistScan.fields(Array(plist.utf8)))
        #expect(fields["Endpoint"].map { String(decoding: $0.text, as: UTF8.self) } == "status" && fields["Endpoint"]?.data == false)
        #expect(fields["Data"].map { String(decoding: $0.text, as: UTF8.self) } == "e30=" && fields["Data"]?.data == true)
        #expect(FlatPlistScan.fields(Array(plist.replacingOccurrences(of: "<string>status</string>", with: "<dict/>").utf8)) == nil)
        #expect(FlatPlistScan.fields(Array(plist.replacingOccurrences(of: "status", with: "st&#97;tus").utf8)) == nil)
        #expect(FlatPlistScan.fields(Array("bplist00".utf8) + [0, 1, 2]) == nil)
    }

    @Test("base64 by hand: Foundation's bytes, a plist's tabs and line breaks skipped; not base64 refused", arguments: [
        "", "e30=", "QUJD", "QUI=", "QQ==", "\n\tZXlK\n\taGFY\n\tb3Zk\n", "Sm/DqyDDhXNl", "+/+/",
    ])
    func base64(text: String) throws {
        let foundation = try #require(Data(base64Encoded: text, options: .ignoreUnknownCharacters))
        #expect(Base64.decode(Array(text.utf8), skippingTabs: true) == [UInt8](foundation))
        #expect(Base64.decode(Array((text + "*").utf8), skippingTabs: true) == nil)
        #expect(Base64.decode(Array(text.utf8)) == (text.contains("\t") ? nil : [UInt8](foundation)))
    }

    @Test("base64 32 letters at a time (AVX2 where the CPU has it): Foundation's bytes at every length, white space and a wrong byte at every place of a block")
    func base64Blocks() throws {
        var generator = SystemRandomNumberGenerator()
        for length in 0..<160 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let text = Data(bytes).base64EncodedString()
            #expect(Base64.decode(Array(text.utf8)) == bytes, "\(length)")
            // Read from a place inside a larger buffer, as an event's payload is.
            #expect(Base64.decode(Array(("xx" + text).utf8).dropFirst(2)) == bytes, "\(length) in a slice")
            guard text.count >= 8 else { continue }
            let letters = Array(text.utf8)
            for place in stride(from: 0, to: min(letters.count, 70), by: 3) {
                var spaced = letters
                spaced.insert(0x0A, at: place)
                #expect(Base64.decode(spaced) == bytes, "\(length): a line break at \(place)")
                var wrong = letters
                wrong[place] = UInt8(ascii: "*")
                #expect(Base64.decode(wrong) == nil, "\(length): a wrong byte at \(place)")
                var high = letters
                high[place] = 0xC3
                #expect(Base64.decode(high) == nil, "\(length): a byte above 0x7F at \(place)")
            }
        }
    }

    @Test("every fixture event: the fast path and the full reader fold to the same device")
    func sameAsFullReader() throws {
        let report = try String(contentsOfFile: Paths.fixture("status/reports/app-not-managed.json"), encoding: .utf8)
        let lines = [
            try StatusFixture.statusEvent(report, enrollment: "E-1"),
            try StatusFixture.resultEvent("Error", uuid: "U-1", enrollment: "E-1"),
            try StatusFixture.resultEvent("NotNow", uuid: "U-2", enrollment: "E-1"),
        ]
        for line in lines {
            var fast = StatusFold(), full = StatusFold()
            fast.apply(StatusFold.parse(Array(line.utf8), at: Location(file: "e", line: 1)))
            full.apply(StatusFold.parseFully(Array(line.utf8), at: Location(file: "e", line: 1)))
            #expect(fast.devices == full.devices && !fast.devices.isEmpty && fast.problems.isEmpty)
        }
    }
}

/// The lean JSON reader against the values' reader: the same strings, numbers and structure on
/// what both take, and no answer where the values' reader finds a fault.
@Suite("Status: the lean JSON reader")
struct LeanJSONTests {
    @Test("members, items, strings (escapes and surrogate pairs undone), numbers, literals")
    func reads() throws {
        let text = #" {"a":"x\"y\\z\u00e9\ud83d\ude00","b":[1,-2,3.5e2,true,false,null,{"c":"d"}],"e":{},"f":[],"a":"second"} "#
        let j = try #require(LeanJSON(Array(text.utf8)))
        #expect(j.string(j.member(0, "a")) == "x\"y\\zé😀")
        let items = j.items(j.member(0, "b"))
        #expect(items.count == 7 && j.integer(items[0]) == 1 && j.integer(items[1]) == -2 && j.integer(items[2]) == nil)
        #expect(j.bool(items[3]) == true && j.bool(items[4]) == false && j.bool(items[5]) == nil)
        #expect(j.string(j.member(items[6], "c")) == "d")
        // UTF-8 without a copy when unescaped, unescaped when not.
        #expect(j.utf8(j.member(items[6], "c")).map { Array($0) } == Array("d".utf8))
        #expect(j.utf8(j.member(0, "a")).map { Array($0) } == Array("x\"y\\zé😀".utf8))
        #expect(j.utf8(j.member(0, "b")) == nil)
        #expect(j.isObject(j.member(0, "e")) && j.members(j.member(0, "e")!).isEmpty && j.isArray(j.member(0, "f")))
        #expect(j.members(0).count == 5 && j.member(0, "zz") == nil)
    }

    @Test("strings scanned sixteen bytes at a time: a quote, an escape or a control character at every place of a block", arguments: 0..<34)
    func wordScan(at place: Int) throws {
        let pad = String(repeating: "é", count: place / 2) + String(repeating: "a", count: place % 2)
        // Read where it lies: a slice of a larger text, as the generation's lines are.
        let escaped = #"{"k":""# + pad + #"\"\\x"# + pad + #"","n":1}"#
        let text = Array(("[0]\n" + escaped).utf8)
        let j = try #require(LeanJSON(text[4...]))
        #expect(j.string(j.member(0, "k")) == pad + "\"\\x" + pad && j.integer(j.member(0, "n")) == 1)
        let plain = #"{"k":""# + pad + #"","n":2}"#
        let p = try #require(LeanJSON(Array(plain.utf8)))
        #expect(p.string(p.member(0, "k")) == pad && p.utf8(p.member(0, "k")).map { Array($0) } == Array(pad.utf8))
        // A raw control character is refused wherever it falls, as the values' reader refuses it.
        #expect(LeanJSON(Array((#"{"k":""# + pad + "\u{01}" + pad + #""}"#).utf8)) == nil)
    }

    @Test("refused where the values' reader finds a fault", arguments: [
        #"{"a":1,}"#, #"{"a" 1}"#, #"[1 2]"#, #"{"a":"b"} x"#, "{\"a\":\"tab\there\"}", #"{"a":tru}"#, #"["#, "",
    ])
    func refuses(_ text: String) {
        #expect(LeanJSON(Array(text.utf8)) == nil)
        let error = #expect(throws: Problem.self) { try JSONReader.document(Array(text.utf8), file: "t") }
        #expect(error?.code.rawValue == "values.syntax")
    }
}
