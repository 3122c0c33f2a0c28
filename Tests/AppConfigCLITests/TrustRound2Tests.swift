@testable import AppConfigBatch
import AppConfigCore
import AppConfigSources
import AppConfigSpec
import Foundation
import Synchronization
import TestSupport
import Testing

/// Issue 54's silently wrong outputs, each on the input the probe used.
@Suite("Trust what it read, round 2: no silent wrong values")
struct TrustRound2Tests {
    static let spec = """
        <managedAppConfiguration><version>1</version><bundleId>com.example.school</bundleId><dict>
        <string keyName="label"><defaultValue><value>base</value></defaultValue></string>
        <string keyName="user"><defaultValue><value>$(sAMAccountName)</value></defaultValue><constraint nullable="true"/></string>
        </dict></managedAppConfiguration>
        """

    /// Runs a job in process, collecting its warnings.
    static func run(_ job: RenderJob) throws -> (RunSummary, [Problem]) {
        let warnings = Mutex<[Problem]>([])
        var observer = RenderJob.Observer()
        observer.warning = { p in warnings.withLock { $0.append(p) } }
        let summary = try job.run(observer: observer)
        return (summary, warnings.withLock { $0 })
    }

    @Test("2. contains on Jamf School's bracketed MemberOf finds the last group too; the no-match hint lists whole group names")
    func jamfSchoolMemberOf() throws {
        try withTemporaryDirectory { dir in
            let spec = try dir.write(Self.spec, to: "spec.xml")
            // Jamf School's export: the owner's columns, MemberOf as "[a,b,c]" (a group name may hold brackets).
            var csv = "Name,SerialNumber,UDID,OwnerEmail,OwnerUsername,OwnerName,MemberOf\n"
            let lists = ["[[District] All iPads,Grade 7,Office Apps]", "[Office Apps]", "[Grade 7,Office Apps,Coding Club]", "[[District] All iPads]"]
            for n in 0..<14 {
                csv += "iPad \(n),SER\(String(format: "%08d", n)),UDID-\(n),s\(n)@school.example,s\(n),Student \(n),\"\(lists[n % 4])\"\n"
            }
            let inventory = try dir.write(csv, to: "jamf-school.csv")
            let values = try dir.write("""
                {"values": {"label": "base"},
                 "assignments": [{"name": "office", "match": {"device.MemberOf": {"contains": "Office Apps"}}, "values": {"label": "office"}},
                                 {"name": "district", "match": {"device.MemberOf": {"contains": "[District] All iPads"}}, "values": {"label": "district"}},
                                 {"name": "coding", "match": {"device.MemberOf": {"contains": "Coding"}}, "values": {"label": "coding"}}]}
                """, to: "values.json")
            var job = RenderJob(spec: spec, sources: FleetSources(inventory: inventory))
            job.values = values
            job.output = .dryRun
            let (summary, warnings) = try Self.run(job)
            // Office Apps: lists 0, 1 and 2 (11 of 14 devices), the last item of two of them.
            #expect(summary.assignments?["office"] == 11)
            #expect(summary.assignments?["district"] == 7)
            let hint = try #require(warnings.first { $0.code == JobCode.assignmentNoMatch }?.message)
            // The values seen are whole group names, never a bracket's half ("Coding]", "[[District] All iPads").
            #expect(hint.hasSuffix("is not among the values seen (Coding Club, Grade 7, Office Apps, [District] All iPads)"), "\(hint)")
        }
    }

