@testable import AppConfigBatch
import AppConfigCompiler
import AppConfigCore
import AppConfigRender
import AppConfigSources
import AppConfigSpec
import Foundation
import Synchronization
import TestSupport
import Testing

/// Assignments end to end: a fleet whose devices match through nested groups (AD's `memberOf` on
/// users and on groups, groupOfNames' `member`, a cycle), multi-valued `memberOf`, an OU, inventory
/// columns and overlaps where order decides; rendered from an LDIF file and from slapd, every plist
/// checked by plistlib (value and bytes) against what each device must get, worked out by hand.
@Suite("Assignments", .serialized)
struct AssignmentTests {
    static let spec = """
        <managedAppConfiguration><version>1</version><bundleId>com.example.assign</bundleId><dict>
        <string keyName="serverURL"><defaultValue><value>https://default.example.com</value></defaultValue></string>
        <integer keyName="sync"><defaultValue><value>60</value></defaultValue></integer>
        <string keyName="label"><defaultValue><value>none</value></defaultValue></string>
        <string keyName="region"/>
        </dict></managedAppConfiguration>
        """

    static let values = """
        {
          "values": { "serverURL": "https://mdm.example.com/$(sAMAccountName)", "sync": 30 },
          "assignments": [
            { "name": "sales", "match": { "group": "CN=Sales, OU=TestGroups, DC=corp, DC=example" }, "values": { "sync": 5, "label": "sales" } },
            { "name": "hq", "match": { "device.Building": "HQ" }, "values": { "serverURL": "https://hq.example.com/$(sAMAccountName)", "label": "hq" } },
            { "name": "pacific-ipads", "match": { "ou": "Pacific", "device.Model": ["iPad", "iPad Pro"] }, "values": { "region": "pacific", "sync": null } },
            { "name": "field", "match": { "group": "Field" }, "values": { "sync": 15 } }
          ]
        }
        """

    /// People under two OUs; groups under a third. Sales and Sales EMEA contain each other (by
    /// `member` and by `memberOf`); Interns sits in Field; Cat is listed with another spelling of her DN.
    static let directory = """
        version: 1
        dn: ou=Pacific,dc=corp,dc=example
        objectClass: organizationalUnit
        ou: Pacific

        dn: ou=Atlantic,dc=corp,dc=example
        objectClass: organizationalUnit
        ou: Atlantic

        dn: ou=TestGroups,dc=corp,dc=example
        objectClass: organizationalUnit
        ou: TestGroups

        \(person("Ann Lee", "ann", "Pacific", memberOf: ["cn=Sales EMEA,ou=TestGroups,dc=corp,dc=example", "cn=Cyclists,ou=TestGroups,dc=corp,dc=example"]))
        \(person("Bob Ray", "bob", "Atlantic"))
        \(person("Cat Kim", "cat", "Atlantic"))
        \(person("Dan Wu", "dan", "Pacific"))
        \(person("Eve Ng", "eve", "Atlantic"))
        \(person("Fay Li", "fay", "Atlantic", memberOf: ["cn=Sales,ou=TestGroups,dc=corp,dc=example"]))
        \(group("Sales", members: ["cn=Sales EMEA,ou=TestGroups,dc=corp,dc=example"], memberOf: ["cn=Sales EMEA,ou=TestGroups,dc=corp,dc=example"]))
        \(group("Sales EMEA", members: ["cn=Sales,ou=TestGroups,dc=corp,dc=example"], memberOf: ["cn=Sales,ou=TestGroups,dc=corp,dc=example"]))
        \(group("Cyclists", members: ["cn=Ann Lee,ou=Pacific,dc=corp,dc=example"]))
        \(group("Field", members: ["cn=Bob Ray,ou=Atlantic,dc=corp,dc=example", "CN=Cat Kim, OU=Atlantic, DC=corp, DC=example",
                                   "cn=Interns,ou=TestGroups,dc=corp,dc=example", "cn=Fay Li,ou=Atlantic,dc=corp,dc=example"]))
        \(group("Interns", members: ["cn=Dan Wu,ou=Pacific,dc=corp,dc=example"]))
        """

