@testable import AppConfigBatch
import AppConfigCompiler
import AppConfigCore
import AppConfigRender
import AppConfigSources
import AppConfigSpec
import Foundation
import TestSupport
import Testing

/// Job files decoded straight into settings and a job, with every error at its line and column;
/// settings laid over each other as a command line over a job file.
@Suite("Job settings")
struct JobSettingsTests {
    static func settings(_ json: String) throws(Problem) -> JobSettings {
        try JobSettings(document: JSONReader.document(Array(json.utf8), file: "job.json"))
    }

    @Test("a job file's settings, each in its group, in the types the job takes")
    func decodesIntoGroups() throws {
        let s = try Self.settings("""
            {"spec": "s.xml", "values": "v.json", "inventory": "i.csv", "directory": "ldaps://dc1", "ldap-bind-dn": "CN=svc",
             "ldap-password-env": "PW", "ldap-scope": "one", "ldap-timeout": 5, "format": "xml", "jobs": "3",
             "delivery": "mdm-install", "app-store-id": 361309726, "include-in-backup": false, "out": "/srv/out",
             "changed-only": true, "max-failure-ratio": 0.1, "map": {"serialNumber": "Asset Tag", "udid": "Device ID"},
             "key-missing": ["ServerURL=omit"], "secret": "vpn=env:VPN", "quiet": true, "partial-exit": 0}
            """)
        #expect(s.inputs.spec == "s.xml" && s.inputs.values == "v.json" && s.inputs.keyMissing == ["ServerURL=omit"])
        #expect(s.sources.inventory == "i.csv" && s.sources.map == ["serialNumber=Asset Tag", "udid=Device ID"])
        #expect(s.ldap.bindDN == "CN=svc" && s.ldap.passwordEnv == "PW" && s.ldap.scope == .one && s.ldap.timeout == 5)
        // A number where a string goes is its digits; digits where a number goes, the number.
        #expect(s.rendering.format == .xml && s.rendering.jobs == 3 && s.delivery.appStoreID == "361309726")
        #expect(s.delivery.delivery == .mdmInstall && s.delivery.includeInBackup == false && s.delivery.secrets == ["vpn=env:VPN"])
        #expect(s.destination.out == "/srv/out" && s.nightly.changedOnly == true && s.guards.maxFailureRatio == 0.1)
        #expect(s.console.quiet == true && s.console.partialExit == 0)
        #expect(s.destination.tar == nil && s.report.report == nil && s.guards.force == nil)
    }

    struct Refusal: CustomTestStringConvertible, Sendable {
        let json: String
        let message: String
        let at: (line: Int, column: Int)
        var testDescription: String { message }
    }