    @Test("3. a vendor's non-nullable keys with empty defaults (Wandera's customerId, secretKey, apiKey) left out: a lint error, and the render refuses")
    func emptyRequiredKeys() throws {
        try withTemporaryDirectory { dir in
            let spec = try dir.write("""
                <managedAppConfiguration><version>1</version><bundleId>com.wandera.ios</bundleId><dict>
                <string keyName="customerId"><defaultValue><value></value></defaultValue><constraint nullable="false"/></string>
                <string keyName="secretKey"><defaultValue><value></value></defaultValue><constraint nullable="false"/></string>
                <string keyName="apiKey"><defaultValue><value></value></defaultValue><constraint nullable="false"/></string>
                <string keyName="userEmail"><defaultValue><value>$(emailAddress)</value></defaultValue><constraint nullable="true"/></string>
                </dict></managedAppConfiguration>
                """, to: "wandera.xml")
            let values = try dir.write(#"{"userEmail": "$(emailAddress)", "apiKey": ""}"#, to: "values.json")
            let lint = try runProcess(Paths.appconfigBinary, ["lint", spec, "--values", values])
            #expect(lint.status == 1)
            for key in ["customerId", "secretKey"] {
                #expect(lint.stdout.contains("\(values):1:1: error: \"\(key)\" may not be empty (its constraint is nullable=\"false\") and its default is empty: the values must give it one (the app's vendor asks for it) [values.required-empty]"), "\(lint.stdout)")
            }
            #expect(lint.stdout.contains("error: \"apiKey\" may not be empty (its constraint is nullable=\"false\"): give it a value [values.required-empty]"), "\(lint.stdout)")
            let given = try dir.write(#"{"userEmail": "$(emailAddress)", "apiKey": "k", "customerId": "c", "secretKey": "$(sAMAccountName)"}"#, to: "given.json")
            #expect(try runProcess(Paths.appconfigBinary, ["lint", spec, "--values", given]).status == 0)
            let render = try runProcess(Paths.appconfigBinary, ["render", "--spec", spec, "--values", values, "--inventory", Paths.fixture("demo/inventory.csv"),
                                                                "--directory", Paths.fixture("demo/directory.ldif"), "--dry-run"])
            #expect(render.status == 1, "\(render.stderr)")
            #expect(render.stderr.contains("[values.required-empty]"))
        }
    }

    @Test("4. a Workspace ONE export's Username feeds $(sAMAccountName) ({EnrollmentUser}); a variable no device has is a warning")
    func ws1Username() throws {
        try withTemporaryDirectory { dir in
            let spec = try dir.write(Self.spec, to: "spec.xml")
            var csv = "Friendly Name,Serial Number,UDID,Username,Email Address,Model\n"
            for n in 0..<40 { csv += "iPad \(n),SER\(String(format: "%08d", n)),UDID-\(n),user\(n),user\(n)@corp.example,iPad\n" }
            let inventory = try dir.write(csv, to: "ws1.csv")
            let values = try dir.write(#"{"label": "base", "user": "$(sAMAccountName)"}"#, to: "values.json")
            var job = RenderJob(spec: spec, sources: FleetSources(inventory: inventory))
            job.values = values
            let out = dir.path("out")
            job.output = .directory(out)
            let (summary, warnings) = try Self.run(job)
            #expect(summary.devices.rendered == 40)
            #expect(!warnings.contains { $0.code == JobCode.variableMissingEverywhere }, "\(warnings)")
            let plist = try Data(contentsOf: URL(fileURLWithPath: out + "/" + (try FileManager.default.subpathsOfDirectory(atPath: out + "/").first { $0.hasSuffix("UDID-7.plist") }!)))
            let decoded = try PropertyListSerialization.propertyList(from: plist, format: nil) as! [String: Any]
            #expect(decoded["user"] as? String == "user7")
            // A variable no column gives: a warning naming it, not silence.
            let missing = try dir.write(#"{"label": "base", "user": "$(upn)"}"#, to: "missing.json")
            job.values = missing
            job.output = .dryRun
            let (_, warned) = try Self.run(job)
            let warning = try #require(warned.first { $0.code == JobCode.variableMissingEverywhere })
            #expect(warning.message.hasPrefix("$(upn) is missing on every device (40)"), "\(warning.message)")
        }
    }

    @Test("5. a shifted export (every Email Address value a battery level) is refused unless --allow-suspect")
    func shiftedExport() throws {
        try withTemporaryDirectory { dir in
            let spec = try dir.write(Self.spec, to: "spec.xml")
            var csv = "Display Name,Serial Number,UDID,Email Address,Username,Last Inventory Update\n"
            for n in 0..<20 { csv += "iPad \(n),SER\(String(format: "%08d", n)),UDID-\(n),\(n * 5),user\(n),2026-11-01\n" }
            let inventory = try dir.write(csv, to: "jamf-pro.csv")
            let values = try dir.write(#"{"label": "$(emailAddress)"}"#, to: "values.json")
            let args = ["render", "--spec", spec, "--values", values, "--inventory", inventory, "--dry-run"]
            let r = try runProcess(Paths.appconfigBinary, args)
            #expect(r.status == 1)
            #expect(r.stderr.contains("error: column \"Email Address\" (emailAddress): all 20 of 20 values do not look like email addresses"), "\(r.stderr)")
            let allowed = try runProcess(Paths.appconfigBinary, args + ["--allow-suspect"])
            #expect(allowed.status == 0 || allowed.status == 3, "\(allowed.stderr)")
            #expect(allowed.stderr.contains("warning: column \"Email Address\" (emailAddress): 20 of 20 values"), "\(allowed.stderr)")
        }
    }
}
