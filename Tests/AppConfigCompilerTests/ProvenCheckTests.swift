@testable import AppConfigCompiler
import AppConfigPattern
import CompileSupport
import AppConfigSpec
import TestSupport
import Testing

/// Pattern checks the compiler proves from a template's fixed text, and leaves out of the program.
@Suite("Proven pattern checks")
struct ProvenCheckTests {
    static func template(_ parts: [StringTemplate.Part]) -> StringTemplate { StringTemplate(parts: parts) }
    static let cn = StringTemplate.Part.variable(.user(.cn))
    static let ou = StringTemplate.Part.variable(.user(.ou))

    @Test("the fixed text that proves a check, or nil where a device could fail it", arguments: [
        ("CN=.*", [.literal("CN="), cn, .literal(",OU="), ou], "CN="),
        ("^https://", [.literal("https://"), ou, .literal(".example")], "https://"),
        ("^https://", [ou, .literal("https://")], nil),                      // `^`: the run must start the value
        (#"@company\.com$"#, [cn, .literal("@company.com")], "@company.com"),
        (#"@company\.com$"#, [cn, .literal("@company.com/"), ou], nil),      // `$`: the run must end it
        ("^[A-Z0-9]{8,14}$", [.literal("SN1234567"), cn], nil),              // both: only a value without variables
        (#"\bCN="#, [.literal("CN="), cn], nil),                             // a boundary looks outside the match
        ("CN=.*", [cn], nil),                                                // no fixed text
        ("C.=", [ou, .literal("C"), cn, .literal("=")], nil),                // the match would span a variable
        ("[A-Za-z]@company.com", [cn, .literal("X@"), .literal("company.com")], "X@company.com"),  // runs join
        ("a|^b", [.literal("x"), cn, .literal("a")], nil),                   // `^` anywhere pins the run to the start
        ("CN=.*", [.filtered(.user(.cn), [.defaultText("CN=")])], nil),      // a default is not fixed text
    ] as [(String, [StringTemplate.Part], String?)])
    func fixedText(_ pattern: String, _ parts: [StringTemplate.Part], _ expected: String?) throws {
        #expect(ProgramBuilder.fixedText(of: Self.template(parts), matching: try Pattern(pattern)) == expected)
    }

    @Test("a proven check is left out of the program and listed; an unproven one stays")
    func program() throws {
        let program = try compileProgram(specXML("""
            <string keyName="dn"><constraint pattern="CN=.*"/></string>
            <string keyName="url"><constraint pattern="^https://[a-z.]+/$"/></string>
            """), values: #"{"dn": "CN=$(cn),OU=$(ou)", "url": "https://$(ou)/"}"#)
        #expect(program.instructions.filter { $0.opcode == .checkPattern }.map(\.operand) == [1])
        #expect(program.provenChecks.map(\.pattern) == [0])
        let listing = Disassembler.listing(program)
        #expect(listing.contains("""
              stringEnd
                  ; checkPattern p0 /CN=.*/ holds for every device: "CN=" matches it
            """))
        #expect(listing.contains("checkPattern p1 /^https://[a-z.]+/$/\n"))
    }

    /// Random patterns (anchors, classes, alternatives, quantifiers, and constructs that look
    /// around) and templates over a small alphabet with newlines: whenever the compiler proves a
    /// check, PCRE2 finds a match in the value, whatever the variables hold.
    @Test("soundness: every value a proven template makes matches its pattern (PCRE2 is the oracle)")
    func soundness() throws {
        var random = SplitMix64(seed: 15)
        let alphabet: [String] = ["a", "b", "C", "=", "@", ".", "\n", " "]
        let atoms = ["a", "b", "C", "=", "@", #"\."#, ".", "[ab]", "[^a]", #"\w"#, #"\s"#, #"\n"#, "[[:alpha:]]",
                     "^", "$", "|", #"\b"#, "(a)", "(?=b)", #"\Z"#]
        let quantifiers = ["", "", "", "*", "+", "?", "{1,2}", "*?"]
        var proven = 0
        for _ in 0..<4000 {
            var source = Int.random(in: 0..<4, using: &random) == 0 ? "^" : ""
            for _ in 0..<Int.random(in: 1...4, using: &random) {
                let atom = atoms.randomElement(using: &random)!
                source += atom + (["^", "$", "|"].contains(atom) ? "" : quantifiers.randomElement(using: &random)!)
            }
            if Int.random(in: 0..<4, using: &random) == 0 { source += "$" }
            guard let pattern = try? Pattern(source) else { continue }
            var parts: [StringTemplate.Part] = []
            for _ in 0..<Int.random(in: 1...4, using: &random) {
                if Bool.random(using: &random) {
                    parts.append(.literal((0..<Int.random(in: 1...4, using: &random)).map { _ in alphabet.randomElement(using: &random)! }.joined()))
                } else {
                    parts.append(Self.cn)
                }
            }
            guard ProgramBuilder.fixedText(of: Self.template(parts), matching: pattern) != nil else { continue }
            proven += 1
            for _ in 0..<20 {
                let value = parts.map { part -> String in
                    if case .literal(let s) = part { return s }
                    return (0..<Int.random(in: 0...4, using: &random)).map { _ in alphabet.randomElement(using: &random)! }.joined()
                }.joined()
                #expect(pattern.search(value) == .match, "pattern \(source) value \(value.debugDescription)")
            }
        }
        #expect(proven > 300)  // the cases prove enough checks to mean something
    }
}