    static func person(_ cn: String, _ uid: String, _ ou: String, memberOf: [String] = []) -> String {
        "dn: cn=\(cn),ou=\(ou),dc=corp,dc=example\nobjectClass: inetOrgPerson\nobjectClass: extensibleObject\ncn: \(cn)\nsn: \(cn.split(separator: " ")[1])\n"
            + "uid: \(uid)\nmail: \(uid)@assign.example\n" + memberOf.map { "memberOf: \($0)\n" }.joined()
    }

    static func group(_ cn: String, members: [String], memberOf: [String] = []) -> String {
        "dn: cn=\(cn),ou=TestGroups,dc=corp,dc=example\nobjectClass: groupOfNames\nobjectClass: extensibleObject\ncn: \(cn)\n"
            + members.map { "member: \($0)\n" }.joined() + memberOf.map { "memberOf: \($0)\n" }.joined()
    }

    static let inventory = """
        Serial Number,UDID,Email Address,Building,Model
        SERIAL0001,UDID-1,ann@assign.example,HQ,iPad
        SERIAL0002,UDID-2,bob@assign.example,Annex,iPad Pro
        SERIAL0003,UDID-3,cat@assign.example,hq,iPhone
        SERIAL0004,UDID-4,dan@assign.example,Annex,iPad
        SERIAL0005,UDID-5,eve@assign.example,Annex,iPad
        SERIAL0006,UDID-6,fay@assign.example,HQ,iPhone

        """

    /// Per device: the assignments that apply, and the plist's entries in key order.
    nonisolated(unsafe) static let expected: [(device: String, assignments: [String], entries: [(String, Any)])] = [
        // Sales through Sales EMEA (memberOf, then the group's memberOf); pacific-ipads removes
        // sync after sales set it; hq's label wins over sales' (later in the file).
        ("UDID-1", ["sales", "hq", "pacific-ipads"], [("label", "hq"), ("region", "pacific"), ("serverURL", "https://hq.example.com/ann")]),
        ("UDID-2", ["field"], [("label", "none"), ("serverURL", "https://mdm.example.com/bob"), ("sync", 15)]),
        // Listed in Field by another spelling of her DN; "hq" matches "HQ".
        ("UDID-3", ["hq", "field"], [("label", "hq"), ("serverURL", "https://hq.example.com/cat"), ("sync", 15)]),
        // Field through Interns; field (later) sets sync again after pacific-ipads removed it.
        ("UDID-4", ["pacific-ipads", "field"], [("label", "none"), ("region", "pacific"), ("serverURL", "https://mdm.example.com/dan"), ("sync", 15)]),
        ("UDID-5", [], [("label", "none"), ("serverURL", "https://mdm.example.com/eve"), ("sync", 30)]),
        ("UDID-6", ["sales", "hq", "field"], [("label", "hq"), ("serverURL", "https://hq.example.com/fay"), ("sync", 15)]),
    ]

    struct Files {
        let dir: URL
        var spec: String { dir.appendingPathComponent("spec.xml").path }
        var values: String { dir.appendingPathComponent("values.json").path }
        var inventory: String { dir.appendingPathComponent("inventory.csv").path }
        var directory: String { dir.appendingPathComponent("directory.ldif").path }

        init() throws {
            dir = try Paths.temporaryDirectory()
            try AssignmentTests.spec.write(toFile: spec, atomically: true, encoding: .utf8)
            try AssignmentTests.values.write(toFile: values, atomically: true, encoding: .utf8)
            try AssignmentTests.inventory.write(toFile: inventory, atomically: true, encoding: .utf8)
            try AssignmentTests.directory.write(toFile: directory, atomically: true, encoding: .utf8)
        }
    }

