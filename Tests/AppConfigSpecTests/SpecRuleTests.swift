import AppConfigCore
import AppConfigSpec
import Testing

/// A spec around a dict body. Lines: 1 root, 2 version, 3 bundleId, 4 `<dict>`, 5... the body,
/// then `</dict>` and the presentation (at line 7 when the body is one line).
func doc(_ dict: String, presentation: String = "", version: String = "1", bundleId: String = "com.example.app",
         root: String = "managedAppConfiguration") -> String {
    "<\(root)>\n<version>\(version)</version>\n<bundleId>\(bundleId)</bundleId>\n<dict>\n\(dict)\n</dict>\n\(presentation)</\(root)>\n"
}

func lint(_ text: String, lenient: Bool = false) -> [Problem] {
    SpecParser.parse(Array(text.utf8), file: "t.xml", options: SpecOptions(lenient: lenient)).diagnostics
}

/// One rule: a document that breaks it (the code must be reported at `line` with `severity`)
/// and a near-identical one that keeps it (the code must not be reported).
struct RuleCase: CustomTestStringConvertible, Sendable {
    var code: DiagnosticCode
    var bad: String
    var line: Int
    var good: String
    var severity: Problem.Severity = .error
    var testDescription: String { "\(code.rawValue) @\(line)" }
}

let oneKey = #"<string keyName="k"><defaultValue><value>v</value></defaultValue></string>"#
let intValues = #"<integer keyName="k"><constraint><values><value>15</value><value>20</value></values></constraint></integer>"#

func field(_ attrs: String, _ body: String = #"<label><language value="en-US">L</language></label>"#) -> String {
    "<presentation defaultLocale=\"en-US\">\n<field \(attrs)>\(body)</field>\n</presentation>\n"
}

