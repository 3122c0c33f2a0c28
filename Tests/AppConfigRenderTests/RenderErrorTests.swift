import AppConfigCompiler
import CompileSupport
import AppConfigCore
import AppConfigRender
import AppConfigSpec
import LibPlist
import Testing

/// Checks on resolved values and missing-value policies, per device, asserted by exact code.
@Suite("Render-time checks and errors")
struct RenderErrorTests {
    static let spec = specXML("""
        <string keyName="email"><defaultValue><userVariable value="emailAddress"/></defaultValue><constraint pattern="@corp\\.example$"/></string>
        <string keyName="short"><defaultValue><userVariable value="cn"/></defaultValue><constraint min="2" max="5"/></string>
        <string keyName="color"><defaultValue><userVariable value="ou"/></defaultValue><constraint nullable="true"><values><value>red</value><value>blue</value></values></constraint></string>
        <string keyName="note"><defaultValue><userVariable value="displayName"/></defaultValue><constraint nullable="true"/></string>
        <stringArray keyName="ids"><defaultValue><deviceVariable value="serialNumber"/><value>fixed</value></defaultValue><constraint pattern="^[A-Z0-9]+$"/></stringArray>
        <string keyName="evil"><defaultValue><userVariable value="firstName"/></defaultValue><constraint nullable="true" pattern="(a+)+$"/></string>
        """)

    static let good: [Variable: String] = [.user(.emailAddress): "jdoe@corp.example", .user(.cn): "Jo", .user(.ou): "red",
                                           .user(.displayName): "hi", .device(.serialNumber): "ABC123", .user(.firstName): "aaa"]

    func render(_ device: [Variable: String], format: OutputFormat = .binary, options: CompileOptions = CompileOptions()) throws -> Result<[UInt8], Problem> {
        let renderer = Renderer(image: ProgramImage(try compileProgram(Self.spec, options: options)), format: format)
        do throws(Problem) {
            return .success(try renderer.renderCopy(device) { v in
                v == .device(.serialNumber) ? Location(file: "inventory.csv", line: 7) : Location(file: "inventory.csv", line: 7, dn: "CN=Jo,OU=X,DC=corp")
            })
        } catch {
            return .failure(error)
        }
    }

    func failure(_ device: [Variable: String], format: OutputFormat = .binary) throws -> Problem? {
        if case .failure(let e) = try render(device, format: format) { return e }
        return nil
    }

    func with(_ changes: [Variable: String?]) -> [Variable: String] {
        var d = Self.good
        for (k, v) in changes { d[k] = v }
        return d
    }

    @Test func goodDeviceRenders() throws {
        let bytes = try render(Self.good).get()
        let decoded = try LibPlist.decode(bytes)
        #expect(decoded["ids"] == .array([.string("ABC123"), .string("fixed")]))
        #expect(decoded["color"] == .string("red"))
    }

    struct Bad: CustomTestStringConvertible, Sendable {
        var name: String
        var changes: [Variable: String?]
        var code: DeviceCode
        var key: String
        var variable: Variable?
        var value: String?
        var source: String?
        var testDescription: String { name }
    }

    @Test(arguments: [
        Bad(name: "missing, not nullable", changes: [.user(.emailAddress): nil], code: .missingVariable, key: "email",
            variable: .user(.emailAddress), value: nil, source: "CN=Jo,OU=X,DC=corp"),
        Bad(name: "empty counts as missing", changes: [.device(.serialNumber): ""], code: .missingVariable, key: "ids",
            variable: .device(.serialNumber), value: nil, source: "inventory.csv:7"),
        Bad(name: "pattern", changes: [.user(.emailAddress): "jdoe@other.example"], code: .pattern, key: "email",
            variable: .user(.emailAddress), value: "jdoe@other.example", source: "CN=Jo,OU=X,DC=corp"),
        Bad(name: "pattern on an array element", changes: [.device(.serialNumber): "abc-1"], code: .pattern, key: "ids",
            variable: .device(.serialNumber), value: "abc-1", source: "inventory.csv:7"),
        Bad(name: "too short", changes: [.user(.cn): "J"], code: .length, key: "short", variable: .user(.cn), value: "J", source: "CN=Jo,OU=X,DC=corp"),
        Bad(name: "too long in UTF-16 units (an emoji is 2)", changes: [.user(.cn): "ab😀cd"], code: .length, key: "short",
            variable: .user(.cn), value: "ab😀cd", source: "CN=Jo,OU=X,DC=corp"),
        Bad(name: "not one of the values", changes: [.user(.ou): "green"], code: .valueNotAllowed, key: "color",
            variable: .user(.ou), value: "green", source: "CN=Jo,OU=X,DC=corp"),
        Bad(name: "a hostile pattern hits the match limit", changes: [.user(.firstName): String(repeating: "a", count: 40) + "!"],
            code: .patternLimit, key: "evil", variable: .user(.firstName), value: String(repeating: "a", count: 40) + "!", source: "CN=Jo,OU=X,DC=corp"),
    ])
    func deviceError(_ bad: Bad) throws {
        let error = try #require(try failure(with(bad.changes)))
        #expect(error.code == bad.code)
        #expect(error.location.key == bad.key)
        #expect(error.variable == bad.variable)
        #expect(error.value == bad.value)
        #expect(error.location.place == bad.source)
    }

    @Test("a length within bounds counts UTF-16 units: 'ab😀c' is 5")
    func utf16Length() throws {
        #expect(try failure(with([.user(.cn): "ab😀c"])) == nil)
    }

