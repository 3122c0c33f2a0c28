import AppConfigCompiler
import CompileSupport
import AppConfigCore
import AppConfigSpec
import TestSupport
import Testing

/// The compiler: program shape, effective values, and compile-time errors by exact code.
@Suite("Compiler")
struct CompileTests {
    @Test("a binary plist object's size header: the count in the marker below 15, else an integer of the narrowest width", arguments: [
        (0, [0x50]), (14, [0x5E]), (15, [0x5F, 0x10, 15]), (255, [0x5F, 0x10, 0xFF]), (256, [0x5F, 0x11, 1, 0]),
        (65_535, [0x5F, 0x11, 0xFF, 0xFF]), (65_536, [0x5F, 0x12, 0, 1, 0, 0]), (1 << 32, [0x5F, 0x13, 0, 0, 0, 1, 0, 0, 0, 0]),
    ] as [(Int, [UInt8])])
    func sizeHeader(count: Int, bytes: [UInt8]) {
        #expect([UInt8](room: 10) { $0.writeSizeHeader(token: 0x50, count: count) } == bytes)
        #expect(PlistEncoding.sizeHeaderLength(count) == bytes.count)
    }

    static let loc = Location(file: "model", line: 3, column: 5)

    static func spec(_ keys: [Key]) -> Spec {
        Spec(file: "model", rootName: "managedAppConfiguration", version: 1, bundleId: "com.example.model", keys: keys)
    }

