import AppConfigPattern
@testable import AppConfigSpec
import Testing

/// Literals, dates, templates, the locale fallback and patterns: the pieces rules are built from.
/// Expected seconds come from Python's datetime (an independent computation).
@Suite("Literals, dates, templates, locales, patterns")
struct LiteralTests {
    @Test(arguments: [
        ("2015-07-25", 459_475_200.0),
        ("2015-07-25T21:19Z", 459_551_940.0),
        ("2015-07-25T22:12:52+00:00", 459_555_172.0),
        ("2015-07-25T23:12:52+01:00", 459_555_172.0),
        ("2015-07-25T17:12:52-0500", 459_555_172.0),
        ("2015-07-25T22:12:52", 459_555_172.0),
        ("2015-07-21T16:29:30Z", 459_188_970.0),
        ("1969-12-31T23:59:59.250Z", -978_307_200.75),
        ("2199-12-31T23:59:59Z", 6_279_811_199.0),
        ("2024-02-29T12:00:00Z", 730_900_800.0),
    ])
    func dateAccepted(text: String, seconds: Double) {
        #expect(ISO8601.parse(text) == PlistDate(secondsSince2001: seconds))
    }

    @Test(arguments: ["2015-7-25", "2015-02-29", "2015-07-25T24:00Z", "2015-07-25T21:60Z", "2015-07-25T21:19:00.Z",
                      "2015-07-25 21:19Z", "2015-07-25T21Z", "2015-07-25T21:19+25:00", "25/07/2015", ""])
    func dateRejected(text: String) {
        #expect(ISO8601.parse(text) == nil)
    }

    @Test func dateFormatting() {
        #expect(ISO8601.format(PlistDate(secondsSince2001: 459_555_172.9)) == "2015-07-25T22:12:52Z")
        #expect(ISO8601.format(PlistDate(secondsSince2001: -978_307_200.75)) == "1969-12-31T23:59:59Z")
        #expect(ISO8601.format(PlistDate(secondsSince2001: 0)) == "2001-01-01T00:00:00Z")
    }

    @Test(arguments: [
        (ScalarType.integer, " -42 ", ScalarValue.integer(-42) as ScalarValue?),
        (.integer, "+7", .integer(7)),
        (.integer, "9223372036854775807", .integer(.max)),
        (.integer, "9223372036854775808", nil),
        (.integer, "1.0", nil),
        (.integer, "0x10", nil),
        (.float, "1.50", .float(1.5)),
        (.float, "-.5", .float(-0.5)),
        (.float, "2e-3", .float(0.002)),
        (.float, "1e", nil),
        (.float, "INF", nil),
        (.float, "1e999", nil),
        (.boolean, "true", .boolean(true)),
        (.boolean, " false ", .boolean(false)),
        (.boolean, "1", nil),
        (.boolean, "TRUE", nil),
        (.string, " keep spaces ", .string(" keep spaces ")),
    ])
    func literal(type: ScalarType, text: String, expected: ScalarValue?) {
        #expect(type.parse(text) == expected)
    }

    @Test func templates() throws {
        let (t, nonCanonical) = try StringTemplate.parse("https://$(ou).corp.example/$(serialNumber)?a=$$5&s=$(device.Asset Tag)$(IMEI)").get()
        #expect(t.parts == [.literal("https://"), .variable(.user(.ou)), .literal(".corp.example/"), .variable(.device(.serialNumber)),
                            .literal("?a=$5&s="), .variable(.deviceAttribute("Asset Tag")), .variable(.device(.imei))])
        #expect(nonCanonical == ["IMEI"])
        #expect(t.description == "https://$(ou).corp.example/$(serialNumber)?a=$$5&s=$(device.Asset Tag)$(imei)")
        #expect(try StringTemplate.parse("plain $$").get().0.literalValue == "plain $")
        #expect(try StringTemplate.parse("").get().0.literalValue == "")
    }

    @Test(arguments: [
        ("cost $5", StringTemplate.ParseError.loneDollar(offset: 5)),
        ("end $", .loneDollar(offset: 4)),
        ("$(ou", .unterminated(offset: 0)),
        ("a$( )", .emptyName(offset: 1)),
        ("$(mail)", .unknownVariable(name: "mail", offset: 0)),
    ])
    func templateErrors(text: String, error: StringTemplate.ParseError) {
        #expect(throws: error) { try StringTemplate.parse(text).get() }
    }

    static let text = LocalizedText(entries: [
        .init(language: "en-US", text: "Start Time"),
        .init(language: "es-ES", text: "Hora de Inicio"),
        .init(language: "de", text: "Startzeit"),
        .init(language: "fr_CA", text: "Heure (CA)"),
    ])

    /// The reference's table: xx-YY exact, then language xx, then defaultLocale exactly.
    @Test(arguments: [
        ("en-US", "Start Time"), ("en-GB", "Start Time"), ("es-MX", "Hora de Inicio"), ("es", "Hora de Inicio"),
        ("de-AT", "Startzeit"), ("fr-CA", "Heure (CA)"), ("fr_FR", "Heure (CA)"), ("ja-JP", "Hora de Inicio"), ("EN_us", "Start Time"),
    ])
    func localeFallback(display: String, expected: String) {
        #expect(Self.text.resolve(for: display, defaultLocale: "es-ES") == expected)
    }

    @Test func localeFallbackNone() {
        #expect(Self.text.resolve(for: "ja", defaultLocale: "pt-BR") == nil)
        #expect(Self.text.resolve(for: "ja", defaultLocale: nil) == nil)
    }

    @Test func patterns() throws {
        let p = try Pattern("[A-Za-z]@company\\.com")
        #expect(p.isJITCompiled)
        #expect(p.search("jdoe@company.com") == .match)  // unanchored: "e@company.com" matches
        #expect(p.search("@company.com") == .noMatch)
        #expect(try Pattern("^é{2}$").search("éé") == .match)  // UTF mode: é is one character
        #expect(throws: Pattern.CompileError(message: "missing closing parenthesis", offset: 3)) { try Pattern("(ab") }
    }

    @Test("a catastrophic pattern hits the match limit instead of hanging")
    func matchLimit() throws {
        let p = try Pattern("(a+)+$")
        let result = p.search(String(repeating: "a", count: 40) + "!")
        #expect(result == .failed("match limit exceeded"))
    }
}