let ruleCases: [RuleCase] = [
    // XML
    RuleCase(code: .xmlSyntax, bad: doc("<string keyName=\"k\">"), line: 6, good: doc(oneKey)),
    RuleCase(code: .xmlDTD, bad: "<!DOCTYPE m [<!ENTITY x \"y\">]>\n" + doc(oneKey), line: 1, good: doc(oneKey)),
    RuleCase(code: .xmlEntity, bad: doc("<string keyName=\"k\"><defaultValue><value>&x;</value></defaultValue></string>"), line: 5,
             good: doc("<string keyName=\"k\"><defaultValue><value>&amp;&#x41;&#66;</value></defaultValue></string>")),
    RuleCase(code: .xmlText, bad: doc("stray\n" + oneKey), line: 5, good: doc(oneKey)),
    // Structure
    RuleCase(code: .structureRoot, bad: doc(oneKey, root: "plist"), line: 1, good: doc(oneKey, root: "managedApplicationConfiguration")),
    RuleCase(code: .unknownElement, bad: doc("<string keyName=\"k\">\n<constraints nullable=\"true\"/></string>"), line: 6,
             good: doc("<string keyName=\"k\">\n<constraint nullable=\"true\"/></string>")),
    RuleCase(code: .unknownAttribute, bad: doc("<string future=\"true\" keyName=\"k\"/>"), line: 5, good: doc("<string keyName=\"k\"/>")),
    RuleCase(code: .missingElement,
             bad: "<managedAppConfiguration>\n<version>1</version>\n<dict>\(oneKey)</dict>\n</managedAppConfiguration>", line: 1,
             good: doc(oneKey)),
    RuleCase(code: .duplicateElement, bad: doc("<string keyName=\"k\">\n<constraint/>\n<constraint/></string>"), line: 7,
             good: doc("<string keyName=\"k\">\n<constraint/>\n</string>")),
    RuleCase(code: .elementOrder, bad: doc("<string keyName=\"k\">\n<constraint/>\n<defaultValue><value>v</value></defaultValue></string>"), line: 7,
             good: doc("<string keyName=\"k\">\n<defaultValue><value>v</value></defaultValue>\n<constraint/></string>")),
    RuleCase(code: .missingAttribute, bad: doc("<string/>"), line: 5, good: doc("<string keyName=\"k\"/>")),
    RuleCase(code: .dictEmpty, bad: doc(""), line: 4, good: doc(oneKey)),
    // Header
    RuleCase(code: .versionInvalid, bad: doc(oneKey, version: "123456"), line: 2, good: doc(oneKey, version: "12345")),
    RuleCase(code: .versionInvalid, bad: doc(oneKey, version: "0"), line: 2, good: doc(oneKey, version: "1")),
    RuleCase(code: .versionInvalid, bad: doc(oneKey, version: "v1"), line: 2, good: doc(oneKey, version: " 2 ")),
    RuleCase(code: .versionInvalid, bad: doc(oneKey, version: "0.9.1"), line: 2, good: doc(oneKey, version: "1")),
    RuleCase(code: .versionDotted, bad: doc(oneKey, version: "2.1.2"), line: 2, good: doc(oneKey, version: "2"), severity: .warning),
    RuleCase(code: .versionDotted, bad: doc(oneKey, version: "1.0.0"), line: 2, good: doc(oneKey, version: "1"), severity: .warning),
    RuleCase(code: .bundleIdInvalid, bad: doc(oneKey, bundleId: "myapp"), line: 3, good: doc(oneKey, bundleId: "com.my-company.app2")),
    RuleCase(code: .bundleIdInvalid, bad: doc(oneKey, bundleId: "com..app"), line: 3, good: doc(oneKey, bundleId: "de.cdslash.Passwords")),
    // Keys
    RuleCase(code: .keyNameCharacters, bad: doc("<string keyName=\"a.b\"/>"), line: 5, good: doc("<string keyName=\"Größe 2_x-y\"/>")),
    RuleCase(code: .keyNameCharacters, bad: doc("<string keyName=\"\"/>"), line: 5, good: doc("<string keyName=\"k\"/>")),
    RuleCase(code: .keyNameDuplicate, bad: doc("<string keyName=\"k\"/>\n<integer keyName=\"k\"/>"), line: 6,
             good: doc("<string keyName=\"k\"/>\n<integer keyName=\"K\"/>")),
    RuleCase(code: .keyNameReserved, bad: doc("<integer keyName=\"ManagedAppConfigurationVersion\"/>"), line: 5,
             good: doc("<integer keyName=\"AppConfigurationVersion\"/>")),
    // Defaults
    RuleCase(code: .defaultEmpty, bad: doc("<string keyName=\"k\"><defaultValue/></string>"), line: 5, good: doc("<string keyName=\"k\"></string>")),
    RuleCase(code: .defaultCount, bad: doc("<integer keyName=\"k\"><defaultValue>\n<value>1</value>\n<value>2</value></defaultValue></integer>"), line: 7,
             good: doc("<integerArray keyName=\"k\"><defaultValue>\n<value>1</value>\n<value>2</value></defaultValue></integerArray>")),
    RuleCase(code: .defaultVariableNotAllowed, bad: doc("<integer keyName=\"k\"><defaultValue><userVariable value=\"cn\"/></defaultValue></integer>"), line: 5,
             good: doc("<stringArray keyName=\"k\"><defaultValue><userVariable value=\"cn\"/><value>x</value></defaultValue></stringArray>")),
    RuleCase(code: .defaultType, bad: doc("<integer keyName=\"k\"><defaultValue><value>abc</value></defaultValue></integer>"), line: 5,
             good: doc("<integer keyName=\"k\"><defaultValue><value> -42 </value></defaultValue></integer>")),
    RuleCase(code: .defaultType, bad: doc("<boolean keyName=\"k\"><defaultValue><value>yes</value></defaultValue></boolean>"), line: 5,
             good: doc("<boolean keyName=\"k\"><defaultValue><value>false</value></defaultValue></boolean>")),
    RuleCase(code: .defaultType, bad: doc("<date keyName=\"k\"><defaultValue><value>2015-13-01</value></defaultValue></date>"), line: 5,
             good: doc("<date keyName=\"k\"><defaultValue><value>2015-07-25T21:19Z</value></defaultValue></date>")),
    RuleCase(code: .defaultType, bad: doc("<float keyName=\"k\"><defaultValue><value>1,5</value></defaultValue></float>"), line: 5,
             good: doc("<float keyName=\"k\"><defaultValue><value>1.5e3</value></defaultValue></float>")),
    RuleCase(code: .defaultType, bad: doc("<floatArray keyName=\"k\"><defaultValue><value>1</value><value>NaN</value></defaultValue></floatArray>"), line: 5,
             good: doc("<floatArray keyName=\"k\"><defaultValue><value>1</value><value>-0.5</value></defaultValue></floatArray>")),
    RuleCase(code: .defaultBreaksConstraint,
             bad: doc("<integer keyName=\"k\">\n<defaultValue><value>200</value></defaultValue><constraint max=\"100\"/></integer>"), line: 6,
             good: doc("<integer keyName=\"k\">\n<defaultValue><value>100</value></defaultValue><constraint max=\"100\"/></integer>"),
             severity: .warning),
    RuleCase(code: .defaultBreaksConstraint,
             bad: doc("<string keyName=\"k\">\n<defaultValue><value>x@other.com</value></defaultValue><constraint pattern=\"@company\\.com$\"/></string>"), line: 6,
             good: doc("<string keyName=\"k\">\n<defaultValue><value>x@company.com</value></defaultValue><constraint pattern=\"@company\\.com$\"/></string>"),
             severity: .warning),
    // Variables
    RuleCase(code: .variableUnknown, bad: doc("<string keyName=\"k\"><defaultValue><userVariable value=\"mail\"/></defaultValue></string>"), line: 5,
             good: doc("<string keyName=\"k\"><defaultValue><userVariable value=\"emailAddress\"/></defaultValue></string>")),
    RuleCase(code: .variableUnknown, bad: doc("<string keyName=\"k\"><defaultValue><userVariable value=\"imei\"/></defaultValue></string>"), line: 5,
             good: doc("<string keyName=\"k\"><defaultValue><deviceVariable value=\"imei\"/></defaultValue></string>")),
    RuleCase(code: .variableForeign, bad: doc("<string keyName=\"k\"><defaultValue><value>{{mail}}</value></defaultValue></string>"), line: 5,
             good: doc("<string keyName=\"k\"><defaultValue><value>{mail}</value></defaultValue></string>"), severity: .warning),
    RuleCase(code: .variableSpelling, bad: doc("<string keyName=\"k\"><defaultValue><deviceVariable value=\"IMEI\"/></defaultValue></string>"), line: 5,
             good: doc("<string keyName=\"k\"><defaultValue><deviceVariable value=\"imei\"/></defaultValue></string>"), severity: .warning),
    // Constraints
    RuleCase(code: .constraintAttributeNotAllowed, bad: doc("<integer keyName=\"k\"><constraint pattern=\"[0-9]\"/></integer>"), line: 5,
             good: doc("<string keyName=\"k\"><constraint pattern=\"[0-9]\"/></string>")),
    RuleCase(code: .constraintAttributeNotAllowed, bad: doc("<boolean keyName=\"k\"><constraint min=\"1\"/></boolean>"), line: 5,
             good: doc("<boolean keyName=\"k\"><constraint nullable=\"true\"/></boolean>")),
    RuleCase(code: .constraintValuesNotAllowed, bad: doc("<boolean keyName=\"k\"><constraint><values><value>true</value></values></constraint></boolean>"), line: 5,
             good: doc("<integer keyName=\"k\"><constraint><values><value>1</value></values></constraint></integer>")),
    RuleCase(code: .constraintValuesNotAllowed, bad: doc("<date keyName=\"k\"><constraint><values><value>2015-07-25</value></values></constraint></date>"), line: 5,
             good: doc("<date keyName=\"k\"><constraint min=\"2015-07-25\"/></date>")),
    RuleCase(code: .constraintBound, bad: doc("<integer keyName=\"k\"><constraint min=\"abc\"/></integer>"), line: 5,
             good: doc("<integer keyName=\"k\"><constraint min=\"-5\"/></integer>")),
    RuleCase(code: .constraintBound, bad: doc("<string keyName=\"k\"><constraint min=\"-1\"/></string>"), line: 5,
             good: doc("<string keyName=\"k\"><constraint min=\"0\"/></string>")),
    RuleCase(code: .constraintBound, bad: doc("<stringArray keyName=\"k\"><constraint max=\"1.5\"/></stringArray>"), line: 5,
             good: doc("<stringArray keyName=\"k\"><constraint max=\"3\"/></stringArray>")),
    RuleCase(code: .constraintRange, bad: doc("<float keyName=\"k\"><constraint min=\"2\" max=\"1\"/></float>"), line: 5,
             good: doc("<float keyName=\"k\"><constraint min=\"1\" max=\"2\"/></float>")),
    RuleCase(code: .constraintNullable, bad: doc("<string keyName=\"k\"><constraint nullable=\"yes\"/></string>"), line: 5,
             good: doc("<string keyName=\"k\"><constraint nullable=\"false\"/></string>")),
    RuleCase(code: .constraintPattern, bad: doc("<string keyName=\"k\"><constraint pattern=\"(ab\"/></string>"), line: 5,
             good: doc("<string keyName=\"k\"><constraint pattern=\"(ab)\"/></string>")),
    RuleCase(code: .constraintPatternIgnoresBounds, bad: doc("<string keyName=\"k\"><constraint min=\"1\" pattern=\"a\"/></string>"), line: 5,
             good: doc("<string keyName=\"k\"><constraint pattern=\"a\"/></string>"), severity: .warning),
    RuleCase(code: .constraintValueType, bad: doc("<integer keyName=\"k\"><constraint><values>\n<value>x</value></values></constraint></integer>"), line: 6,
             good: doc("<integer keyName=\"k\"><constraint><values>\n<value>7</value></values></constraint></integer>")),
    RuleCase(code: .constraintValueDuplicate, bad: doc("<string keyName=\"k\"><constraint><values><value>a</value>\n<value>a</value></values></constraint></string>"), line: 6,
             good: doc("<string keyName=\"k\"><constraint><values><value>a</value>\n<value>A</value></values></constraint></string>"), severity: .warning),
    // Presentation
    RuleCase(code: .fieldUnknownKey, bad: doc(oneKey, presentation: field(#"keyName="kk" type="input""#)), line: 8,
             good: doc(oneKey, presentation: field(#"keyName="k" type="input""#))),
    RuleCase(code: .fieldType, bad: doc(oneKey, presentation: field(#"keyName="k" type="dropdown""#)), line: 8,
             good: doc(oneKey, presentation: field(#"keyName="k" type="input""#))),
    RuleCase(code: .fieldTypeMismatch, bad: doc(oneKey, presentation: field(#"keyName="k" type="checkbox""#)), line: 8,
             good: doc(#"<boolean keyName="k"/>"#, presentation: field(#"keyName="k" type="checkbox""#)), severity: .warning),
    RuleCase(code: .fieldDuplicate,
             bad: doc(oneKey, presentation: "<presentation defaultLocale=\"en\">\n<field keyName=\"k\" type=\"input\"/>\n<field keyName=\"k\" type=\"input\"/>\n</presentation>"), line: 9,
             good: doc(oneKey, presentation: "<presentation defaultLocale=\"en\">\n<field keyName=\"k\" type=\"input\"/>\n</presentation>"), severity: .warning),
    RuleCase(code: .hiddenWithoutDefault, bad: doc("<string keyName=\"k\"/>", presentation: field(#"keyName="k" type="hidden""#)), line: 8,
             good: doc(oneKey, presentation: field(#"keyName="k" type="hidden""#)), severity: .warning),
    RuleCase(code: .optionValue,
             bad: doc(intValues, presentation: field(#"keyName="k" type="select""#, #"<options><option value="99"><language value="en-US">x</language></option></options>"#)), line: 8,
             good: doc(intValues, presentation: field(#"keyName="k" type="select""#, #"<options><option value="15"><language value="en-US">x</language></option></options>"#))),
    RuleCase(code: .optionValue,
             bad: doc(oneKey, presentation: field(#"keyName="k" type="select""#, #"<options><option value="v"><language value="en-US">x</language></option></options>"#)), line: 8,
             good: doc(intValues, presentation: field(#"keyName="k" type="select""#, #"<options><option value="20"><language value="en-US">x</language></option></options>"#))),
    RuleCase(code: .optionSelected,
             bad: doc(intValues, presentation: field(#"keyName="k" type="select""#, #"<options><option value="15" selected="yes"><language value="en-US">x</language></option></options>"#)), line: 8,
             good: doc(intValues, presentation: field(#"keyName="k" type="select""#, #"<options><option value="15" selected="true"><language value="en-US">x</language></option></options>"#))),
    RuleCase(code: .languageCode, bad: doc(oneKey, presentation: field(#"keyName="k" type="input""#, #"<label><language value="en-US">a</language><language value="es_ES">b</language></label>"#)), line: 8,
             good: doc(oneKey, presentation: field(#"keyName="k" type="input""#, #"<label><language value="en-US">a</language><language value="es-ES">b</language></label>"#)), severity: .warning),
    RuleCase(code: .languageNoDefaultLocale, bad: doc(oneKey, presentation: field(#"keyName="k" type="input""#, #"<label><language value="en-GB">a</language></label>"#)), line: 8,
             good: doc(oneKey, presentation: field(#"keyName="k" type="input""#, #"<label><language value="en-us">a</language></label>"#)), severity: .warning),
]

@Suite("Every rule of the reference, failing and passing")
struct SpecRuleTests {
    @Test(arguments: ruleCases)
    func ruleFires(_ rule: RuleCase) {
        let found = lint(rule.bad).filter { $0.code == rule.code }
        #expect(found.map(\.location.line) == [rule.line], "\(lint(rule.bad))")
        #expect(found.map(\.severity) == [rule.severity])
    }

    @Test(arguments: ruleCases)
    func ruleKept(_ rule: RuleCase) {
        let diagnostics = lint(rule.good)
        #expect(!diagnostics.contains { $0.code == rule.code }, "\(diagnostics)")
    }

    @Test("every front-end code has a failing case in one of this target's tables (compile.* are CompileTests')")
    func everyCodeCovered() {
        let secretLiteral: [DiagnosticCode] = SecretLiteralTests.cases.contains { $0.warning != nil } ? [.valuesSecretLiteral] : []
        let covered = Set(ruleCases.map(\.code) + ValuesFileTests.badCases.map(\.code) + XMLReaderTests.cases.map(\.code) + secretLiteral)
        let frontEnd = DiagnosticCode.allCases.filter { !$0.rawValue.hasPrefix("compile.") }
        #expect(frontEnd.filter { !covered.contains($0) } == [])
    }

    @Test("--lenient turns unknown elements, attributes and keyName characters into warnings")
    func lenient() {
        let text = doc("<string future=\"true\" keyName=\"a.b\">\n<constraints/></string>")
        #expect(lint(text).filter { $0.severity == .error }.map { $0.code.as(DiagnosticCode.self) } == [.unknownAttribute, .keyNameCharacters, .unknownElement])
        let relaxed = lint(text, lenient: true)
        #expect(relaxed.allSatisfy { $0.severity == .warning })
        #expect(relaxed.map { $0.code.as(DiagnosticCode.self) } == [.unknownAttribute, .keyNameCharacters, .unknownElement])
    }

    @Test("keyNames no admin can type apart are errors even when lenient; the message shows them escaped", arguments: [
        ("   ", "keyName is only spaces"),
        ("time\u{200B}out", "keyName \"time\u{200B}out\" holds invisible characters (U+200B): it would differ from the name an admin types"),
        ("a\u{200D}b", "keyName \"a\u{200D}b\" holds invisible characters (U+200D): it would differ from the name an admin types"),
        ("abc\u{202E}def", "keyName \"abc\u{202E}def\" holds invisible characters (U+202E): it would differ from the name an admin types"),
    ])
    func invisibleKeyNames(name: String, message: String) {
        let found = lint(doc("<string keyName=\"\(name)\"/>"), lenient: true).filter { $0.code == .keyNameCharacters }
        #expect(found.map(\.message) == [message])
        #expect(found.map(\.severity) == [.error])
        let printed = found.first?.description ?? ""
        #expect(!printed.unicodeScalars.contains { $0.properties.generalCategory == .format })
        #expect(printed.contains("\\u20") || name == "   ")
    }

    @Test("control characters in a diagnostic are escaped, never printed raw")
    func printableDiagnostics() {
        let p = Problem(.valuesUnknownKey, at: Location(file: "v.json", line: 1, column: 2), "the spec defines no key \"a\r\n\tb\u{0}c\u{7F}\u{85}\u{2028}\"")
        #expect(p.description == #"v.json:1:2: error: the spec defines no key "a\r\n\tb\u0000c\u007F\u0085\u2028" [values.unknown-key]"#)
        #expect(Problem.printable("Größe 2_x-y é") == "Größe 2_x-y é")
    }

    @Test("all problems at once, sorted by place, with the hint for a misspelt element")
    func everyProblemAtOnce() {
        let text = doc("<string keyName=\"a.b\">\n<constraints/></string>\n<integer keyName=\"n\"><defaultValue><value>x</value></defaultValue></integer>",
                       version: "abc", bundleId: "nope")
        let d = lint(text)
        #expect(d.map { $0.code.as(DiagnosticCode.self) } == [.versionInvalid, .bundleIdInvalid, .keyNameCharacters, .unknownElement, .defaultType])
        #expect(d.map(\.location.line) == [2, 3, 5, 6, 7])
        #expect(d[3].hint == "did you mean <constraint>?")
        #expect(d[3].location.column == 1)
    }
}