    /// Renders the fleet in both formats from `directory`, and checks every device with plistlib,
    /// the index's and the summary's account of the assignments.
    func renderAndCheck(_ files: Files, directory: FleetSources.Directory) throws {
        var manifest: [[String: Any]] = []
        for format in [OutputFormat.binary, .xml] {
            var job = RenderJob(spec: files.spec, sources: FleetSources(inventory: files.inventory, directory: directory))
            job.values = files.values
            job.batch.format = format
            let out = files.dir.appendingPathComponent("out-\(format.rawValue)").path
            job.output = .directory(out)
            let summary = try job.run()
            #expect(summary.devices.rendered == 6 && summary.failures.isEmpty, "\(summary.failures.map(\.problem))")
            #expect(summary.assignments == ["sales": 2, "hq": 3, "pacific-ipads": 2, "field": 4])
            #expect(summary.variants == 6)
            #expect(summary.seconds[.assign] != nil)
            let index = try String(contentsOfFile: out + "/index.jsonl", encoding: .utf8).split(separator: "\n").map {
                try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any]
            }
            #expect(index.map { $0["device"] as! String } == Self.expected.map(\.device))
            #expect(index.map { $0["assignments"] as! [String] } == Self.expected.map(\.assignments))
            for (line, want) in zip(index, Self.expected) {
                let entries: [(String, Any)] = [("ManagedAppConfigurationVersion", 1)] + want.entries
                manifest.append(["file": out + "/" + (line["path"] as! String), "format": format.rawValue, "bytes_equal": true,
                                 "expected": ["t": "dict", "v": entries.map { key, value in
                                     [key, value is Int ? ["t": "int", "v": value] : ["t": "str", "v": value]] as [Any]
                                 }] as [String: Any]])
            }
        }
        let manifestPath = files.dir.appendingPathComponent("manifest.json").path
        try JSONSerialization.data(withJSONObject: manifest).write(to: URL(fileURLWithPath: manifestPath))
        let python = try #require(which("python3"), "python3 is needed for the plistlib oracle")
        let run = try runProcess(python, [Paths.root.appendingPathComponent("Tests/Oracles/plistlib_oracle.py").path, manifestPath])
        #expect(run.status == 0 && run.stdout.hasSuffix("plistlib oracle: 12 files ok, 0 files wrong\n"), "\(run.stdout)\(run.stderr)")
    }

    @Test("variants are numbered in the order their sets are first met, the empty set 0, up to 65,536 of them")
    func variantNumbers() {
        var numbers = VariantNumbers()
        #expect([0b101, 0, 0b1, 0b101, 1 << 63, 0b1].map { numbers.number(of: $0) } == [1, 0, 2, 1, 3, 2])
        #expect(numbers.sets == [0, 0b101, 0b1, 1 << 63])
        var many = VariantNumbers()
        for set in 1...UInt64(UInt16.max) { #expect(many.number(of: set << 20) == UInt16(set)) }  // grows its table many times
        #expect(many.number(of: 12_345 << 20) == 12_345)
        #expect(many.number(of: 1) == nil)  // a 65,537th set
        #expect(many.sets.count == 65_536)
    }

    @Test("from LDIF: nested groups, a cycle, multi-valued memberOf, an OU, columns and order, checked by plistlib")
    func fromLDIF() throws {
        let files = try Files()
        defer { try? FileManager.default.removeItem(at: files.dir) }
        try renderAndCheck(files, directory: .ldif(files.directory))
    }

    @Test("from slapd: the same fleet added to a real server (targeted user lookups, the group entries searched)",
          .enabled(if: LDAPTestServer.available, "slapd, ldap-utils and openssl are needed (tools/install-deps)"))
    func fromSlapd() throws {
        let files = try Files()
        defer { try? FileManager.default.removeItem(at: files.dir) }
        let server = try LDAPTestServer(users: 20)
        defer { try? server.stop() }
        let ldif = files.dir.appendingPathComponent("add.ldif").path
        try Self.directory.replacingOccurrences(of: "version: 1\n", with: "").write(toFile: ldif, atomically: true, encoding: .utf8)
        let add = try runProcess("/usr/bin/ldapadd", ["-x", "-H", server.url, "-D", "cn=admin,dc=corp,dc=example",
                                                      "-y", server.directory + "/admin.password", "-f", ldif])
        #expect(add.status == 0, "\(add.stderr)")
        var configuration = LDAPConfiguration(url: server.url, base: server.base)
        configuration.bindDN = server.bindDN
        configuration.password = Secret(server.password)
        try renderAndCheck(files, directory: .ldap(configuration))
    }

    @Test("ddm: each device's line of the sink's own index.jsonl names its assignments too")
    func ddmIndex() throws {
        let files = try Files()
        defer { try? FileManager.default.removeItem(at: files.dir) }
        var job = RenderJob(spec: files.spec, sources: FleetSources(inventory: files.inventory, directory: .ldif(files.directory)))
        job.values = files.values
        job.delivery = DeliveryOptions(delivery: .ddm)
        job.delivery.assetBaseURL = "https://cdn.example.com/appconfig"
        let out = files.dir.appendingPathComponent("ddm").path
        job.output = .directory(out)
        #expect(try job.run().devices.rendered == 6)
        let index = try String(contentsOfFile: out + "/index.jsonl", encoding: .utf8).split(separator: "\n").map {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any]
        }
        #expect(index.map { $0["assignments"] as! [String] } == Self.expected.map(\.assignments))
        #expect(index.allSatisfy { $0["declarations"] != nil })
    }

    @Test("the directory's groups: nesting and cycles resolved once, DNs compared in their canonical spelling, cn names every group")
    func groupGraph() throws {
        var map = AttributeMap()
        map.readsGroups = true
        let users = try LDIFReader.read(Array(Self.directory.utf8), file: "d.ldif", map: map)
        let groups = try #require(users.groups)
        #expect(groups.groupEntries == 5)
        #expect(users.problems.isEmpty)
        let names = ["Sales", "cn=sales emea,ou=testgroups,dc=corp,dc=example", "Field", "Cyclists", "Nobody"]
        let bits = groups.memberships(of: names, userCount: users.count)
        func member(_ uid: String) -> [String] {
            let u = users.user(forKey: "\(uid)@assign.example")!
            return names.indices.filter { bits[u] & (1 << UInt64($0)) != 0 }.map { names[$0] }
        }
        #expect(member("ann") == ["Sales", "cn=sales emea,ou=testgroups,dc=corp,dc=example", "Cyclists"])
        #expect(member("bob") == ["Field"])
        #expect(member("cat") == ["Field"])
        #expect(member("dan") == ["Field"])
        #expect(member("eve") == [])
        #expect(member("fay") == ["Sales", "cn=sales emea,ou=testgroups,dc=corp,dc=example", "Field"])
        #expect(groups.groups(named: "Nobody").isEmpty)
        // Read in parts (as a large file is), the same memberships.
        for parts in 2...4 {
            let split = try LDIFReader.read(Array(Self.directory.utf8), file: "d.ldif", map: map, parts: parts)
            #expect(split.count == users.count && split.problems == users.problems)
            #expect(try #require(split.groups).memberships(of: names, userCount: split.count) == bits, "\(parts) parts")
            #expect(split.groups?.groupEntries == 5)
        }
        // Without the flag nothing is collected.
        #expect(try LDIFReader.read(Array(Self.directory.utf8), file: "d.ldif").groups == nil)
    }

    @Test("sources the assignments cannot be matched against: an unknown column, groups without a directory, an unknown group")
    func unmatchableSources() throws {
        let files = try Files()
        defer { try? FileManager.default.removeItem(at: files.dir) }
        func run(values: String, directory: FleetSources.Directory?) throws -> (RunSummary, [Problem]) {
            try values.write(toFile: files.values, atomically: true, encoding: .utf8)
            var job = RenderJob(spec: files.spec, sources: FleetSources(inventory: files.inventory, directory: directory))
            job.values = files.values
            let warnings = Mutex<[Problem]>([])
            var observer = RenderJob.Observer()
            observer.warning = { p in warnings.withLock { $0.append(p) } }
            let summary = try job.run(observer: observer)
            return (summary, warnings.withLock { $0 })
        }
        func values(_ match: String) -> String {
            #"{"values": {}, "assignments": [{"name": "a", "match": \#(match), "values": {"sync": 1}}]}"#
        }
        #expect(throws: Problem(SourceCode.csvUnknownColumn, at: Location(file: files.values, line: 1, column: 56),
                                "assignment \"a\" matches on device.Floor, but \(files.inventory) has no column \"Floor\"")) {
            try run(values: values(#"{"device.Floor": "3"}"#), directory: .ldif(files.directory))
        }
        #expect(throws: Problem(JobCode.assignmentMatch, at: Location(file: files.values, line: 1, column: 56),
                                "assignment \"a\" matches on groups, which come from a directory: give --directory")) {
            try run(values: values(#"{"group": "Sales"}"#), directory: nil)
        }
        let (summary, warnings) = try run(values: values(#"{"group": "Sailors"}"#), directory: .ldif(files.directory))
        #expect(warnings.filter { !$0.code.rawValue.hasPrefix("inventory.") }.map(\.message) == ["assignment \"a\": the directory (\(files.directory)) holds no group \"Sailors\"; no device matches through it",
                                           "assignment \"a\" matches no device"])
        #expect(summary.assignments == ["a": 0])
        #expect(summary.variants == 1)
    }

    @Test("not, contains (a list column), matches (PCRE2), not in a group, exclude; an assignment matching nothing is named with the values seen")
    func conditionTests() throws {
        let files = try Files()
        defer { try? FileManager.default.removeItem(at: files.dir) }
        try """
            Serial Number,UDID,Email Address,Building,Model,MemberOf
            SERIAL0001,UDID-1,ann@assign.example,HQ,iPad,"Staff, Teachers"
            SERIAL0002,UDID-2,bob@assign.example,Annex,iPad Pro,Students
            SERIAL0003,UDID-3,cat@assign.example,hq,iPhone,Staff;Student Teachers
            SERIAL0004,UDID-4,dan@assign.example,Annex,Mac,
            SERIAL0005,UDID-5,eve@assign.example,Annex,VirtualMac2,
            SERIAL0006,UDID-6,fay@assign.example,HQ,iPhone,teachers

            """.write(toFile: files.inventory, atomically: true, encoding: .utf8)
        try """
            {
              "values": { "serverURL": "https://mdm.example.com/$(sAMAccountName)" },
              "exclude": [{ "device.Model": "Mac" }, { "device.Model": { "matches": "^Virtual" } }],
              "assignments": [
                { "name": "teachers", "match": { "device.MemberOf": { "contains": "Teachers" } }, "values": { "label": "teachers" } },
                { "name": "not-hq", "match": { "device.Building": { "not": "HQ" } }, "values": { "region": "annex" } },
                { "name": "not-sales", "match": { "group": { "not": "Sales" } }, "values": { "sync": 7 } },
                { "name": "ipads", "match": { "device.Model": { "matches": ["^iPad", "^Tablet"] } }, "values": { "serverURL": "https://ipad.example.com" } },
                { "name": "typo", "match": { "device.Building": "Anex" }, "values": { "sync": 1 } }
              ]
            }
            """.write(toFile: files.values, atomically: true, encoding: .utf8)
        var job = RenderJob(spec: files.spec, sources: FleetSources(inventory: files.inventory, directory: .ldif(files.directory)))
        job.values = files.values
        let out = files.dir.appendingPathComponent("out").path
        job.output = .directory(out)
        let warnings = Mutex<[Problem]>([])
        var observer = RenderJob.Observer()
        observer.warning = { p in warnings.withLock { $0.append(p) } }
        let summary = try job.run(observer: observer)
        #expect((summary.devices.rendered, summary.devices.excluded, summary.devices.failed) == (4, 2, 0))
        #expect(summary.assignments == ["teachers": 2, "not-hq": 1, "not-sales": 2, "ipads": 2, "typo": 0])
        let index = try String(contentsOfFile: out + "/index.jsonl", encoding: .utf8).split(separator: "\n").map {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any]
        }
        // "Student Teachers" is not "Teachers"; "hq" is HQ; Ann and Fay are in Sales (Ann through Sales EMEA).
        #expect(index.map { $0["device"] as! String } == ["UDID-1", "UDID-2", "UDID-3", "UDID-6"])
        #expect(index.map { $0["assignments"] as! [String] } == [["teachers", "ipads"], ["not-hq", "not-sales", "ipads"], ["not-sales"], ["teachers"]])
        let noMatch = warnings.withLock { $0 }.filter { $0.code == JobCode.assignmentNoMatch }
        #expect(noMatch.map(\.message) == ["assignment \"typo\" matches no device: device.Building \"Anex\" is not among the values seen (Annex, HQ, hq); did you mean \"Annex\"?"])
        #expect(noMatch.first?.location.line == 9)
        // The same tests for one device in compile's preview.
        let values = AdminValuesReader.read(try Array(Data(contentsOf: URL(fileURLWithPath: files.values))), file: files.values,
                                            spec: try #require(SpecParser.parse(Array(AssignmentTests.spec.utf8), file: "s.xml").spec)).values
        let assignments = values.assignments
        let device: [Variable: String] = [.deviceAttribute("MemberOf"): "Staff; teachers", .deviceAttribute("Building"): "Annex", .deviceAttribute("Model"): "iPad Air"]
        #expect(assignments.filter { $0.matches(variables: device, groups: ["Field"]) }.map(\.name) == ["teachers", "not-hq", "not-sales", "ipads"])
        #expect(assignments.filter { $0.matches(variables: device, groups: ["Sales"]) }.map(\.name) == ["teachers", "not-hq", "ipads"])
    }

    @Test("compile --disasm lists every assignment's variant; --var with groups picks and names the device's assignments")
    func compilePreview() throws {
        let files = try Files()
        defer { try? FileManager.default.removeItem(at: files.dir) }
        let disasm = try appconfig(["compile", files.spec, "--values", files.values, "--disasm"])
        #expect(disasm.status == 0, "\(disasm.stderr)")
        let headers = disasm.stdout.split(separator: "\n").filter { $0.hasPrefix("; variant") }
        #expect(headers == ["; variant: no assignment", "; variant: assignment \"sales\" (line 4)", "; variant: assignment \"hq\" (line 5)",
                            "; variant: assignment \"pacific-ipads\" (line 6)", "; variant: assignment \"field\" (line 7)"])
        let preview = try appconfig(["compile", files.spec, "--values", files.values, "--var", "sAMAccountName=dan",
                                                            "--var", "ou=pacific", "--var", "device.Model=ipad", "--var", "group=cn=Field,ou=TestGroups,dc=corp,dc=example",
                                                            "--var", "device.Building=Annex"])
        #expect(preview.status == 0, "\(preview.stderr)")
        #expect(preview.stderr == "assignments: pacific-ipads, field\n")
        #expect(preview.stdout.contains("<key>region</key>\n\t<string>pacific</string>"))
        #expect(preview.stdout.contains("<key>sync</key>\n\t<integer>15</integer>"))
    }
}
