import Foundation
import TestSupport
import Testing

/// `appconfig lint` through the built binary: output formats and exit statuses are the interface.
@Suite("appconfig lint, end to end")
struct LintCommandTests {
    func appconfig(_ arguments: String...) throws -> ProcessResult {
        try AppConfigCLITests.appconfig(arguments)
    }

    @Test func cleanSpecExitsZero() throws {
        let r = try appconfig("lint", Paths.fixture("reference/example.xml"), Paths.fixture("demo/spec.xml"))
        #expect(r.status == 0)
        #expect(r.stdout == "2 files checked: 0 errors, 0 warnings\n")
        #expect(r.stderr.isEmpty)
    }

    @Test func errorsExitOneInCompilerStyle() throws {
        try withTemporaryDirectory { dir in
            let spec = dir.path("bad.xml")
            try """
                <managedAppConfiguration>
                  <version>1</version>
                  <bundleId>com.example.app</bundleId>
                  <dict>
                    <string keyName="k">
                      <constraints nullable="true"/>
                    </string>
                    <integer keyName="n"><defaultValue><value>20</value></defaultValue><constraint max="10"/></integer>
                  </dict>
                </managedAppConfiguration>
                """.write(toFile: spec, atomically: true, encoding: .utf8)
            let r = try appconfig("lint", spec)
            #expect(r.status == 1)
            #expect(r.stdout == """
                \(spec):6:7: error: <constraints> is not an element of <string> [structure.unknown-element]
                    hint: did you mean <constraint>?
                \(spec):8:26: warning: the default of "n" breaks its own constraint: 20 is greater than max 10 [default.breaks-constraint]
                1 file checked: 1 error, 1 warning

                """)
            let lenient = try appconfig("lint", "--lenient", spec)
            #expect(lenient.status == 0)
        }
    }

    @Test("--format json: an array of objects with exactly file, line, column, severity, code, message")
    func json() throws {
        let example = Paths.fixture("demo/spec.xml")
        try withTemporaryDirectory { dir in
            let values = dir.path("v.json")
            try "{\n  \"theme\": \"neon\",\n  \"serverURL\": \"https://$(mail)\"\n}".write(toFile: values, atomically: true, encoding: .utf8)
            let r = try appconfig("lint", example, "--values", values, "--format", "json")
            #expect(r.status == 1)
            let parsed = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [[String: Any]]
            let objects = try #require(parsed)
            #expect(objects.count == 2)
            for object in objects {
                #expect(Set(object.keys) == ["file", "line", "column", "severity", "code", "message"])
            }
            #expect(objects.map { $0["code"] as? String } == ["values.constraint", "values.variable-unknown"])
            #expect(objects.map { $0["line"] as? Int } == [2, 3])
            #expect(objects.map { $0["column"] as? Int } == [12, 16])
            #expect(objects.map { $0["file"] as? String } == [values, values])
            #expect(objects.map { $0["severity"] as? String } == ["error", "error"])
        }
    }

    @Test func emptyJSONArrayWhenClean() throws {
        let r = try appconfig("lint", "--format", "json", Paths.fixture("reference/example.xml"))
        #expect(r.status == 0)
        #expect(r.stdout == "[]\n")
    }

    @Test("a missing file is an I/O problem: one clear line and exit status 2")
    func missingFile() throws {
        let r = try appconfig("lint", Paths.fixture("reference/example.xml"), "/nonexistent/spec.xml")
        #expect(r.status == 2)
        #expect(r.stderr == "appconfig: cannot read /nonexistent/spec.xml: No such file or directory\n")
    }

    @Test(arguments: [["lint"], ["lint", "a.xml", "b.xml", "--values", "v.json"], ["lint", "--format", "yaml", "a.xml"], ["frobnicate"]])
    func usageErrorsExitTwo(arguments: [String]) throws {
        let r = try AppConfigCLITests.appconfig(arguments)
        #expect(r.status == 2)
        #expect(r.stderr.contains("Error:") || r.stderr.contains("Usage:"), "\(r.stderr)")
    }

    @Test func helpExitsZero() throws {
        let r = try appconfig("lint", "--help")
        #expect(r.status == 0)
        #expect(r.stdout.contains("--lenient"))
    }
}