    static let refusals: [Refusal] = [
        Refusal(json: #"{"spec": "a.xml", "inventroy": "x.csv"}"#, message: #""inventroy" is not an option of render; did you mean "inventory"?"#, at: (1, 19)),
        Refusal(json: "{\"spec\": \"a.xml\",\n \"spec\": \"b.xml\"}", message: #""spec" is given twice"#, at: (2, 2)),
        Refusal(json: #"{"delivery": "mdm"}"#, message: #""delivery" takes plist, ddm, mdm-settings or mdm-install, not "mdm""#, at: (1, 14)),
        Refusal(json: #"{"spec": ["a.xml"]}"#, message: #""spec" takes a string, not an array"#, at: (1, 10)),
        Refusal(json: "{\"spec\": \"a.xml\",\n  \"jobs\": \"two\"}", message: #""jobs" takes an integer, not a string"#, at: (2, 11)),
        Refusal(json: #"{"jobs": 2.5}"#, message: #""jobs" takes an integer, not a real number"#, at: (1, 10)),
        Refusal(json: #"{"max-change-ratio": true}"#, message: #""max-change-ratio" takes a number, not a boolean"#, at: (1, 22)),
        Refusal(json: #"{"dry-run": 1}"#, message: #""dry-run" takes true or false, not an integer"#, at: (1, 13)),
        Refusal(json: #"{"map": {"serialNumber": [1]}}"#, message: #""map" takes a string, not an array"#, at: (1, 26)),
        Refusal(json: #"{"map": [1]}"#, message: #""map" takes NAME=VALUE strings or an object of names and values, not an integer"#, at: (1, 10)),
        Refusal(json: #"{"ldap-scope": 3}"#, message: #""ldap-scope" takes base, one or sub, not an integer"#, at: (1, 16)),
        Refusal(json: "[1]", message: "not a JSON object of options, but an array", at: (1, 1)),
    ]

    @Test("each wrong setting is refused at its line and column, with what it takes", arguments: refusals)
    func refused(_ r: Refusal) {
        let error = #expect(throws: Problem.self) { try Self.settings(r.json) }
        #expect(error?.code.rawValue == "job.setting")
        #expect(error?.message == r.message)
        #expect(error.map { [$0.location.file, "\($0.location.line)", "\($0.location.column)"] } == ["job.json", "\(r.at.line)", "\(r.at.column)"])
    }

    @Test("settings written with JSONEncoder read back the same: Codable both ways")
    func roundTrip() throws {
        var s = JobSettings()
        s.inputs.spec = "s.xml"
        s.sources.map = ["serialNumber=Asset Tag"]
        s.ldap.targeted = .never
        s.rendering.format = .xml
        s.delivery.delivery = .ddm
        s.delivery.extensions = ["com.example.app.widget=w.json"]
        s.nightly.removeMissing = false
        s.guards.maxRemovalRatio = 0.02
        s.console.explain = "C02XK1"
        let json = try JSONEncoder().encode(s)
        #expect(try Self.settings(String(decoding: json, as: UTF8.self)) == s)
        // Flat, as job files are: the option names at the top.
        let object = try #require(try JSONSerialization.jsonObject(with: json) as? [String: Any])
        #expect(Set(object.keys) == ["spec", "map", "ldap-targeted", "format", "delivery", "extension", "remove-missing", "max-removal-ratio", "explain"])
        #expect(JobSettings.keys.count == Set(JobSettings.keys).count)
    }

    @Test("a command line over a job file: what it gives wins, entries add, what it leaves out stands")
    func overlay() throws {
        let file = try Self.settings(#"{"spec": "s.xml", "out": "/srv/out", "changed-only": true, "keep": 4, "map": {"serialNumber": "Asset Tag"}}"#)
        var commandLine = JobSettings()
        commandLine.nightly.changedOnly = false
        commandLine.destination.keep = 5
        commandLine.sources.map = ["udid=Device ID"]
        let s = try file.overlaid(by: commandLine)
        #expect(s.inputs.spec == "s.xml" && s.destination.out == "/srv/out")
        #expect(s.nightly.changedOnly == false && s.destination.keep == 5)
        #expect(s.sources.map == ["serialNumber=Asset Tag", "udid=Device ID"])
        #expect(try JobSettings().overlaid(by: file) == file && file.overlaid(by: JobSettings()) == file)
    }

    @Test("a job file becomes the job, with the defaults for what it leaves out")
    func jobFromFile() throws {
        try withTemporaryDirectory { dir in
            let path = try dir.write(#"{"spec": "s.xml", "inventory": "i.csv", "directory": "d.ldif", "tar": "-", "delivery": "mdm-settings", "since": "prev"}"#, to: "job.json")
            let job = try RenderJob(settings: JobSettings(jobFile: path), environment: [:])
            // Relative paths are relative to the job file's folder.
            #expect(job.spec == dir.path("s.xml") && job.sources.inventory == dir.path("i.csv"))
            guard case .ldif(dir.path("d.ldif"))? = job.sources.directory else { Issue.record("directory: \(String(describing: job.sources.directory))"); return }
            #expect(job.output == .tarStdout && job.delivery.delivery == .mdmSettings)
            // MDM commands are XML; the guards and the rest at their defaults.
            #expect(job.batch.format == .xml && job.batch.shard == .whole && job.batch.jobs == Parallelism.machine)
            #expect(job.nightly.since == dir.path("prev") && job.nightly == {
                var n = NightlyPolicy()
                n.since = dir.path("prev")
                return n
            }())
            #expect(job.keepGenerations == 2 && job.report == nil && !job.redact && !job.allowUnjoined)
        }
    }

    @Test("settings the job cannot take are usage problems naming the option")
    func jobRefusals() throws {
        let cases: [(String, String)] = [
            (#"{"inventory": "i.csv", "tar": "t"}"#, "give the spec: --spec FILE"),
            (#"{"spec": "s", "inventory": "i.csv"}"#, "give one of --out DIR and --tar FILE (or --dry-run, or --explain DEVICE)"),
            (#"{"spec": "s", "inventory": "i.csv", "tar": "t", "out": "o"}"#, "give one of --out DIR and --tar FILE (or --dry-run, or --explain DEVICE)"),
            (#"{"spec": "s", "inventory": "i.csv", "dry-run": true, "shard": "3/3"}"#, #"--shard takes I/N with 0 <= I < N, not "3/3""#),
            (#"{"spec": "s", "inventory": "i.csv", "dry-run": true, "delivery": "mdm-install", "format": "binary"}"#,
             "MDM commands are XML plists: --delivery mdm-install takes --format xml"),
            (#"{"spec": "s", "inventory": "i.csv", "dry-run": true, "max-change-ratio": 2}"#,
             "--max-failure-ratio, --max-change-ratio and --max-removal-ratio take a share from 0 to 1"),
            (#"{"spec": "s", "inventory": "i.csv", "dry-run": true, "delimiter": "ab"}"#,
             "--delimiter takes one ASCII character other than a quote or a line break, or 'tab'"),
            (#"{"spec": "s", "inventory": "i.csv", "dry-run": true, "map": ["nothing=X"]}"#, #"--map: "nothing" is not a user or device variable"#),
            (#"{"spec": "s", "inventory": "i.csv", "dry-run": true, "directory": "ldap://dc", "ldap-password-env": "NOPE", "ldap-bind-dn": "CN=a"}"#,
             "--ldap-password-env: the environment variable NOPE is not set"),
            (#"{"spec": "s", "inventory": "i.csv", "dry-run": true, "extension-spec": {"x.y": "e.xml"}}"#, "--extension-spec x.y names no --extension"),
        ]
        for (json, message) in cases {
            let error = #expect(throws: Problem.self) { try RenderJob(settings: Self.settings(json), environment: [:]) }
            #expect(error?.code.rawValue == "job.setting" && error?.message == message, "\(json)")
        }
    }
}
