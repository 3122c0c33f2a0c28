@testable import AppConfigBatch
@testable import AppConfigOutput
@testable import AppConfigCLI
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
            let lint = try appconfig(["lint", spec, "--values", values])
            #expect(lint.status == 1)
            for key in ["customerId", "secretKey"] {
                #expect(lint.stdout.contains("\(values):1:1: error: \"\(key)\" may not be empty (its constraint is nullable=\"false\") and its default is empty: the values must give it one (the app's vendor asks for it) [values.required-empty]"), "\(lint.stdout)")
            }
            #expect(lint.stdout.contains("error: \"apiKey\" may not be empty (its constraint is nullable=\"false\"): give it a value [values.required-empty]"), "\(lint.stdout)")
            let given = try dir.write(#"{"userEmail": "$(emailAddress)", "apiKey": "k", "customerId": "c", "secretKey": "$(sAMAccountName)"}"#, to: "given.json")
            #expect(try appconfig(["lint", spec, "--values", given]).status == 0)
            let render = try appconfig(["render", "--spec", spec, "--values", values, "--inventory", Paths.fixture("demo/inventory.csv"),
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
            let r = try appconfig(args)
            #expect(r.status == 1)
            #expect(r.stderr.contains("error: column \"Email Address\" (emailAddress): all 20 of 20 values do not look like email addresses"), "\(r.stderr)")
            let allowed = try appconfig(args + ["--allow-suspect"])
            #expect(allowed.status == 0, "\(allowed.stderr)")
            #expect(allowed.stderr.contains("warning: column \"Email Address\" (emailAddress): 20 of 20 values"), "\(allowed.stderr)")
        }
    }

    static let demo = ["--spec", Paths.fixture("demo/spec.xml"), "--values", Paths.fixture("demo/values.json"),
                       "--inventory", Paths.fixture("demo/inventory.csv"), "--directory", Paths.fixture("demo/directory.ldif")]

    @Test("9. a schema LDIF given as the directory is named a schema, not diagnosed as a join")
    func schemaDirectory() throws {
        try withTemporaryDirectory { dir in
            let schema = try dir.write("""
                dn: cn=msuser,cn=schema,cn=config
                objectClass: olcSchemaConfig
                cn: msuser
                olcAttributeTypes: ( 1.2.840.113556.1.4.221 NAME 'sAMAccountName' SYNTAX '1.3.6.1.4.1.1466.115.121.1.15' SINGLE-VALUE )

                """, to: "msuser.ldif")
            var args = ["render"] + Self.demo + ["--dry-run"]
            args[args.firstIndex(of: Paths.fixture("demo/directory.ldif"))!] = schema
            let r = try appconfig(args)
            #expect(r.status == 1)
            #expect(r.stderr.hasSuffix("appconfig: \(schema) holds 1 entry and no person: a schema or a configuration, not a user export (export the users: ldapsearch -LLL '(objectClass=person)') (--allow-unjoined renders the devices without users) [join.none]\n"), "\(r.stderr)")
        }
    }

    @Test("10. devices left out by exclude are not counted as join problems")
    func excludedJoinProblems() throws {
        try withTemporaryDirectory { dir in
            // The demo's 15 users not in the directory are all "gone…" addresses: excluded by their Email Address.
            let values = try dir.write("""
                {"values": {"serverURL": "https://$(ou).fs.northwind.example/tenant/$(sAMAccountName)", "theme": "system"},
                 "exclude": [{"device.Email Address": {"matches": "^gone"}}]}
                """, to: "values.json")
            var job = RenderJob(spec: Paths.fixture("demo/spec.xml"), sources: FleetSources(inventory: Paths.fixture("demo/inventory.csv"), directory: .ldif(Paths.fixture("demo/directory.ldif"))))
            job.values = values
            job.output = .dryRun
            let (summary, _) = try Self.run(job)
            #expect(summary.devices.excluded == 15)
            #expect(summary.devices.usersNotFound == 0)
            #expect(!summary.problems.contains { $0.code == SourceCode.userNotFound })
        }
    }

    @Test("11. an app option a delivery does not take is one line, exit 2", arguments: [
        (["--bundle-id", "com.example.app"], "--bundle-id goes with --delivery ddm, mdm-settings or mdm-install: a bare plist names no app"),
        (["--app-store-id", "123456"], "--app-store-id goes with --delivery ddm, mdm-settings or mdm-install: a bare plist names no app"),
        (["--app-store-id", "123456", "--delivery", "mdm-settings"], "--app-store-id goes with --delivery ddm or mdm-install: a Settings command names the app by --bundle-id"),
        (["--management-flags", "1", "--delivery", "mdm-settings"], "--management-flags goes with --delivery mdm-install"),
    ])
    func optionsNotTaken(_ extra: [String], _ message: String) throws {
        let r = try appconfig(["render"] + Self.demo + ["--dry-run"] + extra)
        #expect(r.status == 2)
        #expect(r.stderr == "appconfig: \(message) [delivery.option]\n", "\(r.stderr)")
    }

    @Test("12, 13. a job file's paths are relative to its folder; --tar replaces its out; --secret NAME replaces its own, --no-secret removes one; an unreadable input names its key")
    func jobFiles() throws {
        try withTemporaryDirectory { dir in
            let folder = dir.path("nightly")
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            for name in ["spec.xml", "values.json", "inventory.csv", "directory.ldif"] {
                try FileManager.default.copyItem(atPath: Paths.fixture("demo/" + name), toPath: folder + "/" + name)
            }
            let job = try dir.write(#"{"spec": "spec.xml", "values": "values.json", "inventory": "inventory.csv", "directory": "directory.ldif", "out": "out", "secret": ["a=env:A", "b=env:B"], "quiet": true}"#, to: "nightly/job.json")
            // Run from elsewhere (a shell's cd, as cron's): the job's files are found beside it.
            let r = try runProcess("/bin/sh", ["-c", "cd / && '\(Paths.appconfigBinary)' render '\(job)'"])
            #expect(r.status == 3, "\(r.stderr)")
            #expect(GenerationFolder.published(folder + "/out") != nil)
            // --tar replaces the file's out.
            let tar = dir.path("tonight.tar")
            let t = try appconfig(["render", job, "--tar", tar])
            #expect(t.status == 3, "\(t.stderr)")
            #expect(FileManager.default.fileExists(atPath: tar))
            // The secrets as the job ends up with them.
            var settings = try JobSettings(jobFile: job)
            var line = JobSettings()
            line.delivery.secrets = ["b=file:/run/b"]
            settings = try settings.overlaid(by: line)
            #expect(settings.delivery.secrets?.items == ["a=env:A", "b=file:/run/b"])
            #expect(settings.inputs.spec == folder + "/spec.xml")
            let command = try RenderCommand.parse([job, "--no-secret", "a", "--secret", "b=env:C"]).settings()
            #expect(command.delivery.secrets?.items == ["b=env:C"])
            // An input the job file names that cannot be read: its key is said.
            let broken = try dir.write(#"{"spec": "spec.xml", "values": "missing.json", "inventory": "inventory.csv", "out": "out"}"#, to: "nightly/broken.json")
            let b = try appconfig(["render", broken])
            #expect(b.status != 0)
            #expect(b.stderr.contains("the job file's \"values\" names \(folder)/missing.json, which cannot be read: No such file or directory"), "\(b.stderr)")
        }
    }

    @Test("15. --explain finds a device by its user's e-mail or name and by device name, case aside; a user with two devices lists both")
    func explainByName() throws {
        func explain(_ name: String) throws -> ProcessResult { try appconfig(["render"] + Self.demo + ["--explain", name]) }
        let text = try String(contentsOfFile: Paths.fixture("demo/inventory.csv"), encoding: .utf8)
        let rows = text.split(separator: "\r\n").dropFirst().map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
        let users = rows.compactMap { $0.first { $0.hasSuffix("@corp.example") } }
        // A user with one device, found by their address in capitals.
        let once = try #require(users.first { u in users.filter { $0 == u }.count == 1 })
        let udid = try #require(rows.first { $0.contains(once) }?.first { $0.count == 25 && $0.contains("-") })
        let byMail = try explain(once.uppercased())
        #expect(byMail.status == 0, "\(byMail.stderr)")
        #expect(byMail.stdout.hasPrefix("device \(udid) "), "\(byMail.stdout.prefix(200))")
        let byName = try explain("josé okafor's iphone 14")
        #expect(byName.stdout.hasPrefix("device 12156CB8-29FAC3AC50E5D997 "), "\(byName.stderr)")
        // A user with several devices: each listed, none chosen.
        let twice = try #require(Dictionary(grouping: users, by: { $0 }).first { $0.value.count > 1 }?.key)
        let many = try explain(String(twice))
        #expect(many.status == 2)
        #expect(many.stderr.contains("\"\(twice)\" names \(users.filter { $0 == twice }.count) devices: "), "\(many.stderr)")
    }

    @Test("18. per-assignment counts on the terminal; mdm-install's ManagementFlags and Options, valid for plistlib")
    func countsAndInstallOptions() throws {
        try withTemporaryDirectory { dir in
            var args = ["render"] + Self.demo + ["--dry-run"]
            args[args.firstIndex(of: Paths.fixture("demo/values.json"))!] = Paths.fixture("demo/assignments.json")
            let r = try appconfig(args)
            let line = try #require(r.stdout.split(separator: "\n").first { $0.hasPrefix("assignments: ") })
            #expect(line.contains("everyone ") && line.contains("emea "), "\(line)")
            let out = dir.path("install")
            let i = try appconfig(["render"] + Self.demo + ["--delivery", "mdm-install", "--app-store-id", "361309726", "--management-flags", "1",
                                                                                   "--install-option", "PurchaseMethod=1", "--install-option", "NotManaged=false", "--out", out, "--quiet"])
            #expect(i.status == 3, "\(i.stderr)")
            let published = try #require(GenerationFolder.published(out))
            let file = try #require(try FileManager.default.subpathsOfDirectory(atPath: published).first { $0.hasSuffix(".plist") })
            let python = try #require(which("python3"))
            let p = try runProcess(python, ["-c", "import plistlib,sys,json; c=plistlib.load(open(sys.argv[1],'rb'))['Command']; print(json.dumps([c['ManagementFlags'], c['Options'], c['iTunesStoreID'], c['RequestType']]))", published + "/" + file])
            #expect(p.stdout == "[1, {\"NotManaged\": false, \"PurchaseMethod\": 1}, 361309726, \"InstallApplication\"]\n", "\(p.stdout)\(p.stderr)")
        }
    }

    @Test("17. rollback: the previous generation published again as a new one, byte for byte; the next night compares with it; the ratio guard and --to")
    func rollback() throws {
        try withTemporaryDirectory { dir in
            let out = dir.path("out")
            let dark = try dir.write(#"{"serverURL": "https://$(ou).fs.northwind.example/tenant/$(sAMAccountName)", "theme": "dark"}"#, to: "dark.json")
            var night1 = ["render"] + Self.demo + ["--out", out, "--quiet"]
            #expect(try appconfig(night1).status == 3)
            let first = try #require(GenerationFolder.published(out))
            func files(_ folder: String) throws -> [String: Data] {
                var all: [String: Data] = [:]
                for name in try FileManager.default.subpathsOfDirectory(atPath: folder) {
                    var isDir: ObjCBool = false
                    if FileManager.default.fileExists(atPath: folder + "/" + name, isDirectory: &isDir), !isDir.boolValue { all[name] = FileManager.default.contents(atPath: folder + "/" + name) }
                }
                return all
            }
            let firstFiles = try files(first)
            var night2 = night1
            night2[night2.firstIndex(of: Paths.fixture("demo/values.json"))!] = dark
            #expect(try appconfig(night2 + ["--force"]).status == 3)
            let second = try #require(GenerationFolder.published(out))
            // Every device changed: held back unless --force.
            let held = try appconfig(["rollback", out])
            #expect(held.status == 1)
            #expect(held.stderr.contains("changes 975 of 975 devices, more than --max-change-ratio 0.5: --force rolls back anyway; nothing was published"), "\(held.stderr)")
            #expect(GenerationFolder.published(out) == second)
            let unknown = try appconfig(["rollback", out, "--to", "g1-1"])
            #expect(unknown.status == 1 && unknown.stderr.contains("g1-1 is not a complete earlier generation"), "\(unknown.stderr)")
            let r = try appconfig(["rollback", out, "--force"])
            #expect(r.status == 0, "\(r.stderr)")
            let third = try #require(GenerationFolder.published(out))
            #expect(third != first && third != second)
            #expect(r.stdout == "rolled back \(out) from \(PathText.name(of: second)) to \(PathText.name(of: first)), published as a new generation: 975 of 975 devices change\n")
            // The first night's files, byte for byte (the first generation itself pruned by --keep 2).
            #expect(try files(third) == firstFiles)
            // The next night of the first night's values: nothing changed since the rolled-back generation.
            night1.append("--changed-only")
            let next = try appconfig(night1.filter { $0 != "--quiet" })
            // Every device is last night's (the demo's 25 still fail: status 3), nothing new is published.
            #expect(next.status == 3, "\(next.stderr)")
            #expect(next.stdout.contains(": 0 added, 0 changed, 0 removed, 0 missing, 975 unchanged"), "\(next.stdout)")
            #expect(next.stdout.hasSuffix(": nothing new was published\n"), "\(next.stdout)")
        }
    }

    @Test("16. merge --report joins the shards' reports: the single run's counts, errors and changes")
    func mergeReport() throws {
        try withTemporaryDirectory { dir in
            let base = ["render"] + Self.demo + ["--quiet", "--partial-exit", "0"]
            var shardReports: [String] = []
            for i in 0..<3 {
                shardReports.append(dir.path("report\(i)"))
                let r = try appconfig(base + ["--shard", "\(i)/3", "--tar", dir.path("s\(i).tar"), "--report", shardReports[i]])
                #expect(r.status == 0, "\(r.stderr)")
            }
            #expect(try appconfig(base + ["--tar", dir.path("all.tar"), "--report", dir.path("single")]).status == 0)
            let m = try appconfig(["merge"] + (0..<3).map { dir.path("s\($0).tar") } + ["--tar", dir.path("merged.tar"), "--report", dir.path("merged")]
                                   + shardReports.flatMap { ["--shard-report", $0] })
            #expect(m.status == 0, "\(m.stderr)")
            func summary(_ folder: String) throws -> [String: Any] {
                try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: folder + "/summary.json"))) as! [String: Any]
            }
            let single = try summary(dir.path("single")), merged = try summary(dir.path("merged"))
            for key in ["rendered", "failed", "usersNotFound", "inShard", "inventoryRows"] {
                #expect((merged["devices"] as! [String: Int])[key] == (single["devices"] as! [String: Int])[key], "\(key)")
            }
            #expect(merged["errorsByCode"] as? [String: Int] == single["errorsByCode"] as? [String: Int])
            #expect(merged["shard"] as? String == "0/1" && merged["output"] as? String == dir.path("merged.tar"))
            func lines(_ folder: String) throws -> Set<String> { Set(try String(contentsOfFile: folder + "/errors.jsonl", encoding: .utf8).split(separator: "\n").map(String.init)) }
            #expect(try lines(dir.path("merged")) == lines(dir.path("single")))
            let wrong = try appconfig(["merge"] + (0..<3).map { dir.path("s\($0).tar") } + ["--tar", dir.path("m2.tar"), "--report", dir.path("m2"), "--shard-report", shardReports[0]])
            #expect(wrong.status == 2)
            #expect(wrong.stderr.contains("--shard-report: give each shard's report folder once (1 given for 3 shards)"), "\(wrong.stderr)")
            // The report comes before the output is published: nothing was.
            #expect(!FileManager.default.fileExists(atPath: dir.path("m2.tar")))
        }
    }

    static let credentialValues = #"{"values": {"theme": "system", "serverURL": "https://x.example/$(sAMAccountName)"}, "credentials": [{"identifier": "pw", "kind": "password", "UserName": "$(sAMAccountName)", "Password": {"secret": "pw"}}]}"#

    @Test("6. --explain shows the DDM declarations, each credential with its secrets named, the variables they read, and fails as render fails (device.secret-missing)")
    func explainCredentials() throws {
        try withTemporaryDirectory { dir in
            let values = try dir.write(Self.credentialValues, to: "values.json")
            let passwords = try dir.write("sAMAccountName,password\nu0000001,SECRET-pw-1\n", to: "pw.csv")
            var args = ["render"] + Self.demo + ["--delivery", "ddm", "--asset-base-url", "https://a.example/x", "--secret-asset-base-url", "https://s.example/y",
                                                 "--secret", "pw=file:" + passwords]
            args[args.firstIndex(of: Paths.fixture("demo/values.json"))!] = values
            let good = try appconfig(args + ["--explain", "R4G45DDN63HX"])
            #expect(good.status == 0, "\(good.stderr)")
            #expect(good.stdout.contains(#"{"Password":"<secret pw>","UserName":"u0000001"}"#))
            #expect(good.stdout.contains(#""Passwords":[{"AssetReference":"appconfig.credential."#))
            #expect(good.stdout.contains("\n  sAMAccountName "))
            #expect(!good.stdout.contains("SECRET-pw-1"))
            // u0000000 has no password: the render fails the device, and so does its explanation.
            let bad = try appconfig(args + ["--explain", "7X4X9Q34WXN6"])
            #expect(bad.status == 1)
            #expect(bad.stdout.contains("error: credential \"pw\", Password: the secret \"pw\" has no value for this device's $(sAMAccountName) \"u0000000\" [device.secret-missing]"), "\(bad.stdout)")
        }
    }

    @Test("7. compile --delivery ddm previews the configuration with its Passwords, as render makes it, and says what differs")
    func compilePreviewCredentials() throws {
        try withTemporaryDirectory { dir in
            let values = try dir.write(Self.credentialValues, to: "values.json")
            let r = try appconfig(["compile", Paths.fixture("demo/spec.xml"), "--values", values, "--delivery", "ddm",
                                                           "--asset-base-url", "https://a.example/x", "--secret-asset-base-url", "https://s.example/y",
                                                           "--var", "sAMAccountName=jdoe", "--var", "udid=U1", "--var", "ou=EMEA", "--var", "emailAddress=j@x.example", "--var", "emailAddressDomain=x.example",
                                                           "--var", "serialNumber=ABCDEFGH1", "--var", "displayName=J"])
            #expect(r.status == 0, "\(r.stderr)")
            #expect(r.stdout.contains(#""AppConfig":{"DataAssetReference":"appconfig.asset."#) && r.stdout.contains(#""Passwords":[{"AssetReference":"appconfig.credential."#), "\(r.stdout)")
            #expect(r.stderr.contains("note: credential documents name their secrets and files"), "\(r.stderr)")
        }
    }

    @Test("8. a second night's --dry-run of a job file compares with its out; --plan groups each change by key and cause; diff.jsonl holds every device's")
    func plan() throws {
        try withTemporaryDirectory { dir in
            for name in ["spec.xml", "assignments.json", "inventory.csv", "directory.ldif"] {
                try FileManager.default.copyItem(atPath: Paths.fixture("demo/" + name), toPath: dir.path(name))
            }
            let job = try dir.write(#"{"spec": "spec.xml", "values": "assignments.json", "inventory": "inventory.csv", "directory": "directory.ldif", "out": "out", "quiet": true}"#, to: "job.json")
            #expect(try appconfig(["render", job]).status == 3)
            // Night 2: the iPhone 15 assignment now names the iPhone 14, the theme is dark.
            let values = try String(contentsOfFile: dir.path("assignments.json"), encoding: .utf8)
                .replacingOccurrences(of: #""match": { "model": "iPhone 15" }"#, with: #""match": { "model": "iPhone 14" }"#)
                .replacingOccurrences(of: #""theme": "system""#, with: #""theme": "dark""#)
            try values.write(toFile: dir.path("assignments.json"), atomically: true, encoding: .utf8)
            let dry = try appconfig(["render", job, "--dry-run"])
            #expect(dry.stdout.contains(" 868 changed, 0 removed, 0 missing, 107 unchanged"), "\(dry.stdout)")
            let report = dir.path("report")
            let r = try appconfig(["render", job, "--plan", "--report", report])
            #expect(r.status == 1)  // 89% changed: over --max-change-ratio, it would not be published
            let lines = r.stdout.split(separator: "\n").map(String.init)
            #expect(lines.first?.hasSuffix(": 0 added, 868 changed, 0 missing, 0 removed, 107 unchanged") == true, "\(r.stdout)")
            #expect(lines.contains { $0.hasPrefix("  448 devices (") && $0.hasSuffix(#"): theme "system" -> "dark": the spec or the values changed"#) }, "\(r.stdout)")
            #expect(lines.contains { $0.hasSuffix(#"retryBackoffSeconds [1, 2, 4, 8] -> [1, 5, 30], theme "system" -> "dark": assignment iphone-15 no longer matches"#) }, "\(r.stdout)")
            #expect(lines.contains { $0.hasSuffix(#"retryBackoffSeconds [1, 5, 30] -> [1, 2, 4, 8], theme "system" -> "dark": assignment iphone-15 now matches"#) }, "\(r.stdout)")
            let diff = try String(contentsOfFile: report + "/diff.jsonl", encoding: .utf8).split(separator: "\n")
            #expect(diff.count == 868)
            let first = try JSONSerialization.jsonObject(with: Data(diff[0].utf8)) as! [String: Any]
            #expect((first["keys"] as? [[String: String]])?.contains { $0["key"] == "theme" && $0["from"] == "\"system\"" && $0["to"] == "\"dark\"" } == true, "\(first)")
            // Nothing was written: the plan is a dry run.
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path("out.generations")).filter { !$0.hasPrefix(".") }.count == 1)
        }
    }

    @Test("14. messages that say how to fix: render keeps lint's hints; filters listed and the nearest suggested; a group typo; an --attribute no entry has; a 1-based Slurm array; --var typos and every missing --var; a UTF-16 export")
    func hints() throws {
        try withTemporaryDirectory { dir in
            func render(_ extra: [String], values: String = Paths.fixture("demo/values.json"), environment: [String: String]? = nil) throws -> ProcessResult {
                var args = ["render"] + Self.demo + ["--dry-run"] + extra
                args[args.firstIndex(of: Paths.fixture("demo/values.json"))!] = values
                return try runProcess(Paths.appconfigBinary, args, environment: environment)
            }
            // A values key typo: the hint lint gives, under render's error.
            let typo = try dir.write(#"{"serverURl": "https://x.example", "theme": "system"}"#, to: "typo.json")
            #expect(try render([], values: typo).stderr.contains("\n    hint: did you mean \"serverURL\"?\n"))
            // An unknown filter: the nearest, and every filter.
            let filter = try dir.write(#"{"serverURL": "https://$(ou|lowr).example", "theme": "system"}"#, to: "filter.json")
            let f = try render([], values: filter)
            #expect(f.stderr.contains("hint: did you mean |lower? filters: "), "\(f.stderr)")
            // A group typo.
            let group = try dir.write(#"{"values": {"theme": "system", "serverURL": "https://$(ou).example"}, "assignments": [{"name": "s", "match": {"group": "Cylists"}, "values": {"theme": "dark"}}]}"#, to: "group.json")
            let g = try render([], values: group)
            #expect(g.stderr.contains(#"holds no group "Cylists"; no device matches through it; did you mean "cyclists"?"#), "\(g.stderr)")
            // An --attribute no entry has: once.
            let a = try render(["--attribute", "emailAddress=proxyAddresses"])
            #expect(a.stderr.components(separatedBy: "proxyAddresses").count - 1 == 2, "\(a.stderr)")  // the one line names it twice
            #expect(a.stderr.contains("--attribute emailAddress=proxyAddresses: no entry of"), "\(a.stderr)")
            // Slurm's 1-based array.
            var environment = ProcessInfo.processInfo.environment
            environment["SLURM_ARRAY_TASK_ID"] = "3"; environment["SLURM_ARRAY_TASK_COUNT"] = "3"; environment["SLURM_ARRAY_TASK_MIN"] = "1"
            let slurm = try render([], environment: environment)
            #expect(slurm.status == 2 && slurm.stderr.contains("SLURM_ARRAY_TASK_MIN=1: this array's tasks are numbered from 1; give --shard-base 1"), "\(slurm.stderr)")
            environment["SLURM_ARRAY_TASK_MIN"] = nil
            #expect(try render([], environment: environment).stderr.contains("an array numbered from 1 (sbatch --array=1-3)? give --shard-base 1"))
            // compile --var: a typo's nearest name; every variable the device lacks at once.
            let v = try appconfig(["compile", Paths.fixture("demo/spec.xml"), "--values", Paths.fixture("demo/values.json"), "--var", "serialNumbr=X"])
            #expect(v.stderr.contains("did you mean \"serialNumber\"?"), "\(v.stderr)")
            let m = try appconfig(["compile", Paths.fixture("demo/spec.xml"), "--values", Paths.fixture("demo/values.json"), "--var", "ou=EMEA"])
            #expect(m.stderr.contains("the device lacks ") && m.stderr.contains("$(sAMAccountName)") && m.stderr.contains("$(serialNumber)"), "\(m.stderr)")
            // A UTF-16 export.
            let text = try String(contentsOfFile: Paths.fixture("demo/inventory.csv"), encoding: .utf8)
            let utf16 = dir.path("utf16.csv")
            try text.data(using: .utf16LittleEndian).map { Data([0xFF, 0xFE]) + $0 }!.write(to: URL(fileURLWithPath: utf16))
            var args = ["render"] + Self.demo + ["--dry-run"]
            args[args.firstIndex(of: Paths.fixture("demo/inventory.csv"))!] = utf16
            let u = try appconfig(args)
            #expect(u.stderr.contains("is UTF-16 text: save it as UTF-8 (CSV UTF-8)"), "\(u.stderr)")
        }
    }
}
