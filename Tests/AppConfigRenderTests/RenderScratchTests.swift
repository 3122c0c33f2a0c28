import AppConfigCompiler
import CompileSupport
import AppConfigCore
@testable import AppConfigRender
import AppConfigSpec
import LibPlist
import Testing

/// Renderers of different programs that share one set of per-device buffers (a worker's renderers
/// of a job's variants) write, device after device in any order, the bytes that renderers of their
/// own write, and report the same problems.
@Suite("Renderers sharing a scratch")
struct RenderScratchTests {
    /// Two programs of different sizes: the second (the fixed layout's tests') has more keys,
    /// strings and constants than the first.
    static let small = specXML("""
        <string keyName="email"><defaultValue><userVariable value="emailAddress"/></defaultValue></string>
        <string keyName="code"><defaultValue><userVariable value="cn"/></defaultValue><constraint pattern="^[A-Z][a-z]+$"/></string>
        """)
    static let large = FixedLayoutTests.spec

    static func device(_ email: String, cn: String, ou: String?, serial: String) -> [Variable: String] {
        FixedLayoutTests.device(email, cn: cn, ou: ou, serial: serial)
    }

    /// (program: 0 small, 1 large; the device), in the order rendered: the programs alternate, a
    /// device fails its pattern between good ones, strings are equal to constants or to each other.
    static let devices: [(Int, [Variable: String])] = [
        (1, device("a@x.example", cn: "Ann", ou: "Sales", serial: "S1")),
        (0, device("b@x.example", cn: "Bob", ou: "R&D", serial: "S2")),
        (0, device("c@x.example", cn: "c0", ou: "R&D", serial: "S3")),
        (1, device("zoë@x.example", cn: "Łukasz 東京", ou: nil, serial: "S4")),
        (0, device("d@x.example", cn: "Dee", ou: nil, serial: "S5")),
        (1, device("e@x.example", cn: "Eve", ou: "blue", serial: "fixed")),
        (1, device(String(repeating: "f", count: 300) + "@x", cn: "Fay", ou: "Fay", serial: "S6")),
        (0, device("g@x.example", cn: "Gus", ou: "Ops", serial: "S7")),
    ]

    @Test("each device's bytes and problems as a renderer of its own makes them", arguments: [OutputFormat.binary, .xml])
    func sameAsAlone(format: OutputFormat) throws {
        let images = [ProgramImage(try compileProgram(Self.small)), ProgramImage(try compileProgram(Self.large))]
        let scratch = RenderScratch(for: images.map(\.program))
        let shared = images.map { Renderer(image: $0, format: format, scratch: scratch) }
        let alone = images.map { Renderer(image: $0, format: format) }
        var failed = 0
        for (n, (program, device)) in Self.devices.enumerated() {
            let expected = Result { () throws(Problem) in try alone[program].renderCopy(device) }
            let got = Result { () throws(Problem) in try shared[program].renderCopy(device) }
            switch (expected, got) {
            case (.success(let e), .success(let g)):
                #expect(g == e, "device \(n): the bytes differ")
                _ = try LibPlist.decode(g)
            case (.failure(let e), .failure(let g)):
                #expect(g == e, "device \(n): the problem differs")
                #expect(shared[program].deviceProblems == alone[program].deviceProblems)
                failed += 1
            default:
                Issue.record("device \(n): \(expected) alone, \(got) sharing")
            }
        }
        #expect(failed == 1, "the device whose cn does not match the pattern fails, and only it")
    }
}
