@testable import AppConfigBatch
@testable import AppConfigCLI
import AppConfigCore
import AppConfigRender
import AppConfigSources
import ArgumentParser
import Foundation
import TestSupport
import Testing

/// The commands parsed in this process: the options a user types become the job the library runs
/// (no subprocess, no fleet), and a job file with a command line over it becomes the same job.
@Suite("Commands parsed in process")
struct InProcessCommandTests {
    @Test("render's options become the job they say")
    func renderOptions() throws {
        let command = try RenderCommand.parse([
            "--spec", "s.xml", "--values", "v.json", "--inventory", "i.csv", "--directory", "d.ldif",
            "--out", "out", "--format", "xml", "--delivery", "mdm-settings", "--since", "prev", "--changed-only",
            "--remove-missing", "--max-removal-ratio", "0.02", "--keep", "3", "--shard", "1/4", "--jobs", "3",
            "--report", "r", "--redact", "--max-failures", "7",
        ])
        let job = try command.job()
        #expect(job.spec == "s.xml" && job.values == "v.json")
        #expect(job.sources.inventory == "i.csv")
        #expect(job.output == .directory("out"))
        #expect(job.batch.format == .xml && job.batch.jobs == 3 && job.batch.shard == Shard(index: 1, count: 4))
        #expect(job.delivery.delivery == .mdmSettings)
        #expect(job.nightly.since == "prev" && job.nightly.changedOnly && job.nightly.removeMissing && job.nightly.maxRemovalRatio == 0.02)
        #expect(job.keepGenerations == 3 && job.report == "r" && job.redact && job.nightly.maxFailures == 7)
    }

    /// `render`'s long options, read from the usage column of its help (a flag's `--NAME/--no-NAME` is NAME).
    static func renderLongOptions() -> Set<String> {
        var names = Set<String>()
        for line in RenderCommand.helpMessage(columns: 100_000).split(separator: "\n") {
            let usage = line.trimmingCharacters(in: .whitespaces).components(separatedBy: "  ")[0]
            guard usage.hasPrefix("-") else { continue }  // a help text's own line
            // `--NAME/--no-NAME`: one setting, the first name.
            for match in usage.matches(of: /--([a-z0-9-]+)/).prefix(usage.contains("/--no-") ? 1 : .max) { names.insert(String(match.1)) }
        }
        return names
    }

    @Test("render's long options and a job file's keys are one set (a setting is never the command line's or the file's alone)")
    func optionsAreJobKeys() {
        let options = Self.renderLongOptions()
        // The command line's alone: help, and leaving out a job file's secret.
        let commandLineOnly: Set = ["help", "no-secret"]
        #expect(options.count > 60)
        #expect(options.subtracting(commandLineOnly).sorted() == Set(JobSettings.keys).sorted())
        #expect(commandLineOnly.isSubset(of: options))
    }

    @Test("every option given on the command line reaches the settings: a key's value set from its option, each on its own")
    func everyOptionReachesItsKey() throws {
        // A value each option takes; flags are given bare.
        let values: [String: String] = [
            "format": "xml", "jobs": "2", "shard": "0/2", "shard-count": "2", "shard-base": "1", "keep": "3", "partial-exit": "0",
            "max-failures": "1", "max-failure-ratio": "0.1", "max-change-ratio": "0.2", "max-removal-ratio": "0.3",
            "secret-timeout": "5", "delimiter": ";", "ldap-page-size": "10", "ldap-timeout": "1", "ldap-deadline": "2", "ldap-retries": "1",
            "missing": "omit", "key-missing": "k=omit", "map": "udid=UDID", "attribute": "cn=cn", "delivery": "ddm", "app-config-key": "both",
            "install": "optional", "license": "user", "include-in-backup": "true", "ddm-layout": "files", "ldap-scope": "one",
            "ldap-targeted": "never", "extension": "a.b=v.json", "extension-spec": "a.b=s.xml", "secret": "pw=env:X", "install-option": "A=1",
            "management-flags": "1", "inventory-preset": "jamf",
        ]
        let empty = try JSONEncoder().encode(JobSettings())
        for key in JobSettings.keys {
            let flag = (try? RenderCommand.parse(["--" + key])) != nil
            let arguments = flag ? ["--" + key] : ["--" + key, values[key] ?? "x"]
            let command = try RenderCommand.parse(arguments)
            let encoded = try JSONSerialization.jsonObject(with: JSONEncoder().encode(command.commandLine)) as? [String: Any]
            #expect(encoded?[key] != nil, "--\(key) is not carried into the job's settings")
            #expect(try JSONEncoder().encode(command.commandLine) != empty, "--\(key)")
        }
    }

    @Test("the outputs: --tar FILE, --tar - (a stream), --dry-run")
    func renderOutputs() throws {
        let base = ["--spec", "s.xml", "--inventory", "i.csv"]
        #expect(try RenderCommand.parse(base + ["--tar", "t.tar"]).job().output == .tar("t.tar"))
        #expect(try RenderCommand.parse(base + ["--tar", "-"]).job().output == .tarStdout)
        #expect(try RenderCommand.parse(base + ["--dry-run"]).job().output == .dryRun)
    }

    @Test("a job file with the command line over it: the file's options, the command line's winning")
    func jobFileOverlay() throws {
        try withTemporaryDirectory { dir in
            let file = try dir.write("""
                {"spec": "s.xml", "inventory": "i.csv", "out": "/srv/out", "changed-only": true, "keep": 4,
                 "max-failure-ratio": 0.1, "map": {"serialNumber": "Asset Tag"}}
                """, to: "job.json")
            let parsed = try AppConfigCommand.parseAsRoot(["render", file, "--no-changed-only", "--keep", "5", "--map", "udid=Device ID"])
            let job = try #require(parsed as? RenderCommand).job()
            #expect(job.spec == dir.path("s.xml") && job.output == .directory("/srv/out"))
            #expect(!job.nightly.changedOnly && job.keepGenerations == 5 && job.nightly.maxFailureRatio == 0.1)
            // The file's map and the command line's together.
            #expect(job.sources.inventoryOptions.columnMap == [.serialNumber: "Asset Tag", .udid: "Device ID"])
        }
    }

    @Test("merge: the shards and one output; both outputs, or none, is a usage error")
    func mergeOptions() throws {
        let command = try MergeCommand.parse(["a.tar", "b.tar", "--tar", "m.tar"])
        #expect(command.shards == ["a.tar", "b.tar"] && command.tar == "m.tar" && command.out == nil && command.keep == 2)
        for arguments in [["a.tar", "--tar", "m.tar", "--out", "m"], ["a.tar"]] {
            let error = #expect(throws: (any Error).self) { try MergeCommand.parse(arguments) }
            #expect(error.map { MergeCommand.message(for: $0) } == "give one of --tar FILE or --out FOLDER")
        }
    }
}
