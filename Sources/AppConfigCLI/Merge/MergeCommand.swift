import AppConfigBatch
import AppConfigCore
import ArgumentParser
import Dispatch
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// `appconfig merge`: the shards of one run joined into the output a single run writes.
struct MergeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "merge",
        abstract: "Join the outputs of shards 0/N ... N-1/N of one run into the output one run over the whole fleet writes, byte for byte.",
        discussion: """
            appconfig merge shard-0.tar shard-1.tar ... --tar fleet.tar merges archives; \
            appconfig merge out/shard-0 out/shard-1 ... --out fleet merges folder outputs (a new \
            generation of hard links, published whole). Every shard of the run, each once; the \
            shards' reports stay where they are.

            Exit status: 0 merged; 2 usage: a shard missing or given twice, shards of other runs \
            (merge.shards, merge.mismatch), an input that is not a complete appconfig output \
            (merge.input); 1 the output cannot be written (nothing is published); 130 interrupted.
            """
    )

    @Argument(help: "The shards' outputs: archives (their .tar) or folder outputs (their --out).")
    var shards: [String] = []
    @Option(help: "Write the merged archive here (from archives).") var tar: String?
    @Option(help: "Write the merged folder output here (from folder outputs).") var out: String?
    @Option(help: "Complete generations kept beside --out (the current one included).") var keep = 2
    @Flag(help: "Print nothing on success.") var quiet = false
    @Option(help: "Write the merged run's summary.json, errors.jsonl and changes.jsonl here, from the shards' reports (--shard-report).") var report: String?
    @Option(name: .customLong("shard-report"), help: "A shard's report folder (its render's --report); one per shard, with --report.") var shardReports: [String] = []

    func validate() throws {
        if (tar == nil) == (out == nil) { throw ValidationError("give one of --tar FILE or --out FOLDER") }
        if shards.isEmpty { throw ValidationError("give the shards' outputs to merge") }
        if keep < 1 { throw ValidationError("--keep takes 1 or more") }
        if report != nil && shardReports.isEmpty { throw ValidationError("--report joins the shards' reports: give each with --shard-report DIR") }
        if report == nil && !shardReports.isEmpty { throw ValidationError("--shard-report goes with --report DIR") }
    }

    func run() throws {
        // SIGINT and SIGTERM stop the merge at its next step; it removes what it wrote.
        let interrupted = Atomic<Bool>(false)
        let signals = [SIGINT, SIGTERM].map { sig -> DispatchSourceSignal in
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler { interrupted.store(true, ordering: .relaxed) }
            source.resume()
            return source
        }
        defer { signals.forEach { $0.cancel() } }
        let output: ShardMerge.Output = tar.map { .tar($0) } ?? .folder(out!, keep: keep)
        let started = monotonicSeconds()
        let summary: ShardMerge.Summary
        do {
            summary = try reportingProblems {
                // The merged report is written before the output is published: one that cannot be
                // written publishes nothing.
                try ShardMerge().run(inputs: shards, into: output, cancelled: { interrupted.load(ordering: .relaxed) }) { merged throws(Problem) in
                    if let report { try MergeReport(shardReports: shardReports).write(to: report, merged: merged) }
                }
            }
        } catch let exit as ExitCode where interrupted.load(ordering: .relaxed) && exit.rawValue == ExitStatus.failed {
            throw ExitCode(ExitStatus.interrupted)
        }
        if !quiet {
            writeStandardOutput("merged \(summary.shards) shards into \(summary.output) in \(String(format1: monotonicSeconds() - started)) s: "
                  + "\(summary.devices) devices in the manifest, \(summary.written) written"
                  + (summary.removed > 0 ? ", \(summary.removed) removals" : ""))
        }
    }
}
