import AppConfigCore
@testable import AppConfigSpec
import Testing

/// The reader refuses hostile input before anything is expanded, with the exact place.
@Suite("XML reader: hostile input and positions")
struct XMLReaderTests {
    struct Bad: CustomTestStringConvertible, Sendable {
        var name: String
        var bytes: [UInt8]
        var code: DiagnosticCode
        var line: Int
        var column: Int
        var testDescription: String { name }
    }

    static let billionLaughs = """
        <?xml version="1.0"?>
        <!DOCTYPE lolz [
          <!ENTITY lol "lol">
          <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
        ]>
        <managedAppConfiguration>&lol2;</managedAppConfiguration>
        """

    static let externalEntity = """
        <?xml version="1.0"?>
        <!DOCTYPE m SYSTEM "file:///etc/passwd">
        <managedAppConfiguration/>
        """

    static let cases: [Bad] = [
        Bad(name: "billion laughs", bytes: Array(billionLaughs.utf8), code: .xmlDTD, line: 2, column: 1),
        Bad(name: "external entity", bytes: Array(externalEntity.utf8), code: .xmlDTD, line: 2, column: 1),
        Bad(name: "invalid UTF-8 after a non-ASCII column", bytes: Array("<a>\n  é\u{1F600}".utf8) + [0xFF] + Array("</a>".utf8),
            code: .xmlEncoding, line: 2, column: 5),
        Bad(name: "overlong UTF-8", bytes: Array("<a>".utf8) + [0xC0, 0xAF] + Array("</a>".utf8), code: .xmlEncoding, line: 1, column: 4),
        Bad(name: "UTF-8 surrogate", bytes: Array("<a>".utf8) + [0xED, 0xA0, 0x80] + Array("</a>".utf8), code: .xmlEncoding, line: 1, column: 4),
        Bad(name: "truncated UTF-8 at the end", bytes: Array("<a></a>".utf8) + [0xE2, 0x82], code: .xmlEncoding, line: 1, column: 8),
        Bad(name: "UTF-16 byte order mark", bytes: [0xFF, 0xFE, 0x3C, 0x00], code: .xmlEncoding, line: 1, column: 1),
        Bad(name: "Latin-1 declaration", bytes: Array("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><a/>".utf8), code: .xmlEncoding, line: 1, column: 1),
        Bad(name: "control character", bytes: Array("<a>\n\u{01}</a>".utf8), code: .xmlSyntax, line: 2, column: 1),
        Bad(name: "control character reference", bytes: Array("<a>&#1;</a>".utf8), code: .xmlEntity, line: 1, column: 4),
        Bad(name: "undeclared entity", bytes: Array("<a>\n x &nbsp;</a>".utf8), code: .xmlEntity, line: 2, column: 4),
        Bad(name: "mismatched end tag", bytes: Array("<a>\n<b></c></a>".utf8), code: .xmlSyntax, line: 2, column: 4),
        Bad(name: "unclosed root", bytes: Array("<a><b/>".utf8), code: .xmlSyntax, line: 1, column: 8),
        Bad(name: "duplicate attribute", bytes: Array("<a x=\"1\" x=\"2\"/>".utf8), code: .xmlSyntax, line: 1, column: 10),
        Bad(name: "unquoted attribute", bytes: Array("<a x=1/>".utf8), code: .xmlSyntax, line: 1, column: 6),
        Bad(name: "two roots", bytes: Array("<a/>\n<b/>".utf8), code: .xmlSyntax, line: 2, column: 1),
        Bad(name: "empty file", bytes: [], code: .xmlSyntax, line: 1, column: 1),
        Bad(name: "too deep", bytes: Array((String(repeating: "<a>", count: 70) + String(repeating: "</a>", count: 70)).utf8),
            code: .xmlLimit, line: 1, column: 193),
    ]

    @Test(arguments: cases)
    func refused(_ bad: Bad) {
        let result = SpecParser.parse(bad.bytes, file: "h.xml")
        #expect(result.spec == nil)
        #expect(result.diagnostics.count == 1)
        let d = result.diagnostics.first
        #expect(d?.code.as(DiagnosticCode.self) == bad.code, "\(result.diagnostics)")
        #expect(d?.location == Location(file: "h.xml", line: bad.line, column: bad.column))
    }

    @Test func sizeLimit() {
        var options = SpecOptions()
        options.limits.maxBytes = 100
        let result = SpecParser.parse(Array(repeating: UInt8(ascii: " "), count: 101), file: "big.xml", options: options)
        #expect(result.diagnostics.map { $0.code.as(DiagnosticCode.self) } == [.xmlLimit])
    }

    @Test("comments, CDATA, references, CRLF and a BOM read as XML says")
    func wellFormedContent() throws {
        let text = "\u{FEFF}<?xml version=\"1.0\" encoding=\"utf-8\"?>\r\n<!-- c -->\r\n<a x='1&amp;&#x32;\t3'>a&lt;<![CDATA[<b>&amp;]]>\r\n<?pi x?><b/>é</a>"
        let root = try XMLReader.parse(Array(text.utf8), file: "f")
        #expect(root.name == "a")
        #expect(root.location == Location(file: "f", line: 3, column: 1))
        #expect(root.attribute("x")?.value == "1&2 3")
        #expect(root.text == "a<<b>&amp;\né")
        #expect(root.elements.map(\.name) == ["b"])
        #expect(root.elements[0].location == Location(file: "f", line: 4, column: 9))
    }

    @Test("a plist's plain DOCTYPE is skipped only when asked, and never one with a subset")
    func plainDoctype() throws {
        let plist = "<?xml version=\"1.0\"?>\n<!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n<plist/>"
        #expect { try XMLReader.parse(Array(plist.utf8), file: "p") } throws: {
            ($0 as? XMLReader.Failure)?.diagnostic.code.as(DiagnosticCode.self) == .xmlDTD && ($0 as? XMLReader.Failure)?.diagnostic.location.line == 2
        }
        #expect(try XMLReader.parse(Array(plist.utf8), file: "p", allowingPlainDoctype: true).name == "plist")
        #expect {
            try XMLReader.parse(Array(Self.billionLaughs.utf8), file: "p", allowingPlainDoctype: true)
        } throws: { ($0 as? XMLReader.Failure)?.diagnostic.code.as(DiagnosticCode.self) == .xmlDTD }
    }
}
