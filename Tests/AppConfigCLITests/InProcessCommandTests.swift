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