    @Test("the program's shape: keys in code-point order, templates as literal parts and slots, checks after the string")
    func shape() throws {
        let program = try compileProgram(specXML("""
            <string keyName="url"><constraint pattern="^https://.*\\.example/" max="99"/></string>
            <integer keyName="Zeta"><defaultValue><value>5</value></defaultValue></integer>
            <stringArray keyName="list"><defaultValue><value>a</value><deviceVariable value="udid"/></defaultValue></stringArray>
            <string keyName="name"><defaultValue><userVariable value="cn"/></defaultValue><constraint min="1" max="64"/></string>
            """), values: #"{"url": "https://$(ou).example/$(udid)"}"#)
        let ops = program.instructions.map(\.opcode)
        #expect(ops == [
            .key, .constant, .endKey,                                              // ManagedAppConfigurationVersion
            .key, .constant, .endKey,                                              // Zeta (uppercase sorts first)
            .key, .arrayBegin, .constant, .stringBegin, .variable, .stringEnd, .arrayEnd, .endKey,  // list
            .key, .stringBegin, .variable, .stringEnd, .checkLength, .endKey,      // name
            .key, .stringBegin, .literal, .variable, .literal, .variable, .stringEnd, .checkPattern, .endKey,  // url
            .halt,
        ])
        #expect(program.keys.map(\.name) == ["ManagedAppConfigurationVersion", "Zeta", "list", "name", "url"])
        #expect(program.slots == [.device(.udid), .user(.cn), .user(.ou)])
        #expect(program.texts.map { String(decoding: $0, as: UTF8.self) } == ["https://", ".example/"])
        let name = try #require(program.keys.first { $0.name == "name" })
        let lengthCheck = try #require(program.instructions[name.startAddress..<name.endAddress].first { $0.opcode == .checkLength })
        #expect(lengthCheck.operands == (1, 64))
        #expect(program.keys.map(\.policy) == [.fail, .fail, .fail, .fail, .fail])
        let listing = Disassembler.listing(program)
        #expect(listing.contains("0027  checkPattern p0 /^https://.*\\.example//\n"))
        #expect(listing.contains("0018  checkLength  1...64 UTF-16 units\n"))
        #expect(listing.contains("0022  literal      t0 \"https://\"\n"))
    }

    @Test("filters compile to typed instructions after their variable; a default makes it variableOr")
    func filterInstructions() throws {
        let program = try compileProgram(specXML("<string keyName=\"u\"/>"),
                                         values: #"{"u": "$(ou|trim|default:none|replace: :-|lower|upper|urlencode)"}"#)
        let key = try #require(program.keys.first { $0.name == "u" })
        #expect(program.instructions[key.startAddress...key.endAddress].map(\.opcode) == [
            .key, .stringBegin, .variableOr, .trim, .replace, .lower, .upper, .urlencode, .stringEnd, .endKey])
        let listing = Disassembler.listing(program)
        #expect(listing.contains("variableOr   s0 $(ou) else t0 \"none\"\n"))
        #expect(listing.contains("replace      t1 \" \" -> t2 \"-\"\n"))
        #expect(listing.contains("  lower\n") && listing.contains("  urlencode\n"))
    }

    @Test("admin values win over defaults; null leaves a key out; a key with neither is left out")
    func effectiveValues() throws {
        let program = try compileProgram(specXML("""
            <integer keyName="a"><defaultValue><value>1</value></defaultValue></integer>
            <integer keyName="b"><defaultValue><value>2</value></defaultValue></integer>
            <integer keyName="c"/>
            <integer keyName="d"><defaultValue><value>4</value></defaultValue></integer>
            """, version: 7), values: #"{"a": 10, "b": null}"#)
        #expect(program.keys.map(\.name) == ["ManagedAppConfigurationVersion", "a", "d"])
        #expect(program.constants.map(\.value).contains(.integer(10)))
        #expect(!program.constants.map(\.value).contains(.integer(1)))
    }

    @Test("policies: nullable keys omit, others fail; --missing and per-key overrides win in that order")
    func policies() throws {
        let body = """
            <string keyName="n"><defaultValue><userVariable value="cn"/></defaultValue><constraint nullable="true"/></string>
            <string keyName="s"><defaultValue><userVariable value="cn"/></defaultValue></string>
            """
        #expect(try compileProgram(specXML(body)).keys.dropFirst().map(\.policy) == [.omit, .fail])
        let global = try compileProgram(specXML(body), options: CompileOptions(missingValuePolicy: .empty))
        #expect(global.keys.dropFirst().map(\.policy) == [.empty, .empty])
        let perKey = try compileProgram(specXML(body), options: CompileOptions(missingValuePolicy: .empty, keyPolicies: ["s": .omit]))
        #expect(perKey.keys.dropFirst().map(\.policy) == [.empty, .omit])
    }

    @Test("equal constants share one binary object class, as plistlib stores them once")
    func constantClasses() throws {
        let program = try compileProgram(specXML("""
            <string keyName="one"><defaultValue><value>one</value></defaultValue></string>
            <integer keyName="x"><defaultValue><value>1</value></defaultValue></integer>
            <float keyName="y"><defaultValue><value>1</value></defaultValue></float>
            <boolean keyName="z"><defaultValue><value>true</value></defaultValue></boolean>
            <floatArray keyName="zeros"><defaultValue><value>0.0</value><value>-0.0</value></defaultValue></floatArray>
            """))
        func cls(_ v: ScalarValue) -> Int? { program.constants.first { $0.value == v }?.dedupClass }
        #expect(cls(.string("one")) == program.constants[program.keys[1].nameConstant].dedupClass)  // key "one" == value "one"
        #expect(cls(.integer(1)) != cls(.float(1)))      // int 1 and real 1.0 are different objects
        #expect(cls(.integer(1)) != cls(.boolean(true))) // and so are 1 and true
        let zeros = program.constants.filter { if case .float(let d) = $0.value { d == 0 } else { false } }
        #expect(zeros.count == 2)                         // written differently in XML...
        #expect(zeros[0].dedupClass == zeros[1].dedupClass)  // ...one object in binary, as plistlib
        #expect(program.metadata.hash == (try compileProgram(specXML("""
            <string keyName="one"><defaultValue><value>one</value></defaultValue></string>
            <integer keyName="x"><defaultValue><value>1</value></defaultValue></integer>
            <float keyName="y"><defaultValue><value>1</value></defaultValue></float>
            <boolean keyName="z"><defaultValue><value>true</value></defaultValue></boolean>
            <floatArray keyName="zeros"><defaultValue><value>0.0</value><value>-0.0</value></defaultValue></floatArray>
            """))).metadata.hash)
    }

    struct Bad: CustomTestStringConvertible, Sendable {
        var name: String
        var spec: Spec
        var options = CompileOptions()
        var code: DiagnosticCode
        var testDescription: String { name }
    }

    static let badCases: [Bad] = [
        Bad(name: "a string literal in an integer key",
            spec: spec([Key(name: "n", type: .integer, location: loc,
                            defaultValue: AssignedValue(items: [.init(.literal(.string("5")), at: loc)], location: loc))]),
            code: .compileType),
        Bad(name: "two values in a scalar key",
            spec: spec([Key(name: "n", type: .integer, location: loc,
                            defaultValue: AssignedValue(items: [.init(.literal(.integer(1)), at: loc), .init(.literal(.integer(2)), at: loc)], location: loc))]),
            code: .compileType),
        Bad(name: "a variable in a date key",
            spec: spec([Key(name: "d", type: .date, location: loc,
                            defaultValue: AssignedValue(items: [.init(.template(StringTemplate(parts: [.variable(.user(.cn))])), at: loc)], location: loc))]),
            code: .compileVariableNotAllowed),
        Bad(name: "a default breaking its constraint",
            spec: spec([Key(name: "n", type: .integer, location: loc,
                            defaultValue: AssignedValue(items: [.init(.literal(.integer(500)), at: loc)], location: loc),
                            constraint: Constraint(max: .integer(100), location: loc))]),
            code: .compileLiteralBreaksConstraint),
        Bad(name: "an array longer than its max",
            spec: spec([Key(name: "l", type: .stringArray, location: loc,
                            defaultValue: AssignedValue(items: Array(repeating: .init(.template(StringTemplate(parts: [.variable(.user(.cn))])), at: loc), count: 3), location: loc),
                            constraint: Constraint(max: .count(2), location: loc))]),
            code: .compileLiteralBreaksConstraint),
        Bad(name: "a policy for an unknown key", spec: spec([Key(name: "k", type: .string, location: loc)]),
            options: CompileOptions(keyPolicies: ["nope": .omit]), code: .compileUnknownPolicyKey),
    ]

    @Test("every compile.* code has a failing case in badCases")
    func everyCompileCodeCovered() {
        let covered = Set(Self.badCases.map(\.code))
        #expect(DiagnosticCode.allCases.filter { $0.rawValue.hasPrefix("compile.") && !covered.contains($0) } == [])
    }

    @Test(arguments: badCases)
    func compileError(_ bad: Bad) {
        #expect {
            try Compiler.compile(bad.spec, options: bad.options)
        } throws: { error in
            let diagnostics = (error as? ProblemList)?.problems ?? []
            return diagnostics.map { $0.code.as(DiagnosticCode.self) } == [bad.code] && diagnostics.allSatisfy { $0.severity == .error }
        }
    }

    @Test("mac.xml's \"Phone Number\" default breaks min=3: a lint warning, a compile error at its line",
          .enabled(if: Paths.hasCorpus, "../shared/corpus is absent"))
    func macPhoneNumber() throws {
        let path = try #require(Paths.corpusFile("specs/jamf-AppConfig-Generator/mac.xml"))
        #expect {
            try Compiler.compile(specFile: path, valuesFile: nil, specOptions: SpecOptions(lenient: true))
        } throws: { error in
            let d = (error as? ProblemList)?.problems ?? []
            return d.map { $0.code.as(DiagnosticCode.self) } == [.keyNameCharacters, .defaultBreaksConstraint, .compileLiteralBreaksConstraint]
                && d.last?.location.line == 75
        }
    }

    @Test("a spec with errors does not compile, and says why")
    func specErrors() throws {
        let dir = try Paths.temporaryDirectory()
        let path = dir.appendingPathComponent("s.xml").path
        try specXML("<integer keyName=\"n\"><defaultValue><value>x</value></defaultValue></integer>")
            .write(toFile: path, atomically: true, encoding: .utf8)
        #expect {
            try Compiler.compile(specFile: path, valuesFile: nil)
        } throws: { error in
            (error as? ProblemList)?.problems.map { $0.code.as(DiagnosticCode.self) } == [.defaultType]
        }
    }
}
