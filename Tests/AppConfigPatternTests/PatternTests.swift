@testable import AppConfigPattern
import AppConfigCore
import Foundation
import TestSupport
import Testing

/// PCRE2 patterns as the spec's `pattern` constraints and the VM use them: an unanchored search in
/// UTF mode, bounded, and what a pattern tests outside its match.
@Suite("Patterns")
struct PatternTests {
    typealias Anchors = Pattern.Anchors

    @Test("what a pattern tests outside its match, read from its source", arguments: [
        ("CN=.*", Anchors(start: false, end: false)),
        ("^https://", Anchors(start: true, end: false)),
        (#"@company\.com$"#, Anchors(start: false, end: true)),
        ("^[A-Z0-9]{8,14}$", Anchors(start: true, end: true)),
        (#"[^@\s]+@x"#, Anchors(start: false, end: false)),   // `^` first in a class negates it
        ("a|^b", Anchors(start: true, end: false)),
        (#"\$5\^"#, Anchors(start: false, end: false)),         // escaped: characters
        (#"\d{3}-\w+\S?\t"#, Anchors(start: false, end: false)),
        ("[[:alpha:]]+[]a][\\]]", Anchors(start: false, end: false)),
        ("(/.*)?", nil),                                        // any group
        ("x(?=y)", nil),
        ("(*UTF)x", nil),
        (#"\bword"#, nil),
        (#"\Bx"#, nil),
        (#"\Aabc"#, nil),
        (#"abc\z"#, nil),
        (#"abc\Z"#, nil),
        (#"\Gx"#, nil),
        (#"a\Kb"#, nil),
        (#"a\1"#, nil),                                         // a backreference
        (#"\Qa.b\E"#, nil),
        (#"[a\Q]\E]"#, nil),
        ("[[:<:]]word", nil),
        ("word[[:>:]]", nil),
        ("[abc", nil),
    ] as [(String, Anchors?)])
    func anchors(_ source: String, _ expected: Anchors?) {
        #expect(Anchors.of(source) == expected)
    }

    /// Patterns in the syntax PCRE2 and Python's `re` read alike (`re.ASCII`: PCRE2 without UCP
    /// takes `\d`, `\s`, `\w` as ASCII), with subjects that match or not.
    static let cases: [(String, [String])] = [
        ("^[A-Z0-9]{8,14}$", ["C02XK1ABJG5H", "c02xk1abjg5h", "SHORT", "C02XK1ABJG5H\n", ""]),
        (#"@company\.com$"#, ["ann@company.com", "ann@company.com.evil", "ANN@COMPANY.COM", "@company.com"]),
        (#"^[^@\s]+@[^@\s]+\.[a-z]{2,}$"#, ["a@b.io", "a b@c.io", "a@@b.io", "ü@b.de"]),
        ("ou=(sales|hq)", ["CN=x,ou=sales,DC=y", "ou=hr", "OU=sales"]),
        (#"^\d{3}-\d{4}$"#, ["555-1234", "5551234", "555-12345", "٣٣٣-٤٤٤٤"]),
        ("a.c", ["abc", "a\nc", "aéc", "ac"]),
        ("[α-ω]+", ["λόγος", "logos", ""]),
    ]

    @Test("an unanchored search in UTF mode: Python's re says the same of every subject", .enabled(if: which("python3") != nil))
    func searchAgreesWithPython() throws {
        let json = try JSONSerialization.data(withJSONObject: Self.cases.map { [$0.0, $0.1] as [Any] })
        let script = """
            import json, re, sys
            cases = json.load(sys.stdin)
            print(json.dumps([[bool(re.search(p, s, re.ASCII)) for s in subjects] for p, subjects in cases]))
            """
        let r = try runProcess(try #require(which("python3")), ["-c", script], stdin: String(decoding: json, as: UTF8.self))
        #expect(r.status == 0, "\(r.stderr)")
        let expected = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [[Bool]])
        for ((source, subjects), verdicts) in zip(Self.cases, expected) {
            let pattern = try Pattern(source)
            for (subject, verdict) in zip(subjects, verdicts) {
                #expect(pattern.search(subject) == (verdict ? .match : .noMatch), "\(source) on \(subject.debugDescription)")
            }
        }
    }

    @Test("a pattern PCRE2 cannot compile: its message and offset", arguments: [("a(b", 3), ("[z-a]", 3), ("x{2,1}", 5)])
    func compileErrors(_ source: String, _ offset: Int) {
        let error = #expect(throws: Pattern.CompileError.self) { try Pattern(source) }
        #expect(error?.offset == offset)
        #expect(error?.message.isEmpty == false)
    }

    @Test("catastrophic backtracking ends at the match limit: no verdict, not a hang")
    func matchLimit() throws {
        let pattern = try Pattern("^(a+)+$")
        let result = pattern.search(String(repeating: "a", count: 40) + "b")
        guard case .failed(let why) = result else {
            Issue.record("expected the match limit, got \(result)")
            return
        }
        #expect(why.contains("limit"), "\(why)")
    }

    @Test("bytes that are not UTF-8: no verdict from the checked search")
    func invalidUTF8() throws {
        let pattern = try Pattern("a")
        let arena = BufferArena()
        let bytes = arena.view([0x61, 0xFF] as [UInt8])
        #expect(pattern.search(bytes, scratch: Pattern.Scratch()) != .match && pattern.search(bytes, scratch: Pattern.Scratch()) != .noMatch)
        guard case .failed(let why) = pattern.search(bytes, scratch: Pattern.Scratch()) else { return }
        #expect(why.contains("UTF-8"), "\(why)")
    }
}
