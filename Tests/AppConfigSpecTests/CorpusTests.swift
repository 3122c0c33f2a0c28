import AppConfigCore
import AppConfigSpec
import Foundation
import TestSupport
import Testing

/// Every spec in ../shared/corpus/specs: our verdict against the public XSDs' verdict (xmllint, an
/// independent validator), and the differences we keep by design (listed in docs/design.md).
@Suite("Public corpus specs against the XSDs", .enabled(if: Paths.hasCorpus, "../shared/corpus is absent (a user's clone): corpus tests skipped"))
struct CorpusTests {
    struct Case: CustomTestStringConvertible, Sendable {
        var path: String
        /// What the public XSDs say (checked live with xmllint below).
        var xsdValid: Bool
        var errors: [DiagnosticCode] = []
        var warnings: [DiagnosticCode] = []
        var testDescription: String { path }
    }

    static let chromiumValid = ["testBooleanPolicy", "testDictPolicy", "testIntEnumPolicy", "testIntPolicy", "testListPolicy",
                                "testNonFuturePolicy", "testPolicyWithGroup", "testStringEnumListPolicy", "testStringEnumPolicy", "testStringPolicy"]

    static let cases: [Case] = chromiumValid.map { Case(path: "specs/chromium/\($0).xml", xsdValid: true) } + [
        // A non-schema attribute: both XSDs and we refuse it.
        Case(path: "specs/chromium/testFuturePolicy.xml", xsdValid: false, errors: [.unknownAttribute]),
        // Stricter by design: the reference allows only letters, digits, space, _ and - in a keyName
        // (the XSDs type it as any string); "Justin's Full Name" breaks that. Its "Phone Number" default
        // "" breaks its own min="3", which no XSD can see: a warning.
        Case(path: "specs/jamf-AppConfig-Generator/mac.xml", xsdValid: true, errors: [.keyNameCharacters], warnings: [.defaultBreaksConstraint]),
        Case(path: "specs/nextcloud-passwords-ios/specfile.xml", xsdValid: true),
    ]

    /// Where our verdict differs from the XSDs' on purpose (docs/design.md, "Where lint differs from the public XSDs").
    static let documentedDifferences: Set<String> = ["specs/jamf-AppConfig-Generator/mac.xml"]

    @Test(arguments: cases)
    func verdict(_ c: Case) throws {
        let path = try #require(Paths.corpusFile(c.path))
        let result = SpecParser.parse(try readFileBytes(path), file: path)
        #expect(result.diagnostics.filter { $0.severity == .error }.map { $0.code.as(DiagnosticCode.self) } == c.errors, "\(result.diagnostics)")
        #expect(result.diagnostics.filter { $0.severity == .warning }.map { $0.code.as(DiagnosticCode.self) } == c.warnings, "\(result.diagnostics)")
        let ourValid = !result.hasErrors
        // A documented difference must be one: our verdict is then the opposite of the XSD's.
        #expect(ourValid == (Self.documentedDifferences.contains(c.path) ? !c.xsdValid : c.xsdValid))
    }