    @Test("nullable keys are left out when their variable is missing or empty")
    func nullableOmits() throws {
        let bytes = try render(with([.user(.ou): nil, .user(.displayName): ""])).get()
        let decoded = try LibPlist.decode(bytes)
        #expect(decoded["color"] == nil)
        #expect(decoded["note"] == nil)
        #expect(decoded["email"] == .string("jdoe@corp.example"))
    }

    @Test("policy empty: the variable counts as \"\" and the checks still run")
    func emptyPolicy() throws {
        let options = CompileOptions(keyPolicies: ["note": .empty, "short": .empty])
        let ok = try render(with([.user(.displayName): nil]), options: options).get()
        #expect(try LibPlist.decode(ok)["note"] == .string(""))
        guard case .failure(let e) = try render(with([.user(.cn): nil]), options: options) else { Issue.record("expected a length error"); return }
        #expect(e.code == .length)
    }

    @Test("policy omit on a non-nullable key, and fail on a nullable one")
    func overrides() throws {
        let omit = try render(with([.user(.emailAddress): nil]), options: CompileOptions(keyPolicies: ["email": .omit])).get()
        #expect(try LibPlist.decode(omit)["email"] == nil)
        guard case .failure(let e) = try render(with([.user(.ou): nil]), options: CompileOptions(missingValuePolicy: .fail)) else {
            Issue.record("expected a missing-variable error"); return
        }
        #expect(e.code == .missingVariable && e.location.key == "color")
    }

    @Test("U+0001 from a directory: a device error in XML, carried in binary")
    func xmlCharacter() throws {
        let device = with([.user(.displayName): "bell\u{1}"])
        let error = try #require(try failure(device, format: .xml))
        #expect(error.code == .xmlCharacter)
        #expect(error.location.key == "note")
        let binary = try render(device, format: .binary).get()
        #expect(try LibPlist.decode(binary)["note"] == .string("bell\u{1}"))
    }

    @Test("a constant XML cannot carry: XML devices fail, binary carries it")
    func xmlCharacterConstant() throws {
        let program = try compileProgram(specXML("<string keyName=\"k\"/>"), values: #"{"k": "a\u0002b"}"#)
        let image = ProgramImage(program)
        #expect { try Renderer(image: image, format: .xml).renderCopy([:]) } throws: {
            ($0 as? Problem)?.code.as(DeviceCode.self) == .xmlCharacter && ($0 as? Problem)?.location.key == "k"
        }
        let bytes = try Renderer(image: image, format: .binary).renderCopy([:])
        #expect(try LibPlist.decode(bytes)["k"] == .string("a\u{2}b"))
    }

    @Test("bytes that are not UTF-8 fail the device")
    func invalidUTF8() throws {
        let program = try compileProgram(Self.spec)
        let renderer = Renderer(image: ProgramImage(program), format: .binary)
        var storage: [[UInt8]] = program.slots.map { Array((Self.good[$0] ?? "").utf8) }
        storage[program.slots.firstIndex(of: .user(.displayName))!] = [0x68, 0xC3, 0x28]
        let joined = storage.flatMap { $0 }
        let starts = storage.reduce(into: [0]) { $0.append($0.last! + $1.count) }
        #expect {
            try joined.withView { bytes in
                let slots = storage.indices.map { SlotValue(bytes[view: starts[$0]..<starts[$0 + 1]]) }
                return try slots.withView { try renderer.render($0) }
            }
        } throws: { ($0 as? Problem)?.code.as(DeviceCode.self) == .invalidUTF8 && ($0 as? Problem)?.location.key == "note" }
    }

    @Test("after a failed device the next one renders whole: nothing carries over")
    func noLeftovers() throws {
        let program = try compileProgram(Self.spec)
        for format in OutputFormat.allCases {
            let renderer = Renderer(image: ProgramImage(program), format: format)
            let clean = try renderer.renderCopy(Self.good)
            #expect { try renderer.renderCopy(with([.user(.ou): "green"])) } throws: { ($0 as? Problem)?.code.as(DeviceCode.self) == .valueNotAllowed }
            #expect(try renderer.renderCopy(Self.good) == clean)
            #expect(try Renderer(image: ProgramImage(program), format: format).renderCopy(Self.good) == clean)
        }
    }

    @Test("a device is checked whole: every failing key and every missing variable, in key order; the next device starts clean")
    func everyProblemOfADevice() throws {
        let program = try compileProgram(specXML("""
            <string keyName="a"/><string keyName="b"><constraint pattern="^x"/></string>
            <stringArray keyName="c"><constraint pattern="^[0-9]+$"/></stringArray><string keyName="d"/>
            """), values: #"{"a": "$(ou)-$(cn)", "b": "$(firstName)", "c": ["$(lastName)", "1", "$(locale)"], "d": "ok"}"#)
        let renderer = Renderer(image: ProgramImage(program), format: .binary)
        let thrown = #expect(throws: Problem.self) { try renderer.renderCopy([.user(.firstName): "nope", .user(.lastName): "x9"]) }
        #expect(thrown == renderer.deviceProblems.first)  // the first of them is what render throws
        #expect(renderer.deviceProblems.map { "\($0.location.key ?? "") \($0.code.rawValue) \($0.variable?.description ?? "")" } == [
            "a device.missing-variable ou", "a device.missing-variable cn", "b device.pattern firstName",
            "c device.pattern lastName", "c device.missing-variable locale",
        ])
        let fine = try renderer.renderCopy([.user(.ou): "o", .user(.cn): "c", .user(.firstName): "xyz", .user(.lastName): "1", .user(.locale): "2"])
        #expect(renderer.deviceProblems.isEmpty)
        #expect(try LibPlist.decode(fine)["c"] == .array([.string("1"), .string("1"), .string("2")]))
    }
}
