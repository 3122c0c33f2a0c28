import AppConfigBytes
import AppConfigBatch
import AppConfigCompiler
import AppConfigRender
import AppConfigSources
import AppConfigSpec
import ArgumentParser
import Dispatch
import Foundation

/// `appconfig render`: the main job. Spec + values + inventory + directory in, one plist per device out.
struct RenderCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "render",
        abstract: "Render one plist per device: spec and admin values, inventory and directory in; a folder or a tar out.",
        discussion: """
            appconfig render JOBFILE [options] reads the options from a JSON job file (see the README);
            options on the command line override it.

            Exit status: 0 every device rendered; 3 some failed or were skipped (no more than
            --max-failures); 1 a fatal error, or more failures than --max-failures (nothing is
            published); 2 usage; 130 interrupted (nothing is published).
            """
    )

    @Option(help: "The AppConfig spec (XML).")
    var spec: String

    @Option(help: "The admin values (JSON, XML or binary plist).")
    var values: String?

    @OptionGroup var sources: SourceOptions

    @Option(help: "binary or xml.")
    var format: OutputFormat = .binary

    @Option(help: "Write a folder tree here (published whole: OUT is a symlink to the newest complete generation).")
    var out: String?

    @Option(help: "Write a tar archive here ('-' for standard output).")
    var tar: String?

    @Option(help: "Write summary.json and errors.jsonl into this folder.")
    var report: String?

    @Option(help: "Threads (default: the machine's cores).")
    var jobs: Int = ProcessInfo.processInfo.activeProcessorCount

    @Option(help: "Render shard I of N (devices by a stable hash of their key), e.g. 0/3.")
    var shard: String?

    @Option(name: .customLong("shard-count"), help: "The number of shards, for an index from JOB_COMPLETION_INDEX or AWS_BATCH_JOB_ARRAY_INDEX.")
    var shardCount: Int?

    @Option(name: .customLong("max-failures"), help: "Fail the run (status 1, nothing published) when more devices fail.")
    var maxFailures: Int?

    @Flag(help: "Decode every output again with libplist and compare it with an independent evaluation (slower).")
    var verify = false

    @Flag(name: .customLong("dry-run"), help: "Resolve and check every device, write nothing, print the report.")
    var dryRun = false

    @Flag(help: "Leave values out of the error file.")
    var redact = false

    @Flag(help: "No progress display.")
    var quiet = false

    @OptionGroup var policy: PolicyOptions

    func validate() throws {
        if !dryRun && (out == nil) == (tar == nil) { throw ValidationError("give one of --out DIR and --tar FILE (or --dry-run)") }
        if jobs < 1 { throw ValidationError("--jobs must be at least 1") }
        if let shard, Shard(parsing: shard) == nil { throw ValidationError("--shard takes I/N with 0 <= I < N, not \"\(shard)\"") }
    }

    func run() throws {
        let toStdout = tar == "-"
        // The summary goes to stdout, unless stdout carries the tar stream.
        func say(_ line: String) { if toStdout { writeStandardError(line + "\n") } else { print(line) } }
        do {
            var options = BatchOptions()
            options.format = format
            options.jobs = jobs
            options.verify = verify
            options.maxFailures = maxFailures
            options.shard = try resolveShard()
            options.target = dryRun ? .none : out.map { .directory($0) } ?? (toStdout ? .tarStdout : .tar(tar!))

            var clock = monotonicSeconds()
            var phases: [String: Double] = [:]
            func lap(_ phase: String) { let now = monotonicSeconds(); phases[phase] = now - clock; clock = now }

            let program = try policy.compile(spec: spec, values: values)
            lap("compile")
            let extras = program.slots.compactMap { if case .deviceAttribute(let c) = $0 { c } else { nil } }
            let inventory = try InventoryTable.load(sources.inventory, options: try sources.inventoryOptions(extraColumns: extras))
            lap("inventory")
            let users = try sources.loadDirectory {
                guard let slot = inventory.userKeySlot else { return [] }
                return (0..<inventory.rowCount).map { inventory.string(row: $0, slot: slot) }
            }
            lap("directory")
            let fleet = Fleet(inventory: inventory, users: users)
            lap("join")
            let batch = try BatchRenderer(program: program, fleet: fleet, options: options)

            let cancellation = Cancellation()
            let signals = [SIGINT, SIGTERM].map { sig -> DispatchSourceSignal in
                signal(sig, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
                source.setEventHandler { cancellation.cancel() }
                source.resume()
                return source
            }
            let meter = (!quiet && isatty(2) != 0) ? ProgressMeter(total: batch.deviceCount) { batch.progress.load(ordering: .relaxed) } : nil
            let result = try batch.run(cancellation: cancellation)
            meter?.finish()
            signals.forEach { $0.cancel() }
            phases["render"] = result.renderSeconds
            phases["publish"] = result.publishSeconds

            let skipped = inventory.problems.filter { $0.code != .csvDuplicateColumn }.count
            let problems = inventory.problems + (users?.problems ?? []) + fleet.problems
            var byCode: [String: Int] = [:]
            for f in result.failures { byCode[f.error.code.rawValue, default: 0] += 1 }
            for p in problems { byCode[p.code.rawValue, default: 0] += 1 }
            let rate = result.renderSeconds > 0 ? Double(result.devicesInShard) / result.renderSeconds : 0
            var summary: [String: Any] = [
                "spec": spec, "bundleId": program.metadata.bundleId, "version": program.metadata.version,
                "programHash": program.metadata.hashHex, "format": format.rawValue, "shard": options.shard.description,
                "devices": ["inventoryRows": inventory.rowCount, "inShard": result.devicesInShard, "rendered": result.rendered,
                            "failed": result.failures.count, "skipped": skipped, "usersNotFound": fleet.problems.count],
                "errorsByCode": byCode, "seconds": phases, "devicesPerSecond": Int(rate),
                "published": result.published, "interrupted": result.interrupted, "dryRun": dryRun,
            ]
            if let path = result.outputPath { summary["output"] = path }
            if let report {
                try RunReport(summary: summary, failures: result.failures, problems: problems, redact: redact).write(to: report)
            }

            let written = dryRun ? "checked" : "rendered"
            say("\(written) \(result.rendered) of \(result.devicesInShard) devices (\(format.rawValue)"
                + (options.shard.count > 1 ? ", shard \(options.shard)" : "") + ")"
                + (result.outputPath.map { " to \($0)" } ?? "") + " in \(String(format1: result.renderSeconds)) s"
                + " (\(formatRate(rate))devices/s); \(result.failures.count) failed, \(skipped) skipped")
            if !byCode.isEmpty {
                say("errors: " + byCode.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
            }
            if let report { say("report: \(report)/summary.json, \(report)/errors.jsonl") }

            if result.interrupted {
                say("interrupted: nothing was published")
                throw ExitCode(130)
            }
            if let maxFailures, result.failures.count > maxFailures {
                say("more than \(maxFailures) devices failed (--max-failures): nothing was published")
                throw ExitCode(AppConfigCommand.Status.failed)
            }
            if !result.failures.isEmpty || skipped > 0 { throw ExitCode(3) }
        } catch let error as SourceError {
            writeStandardError("appconfig: \(error)\n")
            throw ExitCode(AppConfigCommand.Status.failed)
        } catch let error as BatchError {
            writeStandardError("appconfig: \(error)\n")
            throw ExitCode(AppConfigCommand.Status.failed)
        } catch let error as Shard.ShardError {
            writeStandardError("appconfig: \(error)\n")
            throw ExitCode(AppConfigCommand.Status.usage)
        }
    }

    /// --shard, else the scheduler's environment, else the whole fleet.
    func resolveShard() throws -> Shard {
        if let shard, let s = Shard(parsing: shard) { return s }
        switch Shard.fromEnvironment(ProcessInfo.processInfo.environment, count: shardCount) {
        case .success(let s): return s ?? .whole
        case .failure(let e): throw e
        }
    }

    /// `render JOBFILE ...`: the job file's options first, the command line's after (they win).
    /// The file is a JSON object keyed by long option names: strings and numbers are values, true
    /// is a flag, arrays repeat an option, objects give NAME=VALUE pairs (`"map": {"serialNumber": "Asset Tag"}`).
    static func expandJobFile(_ arguments: [String]) throws -> [String] {
        guard arguments.first == "render", arguments.count > 1, !arguments[1].hasPrefix("-") else { return arguments }
        let path = arguments[1]
        let data: [UInt8]
        do { data = try readFileBytes(path) } catch { throw ValidationError("job file: \(error)") }
        guard let object = try? JSONSerialization.jsonObject(with: Data(data)) as? [String: Any] else {
            throw ValidationError("job file \(path): not a JSON object of options")
        }
        var tokens: [String] = []
        for (key, value) in object.sorted(by: { $0.key < $1.key }) {
            let option = "--" + key
            // JSON true/false arrive as Bool, or as __NSCFBoolean from corelibs Foundation on Linux.
            if type(of: value) == Bool.self || String(describing: type(of: value)).hasSuffix("Boolean") {
                if value as! Bool { tokens.append(option) }
                continue
            }
            switch value {
            case let s as String: tokens += [option, s]
            case let i as Int: tokens += [option, String(i)]
            case let n as NSNumber: tokens += [option, n.stringValue]
            case let list as [Any]: for item in list { tokens += [option, "\(item)"] }
            case let pairs as [String: Any]: for (k, v) in pairs.sorted(by: { $0.key < $1.key }) { tokens += [option, "\(k)=\(v)"] }
            default: throw ValidationError("job file \(path): \"\(key)\" has a value of an unsupported kind")
            }
        }
        return ["render"] + tokens + arguments.dropFirst(2)
    }
}

/// A one-line progress display on standard error (a terminal only): devices done, rate, ETA.
final class ProgressMeter: @unchecked Sendable {
    private let timer: DispatchSourceTimer
    private let total: Int
    private let start = monotonicSeconds()

    init(total: Int, done: @escaping @Sendable () -> Int) {
        self.total = total
        timer = DispatchSource.makeTimerSource(queue: .global())
        timer.schedule(deadline: .now() + 0.25, repeating: 0.25)
        let started = start
        timer.setEventHandler {
            let n = done()
            let elapsed = monotonicSeconds() - started
            let rate = elapsed > 0 ? Double(n) / elapsed : 0
            let eta = rate > 0 ? Double(total - n) / rate : 0
            writeStandardError("\r\u{1B}[K  \(n)/\(total) devices  \(formatRate(rate))devices/s  ETA \(String(format1: eta)) s")
        }
        timer.resume()
    }

    func finish() {
        timer.cancel()
        writeStandardError("\r\u{1B}[K")
    }
}