    @Test("the XSD verdicts in the table are what xmllint says", arguments: cases)
    func xsdOracle(_ c: Case) throws {
        guard let xmllint = which("xmllint") else {
            Issue.record("xmllint (libxml2-utils, installed by tools/install-deps) is needed as the XSD oracle")
            return
        }
        let spec = try #require(Paths.corpusFile(c.path))
        for xsd in ["specs/xsd/jamf-AppConfigSpecCreator_appconfigschema.xsd", "specs/xsd/jamf-AppConfig-Generator_appconfig.xsd"] {
            let run = try runProcess(xmllint, ["--noout", "--schema", try #require(Paths.corpusFile(xsd)), spec])
            #expect((run.status == 0) == c.xsdValid, "\(xsd): \(run.stderr)")
        }
    }

    @Test("with --lenient, mac.xml's apostrophe is a warning and the spec passes")
    func lenientMac() throws {
        let path = try #require(Paths.corpusFile("specs/jamf-AppConfig-Generator/mac.xml"))
        let result = SpecParser.parse(try readFileBytes(path), file: path, options: SpecOptions(lenient: true))
        #expect(!result.hasErrors)
        #expect(result.diagnostics.map { $0.code.as(DiagnosticCode.self) } == [.keyNameCharacters, .defaultBreaksConstraint])
        #expect(result.diagnostics.first?.location.line == 68)
        #expect(result.spec?.keys.count == 14)
    }
}

/// The reference's chapter 3 example document, reassembled as Fixtures/reference/example.xml.
/// Verdict: valid, with no warning; every part of it decodes to what the text says.
@Suite("The reference's example document")
struct ReferenceExampleTests {
    static func parse() throws -> (Spec, [Problem]) {
        let path = Paths.fixture("reference/example.xml")
        let result = SpecParser.parse(try readFileBytes(path), file: path)
        return (try #require(result.spec), result.diagnostics)
    }

    @Test func verdictAndModel() throws {
        let (spec, diagnostics) = try Self.parse()
        #expect(diagnostics.isEmpty)
        #expect(spec.rootName == "managedAppConfiguration")
        #expect(spec.version == 123)
        #expect(spec.bundleId == "com.myCompany.myApp")
        #expect(spec.keys.map(\.name) == ["boolkey1", "intkey1", "intkey2", "floatkey1", "floatkey2", "strkey1", "strkey2",
                                          "intarraykey1", "floatarraykey1", "strarraykey1", "datekey1", "hiddenkey1"])
        #expect(spec.keys.map(\.type) == [.boolean, .integer, .integer, .float, .float, .string, .string,
                                          .integerArray, .floatArray, .stringArray, .date, .integer])
        func defaults(_ name: String) -> [AssignedValue.Item.Content]? { spec.key(named: name)?.defaultValue?.items.map(\.content) }
        #expect(defaults("boolkey1") == [.literal(.boolean(true))])
        #expect(defaults("floatkey1") == [.literal(.float(1.5))])
        #expect(defaults("strkey1") == [.template(StringTemplate(parts: [.variable(.user(.cn))]))])
        #expect(defaults("strarraykey1") == [.template(StringTemplate(parts: [.variable(.user(.emailAddress))]))])
        #expect(defaults("datekey1") == [.literal(.date(PlistDate(secondsSince2001: 459_188_970)))])
        let intkey1 = try #require(spec.key(named: "intkey1")?.constraint)
        #expect(intkey1.nullable && intkey1.min == .integer(1) && intkey1.max == .integer(100))
        #expect(spec.key(named: "floatkey2")?.constraint?.values?.count == 6)
        #expect(spec.key(named: "strkey1")?.constraint?.pattern == "CN=.*")
        let presentation = try #require(spec.presentation)
        #expect(presentation.defaultLocale == "en-US")
        #expect(presentation.allFields.map(\.keyName) == ["boolkey1", "intkey2", "strarraykey1", "datekey1", "hiddenkey1"])
        #expect(presentation.allFields.map(\.type) == [.checkbox, .select, .input, .datetime, .hidden])
        #expect(presentation.allFields[1].options.map(\.value) == ["15", "20", "25", "30"])
        guard case .group(let group) = presentation.items.first else { Issue.record("first item is a group"); return }
        #expect(group.name.resolve(for: "de-DE", defaultLocale: presentation.defaultLocale) == "Critical Settings")
    }

    @Test("the same document with the reference's prose root name is read the same")
    func proseRoot() throws {
        let path = Paths.fixture("reference/example.xml")
        let text = String(decoding: try readFileBytes(path), as: UTF8.self)
            .replacingOccurrences(of: "managedAppConfiguration", with: "managedApplicationConfiguration")
        let result = SpecParser.parse(Array(text.utf8), file: path)
        #expect(result.diagnostics.isEmpty)
        #expect(result.spec?.rootName == "managedApplicationConfiguration")
        #expect(result.spec?.keys.count == 12)
    }

    @Test("the demo spec and its values are clean")
    func demo() throws {
        let outcome = Linter().lint(files: [Paths.fixture("demo/spec.xml")], valuesFile: Paths.fixture("demo/values.json"))
        #expect(outcome.diagnostics.isEmpty, "\(outcome.diagnostics)")
        #expect(outcome.ioFailures.isEmpty)
        #expect(outcome.filesChecked == 2)
    }
}
