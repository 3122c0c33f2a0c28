import AppConfigCore
import AppConfigPush
import AppConfigStatus
import ArgumentParser
import Dispatch
import Foundation

/// `appconfig push SOURCE --server kmfddm|nanohub|nanomdm --url URL --api-key env:VAR|file:PATH`:
/// what `render` published, into the server admins run; only what changed since the journal.
struct PushCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "push",
        abstract: "Push a rendered generation into KMFDDM, NanoHUB or NanoMDM: only what changed, resumable.",
        discussion: """
        DDM outputs go to kmfddm or nanohub, mdm-settings and mdm-install to nanomdm or nanohub. A journal \
        beside the output (SOURCE.push-journal) records what the server holds; a rerun sends what differs. \
        Exit 0 done, 3 some devices failed (--report names each), 1 fatal or held back, 2 usage.
        """
    )

    @Argument(help: "What render published: an --out folder or a tar.") var source: String
    @Option(help: "kmfddm, nanohub or nanomdm.") var server: String
    @Option(help: "The server's base URL (https://; http:// only for loopback).") var url: String
    @Option(name: .customLong("api-key"), help: "The API key: env:VAR or file:PATH (never the key itself).") var apiKey: String
    @Option(help: "The journal (default: SOURCE.push-journal).") var journal: String?
    @Option(name: .customLong("enrollment-id"), help: "The device variable that is the enrollment ID when the device key is not (e.g. udid), read from --inventory.")
    var enrollmentID: String?
    @Option(help: "With --enrollment-id: the inventory the output was rendered from.") var inventory: String?
    @Option(name: .customLong("device-key"), help: "With --enrollment-id: the inventory's device key column, as given to render.") var deviceKey: String?
    @Option(name: .customLong("map"), help: "With --enrollment-id: VARIABLE=Column, as given to render; repeatable.") var map: [String] = []
    @Option(help: "Requests in flight (devices at once; default 16).") var jobs = 16
    @Flag(name: .customLong("dry-run"), help: "Print the plan (devices and requests per kind); send nothing.") var dryRun = false
    @Flag(name: .customLong("verify-assets"), help: "GET each new asset's DataURL and compare size and SHA-256 before its device goes.") var verifyAssets = false
    @Option(name: .customLong("ca-file"), help: "PEM certificates to trust for https (default: the system's).") var caFile: String?
    @Option(name: .customLong("max-removal-ratio"), help: "Send nothing (status 1) when a larger share of the journal's devices would lose the app (default: 0.01).")
    var maxRemovalRatio = 0.01
    @Flag(help: "Send removals past --max-removal-ratio.") var force = false
    @Option(help: "Retries of a request that may succeed later (connection errors, timeouts, 5xx, 429; default 6).") var retries = 6
    @Option(help: "Seconds a request may take (default 30).") var timeout = 30.0
    @Option(help: "Write summary.json and errors.jsonl into this folder.") var report: String?
    @Flag(help: "No progress display.") var quiet = false
    @Option(help: "A staged rollout: cumulative shares of the fleet, e.g. 1%,10%,100%; each stage but the last waits for its --gate.")
    var stages: String?
    @Option(help: "With --stages: the share of a stage's devices reporting current (acknowledged for MDM) before the next goes (default 0.95).")
    var gate = 0.95
    @Option(name: .customLong("gate-timeout"), help: "With --stages: how long a stage may take to reach the gate, e.g. 2h, 30m (default 2h); then the rollout stops, status 1.")
    var gateTimeout = "2h"
    @Option(name: .customLong("gate-interval"), help: "With --stages: time between two status reads, e.g. 60s (default 60s).")
    var gateInterval = "60s"
    @Option(help: "With --stages: an assignment variant whose devices are the first stage.") var pilot: String?
    @Option(name: .customLong("status-events"), help: "With --stages: read status from this webhook events file (re-read each time) instead of the server's status endpoints (needed for NanoMDM).")
    var statusEvents: String?
    @Option(name: .customLong("status-state"), help: "With --stages: the status state file (default: SOURCE.status-state).") var statusState: String?

    func validate() throws {
        guard ServerKind(rawValue: server) != nil else { throw ValidationError("--server \(server): kmfddm, nanohub or nanomdm") }
        guard jobs >= 1 else { throw ValidationError("--jobs must be at least 1") }
        guard retries >= 0, timeout > 0, maxRemovalRatio >= 0 else { throw ValidationError("--retries, --timeout and --max-removal-ratio take positive numbers") }
        if enrollmentID != nil && inventory == nil { throw ValidationError("--enrollment-id needs --inventory (where the variable's values are)") }
        if stages == nil, let given = [("--pilot", pilot != nil), ("--status-events", statusEvents != nil)].first(where: \.1) {
            throw ValidationError("\(given.0) goes with --stages")
        }
        guard gate > 0, gate <= 1 else { throw ValidationError("--gate takes a share above 0, at most 1 (0.95)") }
        if stages != nil && dryRun { throw ValidationError("--stages and --dry-run: a dry run shows the whole plan; give --dry-run alone") }
    }

    /// `env:VAR` or `file:PATH`: a key on the command line would be in every process listing.
    static func readKey(_ spec: String) throws -> String {
        if spec.hasPrefix("env:") {
            let name = String(spec.dropFirst(4))
            guard let value = ProcessInfo.processInfo.environment[name], !value.isEmpty else {
                throw Failure("--api-key \(spec): the environment variable \(name) is not set or empty")
            }
            return value
        }
        if spec.hasPrefix("file:") {
            let path = String(spec.dropFirst(5))
            let bytes: [UInt8]
            do { bytes = try readFileBytes(path, limit: 1 << 16) } catch { throw Failure("--api-key: \(error.problem.message)") }
            let key = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .newlines)
            guard !key.isEmpty else { throw Failure("--api-key \(spec): the file is empty") }
            return key
        }
        throw Failure("--api-key takes env:VAR or file:PATH, never the key itself (it would show in process listings and shell history)")
    }

    struct Failure: Error { var message: String; init(_ m: String) { message = m } }

    /// `--map VARIABLE=Column` entries.
    static func columnMap(_ entries: [String]) throws -> [String: String] {
        var columns: [String: String] = [:]
        for entry in entries {
            guard let eq = entry.firstIndex(of: "=") else { throw ValidationError("--map \(entry): VARIABLE=Column") }
            columns[String(entry[..<eq])] = String(entry[entry.index(after: eq)...])
        }
        return columns
    }

    func run() throws {
        let key: String
        do { key = try Self.readKey(apiKey) } catch let f as Failure {
            writeStandardError("appconfig: push: \(f.message)\n")
            throw ExitCode(ExitStatus.usage)
        }
        var options = PushOptions(source: source, server: ServerKind(rawValue: server)!, url: url, apiKey: key)
        options.journal = journal
        options.jobs = jobs
        options.dryRun = dryRun
        options.verifyAssets = verifyAssets
        options.caFile = caFile
        options.maxRemovalRatio = maxRemovalRatio
        options.force = force
        options.retries = retries
        options.timeout = timeout
        if let variable = enrollmentID, let inventory {
            let columns = try Self.columnMap(map)
            do { options.enrollmentIDs = try PushOptions.enrollmentIDs(inventory: inventory, variable: variable, deviceKeyColumn: deviceKey, columnMap: columns) } catch {
                writeStandardError("appconfig: push: \(error.message)\n")
                throw ExitCode(ExitStatus.usage)
            }
        }
        if let report {
            do { try FileManager.default.createDirectory(atPath: report, withIntermediateDirectories: true) } catch {
                writeStandardError("appconfig: push: cannot create \(report): \(error.localizedDescription)\n")
                throw ExitCode(ExitStatus.usage)
            }
        }
        if let stages {
            try runStaged(stages, options)
            return
        }
        let showProgress = !quiet && Console.current.isProcess && isatty(2) != 0
        let job = PushJob(options)
        let result = waitFor {
            await job.run { p in
                guard showProgress else { return }
                let eta = p.eta.map { " ETA \(String(format1: $0)) s" } ?? ""
                writeStandardError("\r\u{1B}[K  push  \(p.devicesDone)/\(p.devicesToSend) devices  \(p.requests) requests  \(formatRate(p.requestsPerSecond))requests/s\(eta)")
            }
        }
        if showProgress { writeStandardError("\r\u{1B}[K") }
        Self.say(result, dryRun: dryRun)
        if let report { Self.writeReport(result, to: report) }
        let status = Self.exitStatus(result)
        if status != ExitStatus.ok { throw ExitCode(status) }
    }

    /// `--stages`: the rollout, a line per stage and per status read, then the last stage's summary.
    func runStaged(_ text: String, _ push: PushOptions) throws {
        var rollout: StagedRollout.Options
        do throws(Problem) {
            var status = StatusOptions(source: source)
            status.reports = statusEvents.map { .events($0) } ?? .server(kind: push.server, url: push.url, apiKey: push.apiKey)
            status.statePath = statusState
            status.journal = journal
            status.enrollmentIDs = push.enrollmentIDs
            status.caFile = caFile
            status.jobs = jobs
            rollout = StagedRollout.Options(stages: try StagedRollout.stages(text), status: status)
            rollout.gateTimeout = try StagedRollout.duration(gateTimeout, option: "--gate-timeout")
            rollout.interval = try StagedRollout.duration(gateInterval, option: "--gate-interval")
        } catch {
            writeStandardError("appconfig: push: \(error.message)\n")
            throw ExitCode(ExitStatus.usage)
        }
        rollout.gate = gate
        rollout.pilot = pilot
        let job = StagedRollout(push: push, options: rollout)
        let result = waitFor { await job.run { writeStandardOutput($0) } }
        if let last = result.stages.last { Self.say(last.push, dryRun: false) }
        if let report, let last = result.stages.last { Self.writeReport(last.push, to: report) }
        if let stopped = result.stopped { writeStandardError("appconfig: push: rollout stopped: \(stopped)\n") }
        if let fatal = result.fatal, result.stages.last?.push.fatal == nil { writeStandardError("appconfig: push: \(fatal.message)\n") }
        if let fatal = result.fatal, fatal.code == PushCode.usage || fatal.code == PushCode.source || fatal.code == StatusCode.usage || fatal.code == StatusCode.source {
            throw ExitCode(ExitStatus.usage)
        }
        if result.exitStatus != ExitStatus.ok { throw ExitCode(result.exitStatus) }
    }

    /// Usage faults (a delivery the server does not take, an unreadable output) are status 2.
    static func exitStatus(_ result: PushResult) -> Int32 {
        if let fatal = result.fatal, fatal.code == PushCode.usage || fatal.code == PushCode.source { return ExitStatus.usage }
        return result.exitStatus
    }

    static func say(_ result: PushResult, dryRun: Bool) {
        let s = result.summary
        let p = s.plan
        if let fatal = result.fatal {
            writeStandardError("appconfig: push: \(fatal.message)\n")
            if s.devices.pushed + s.devices.removed == 0 { return }
        }
        if let held = s.heldBack {
            writeStandardError("appconfig: push: held back: \(held)\n")
            return
        }
        let devices = "\(p.devices) devices: \(p.new) new, \(p.changed) changed, \(p.removed) removed, \(p.unchanged) unchanged" + (p.removalsUnknown > 0 ? ", \(p.removalsUnknown) removals never pushed" : "") + (p.waiting > 0 ? ", \(p.waiting) waiting for a later stage" : "")
        if dryRun {
            writeStandardOutput("plan for \(s.server) at \(s.url) (journal \(s.journal)): \(devices)")
            let kinds = p.requests.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
            writeStandardOutput("requests (at most): " + (kinds.isEmpty ? "none" : kinds) + "; nothing was sent (--dry-run)")
            return
        }
        if p.toSend == 0 && result.fatal == nil {
            writeStandardOutput("pushed nothing to \(s.server) at \(s.url): \(devices)")
            return
        }
        writeStandardOutput("pushed \(s.devices.pushed) devices and \(s.devices.removed) removals to \(s.server) at \(s.url) in \(String(format1: s.seconds)) s "
            + "(\(s.requestsTotal) requests, \(s.requestsPerSecond) requests/s, \(s.notModified) unchanged, \(s.retries) retries); \(s.devices.failed) failed, \(s.devices.unchanged) unchanged")
        if s.collected + s.keptInSets > 0 { writeStandardOutput("collected \(s.collected) declarations no set names; \(s.keptInSets) left, still in a set") }
        if s.assetsVerified + s.assetsNotVerifiable > 0 { writeStandardOutput("verified \(s.assetsVerified) assets; \(s.assetsNotVerifiable) fetched with MDM authentication, not verified") }
        if !s.errorsByCode.isEmpty {
            writeStandardOutput("errors: " + s.errorsByCode.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
        }
        for f in result.failures.prefix(5) { writeStandardError("appconfig: push: device \(f.device): \(f.problem.message)\n") }
        if result.failures.count > 5 { writeStandardError("appconfig: push: ... and \(result.failures.count - 5) more devices (--report names each)\n") }
    }

    /// `summary.json` and `errors.jsonl` (a line per device problem: device, code, message, severity).
    static func writeReport(_ result: PushResult, to folder: String) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        if let data = try? encoder.encode(result.summary) { _ = FileManager.default.createFile(atPath: folder + "/summary.json", contents: data + Data("\n".utf8)) }
        var lines = Data()
        let lineEncoder = JSONEncoder()
        lineEncoder.outputFormatting = [.sortedKeys]
        struct Line: Encodable { var device: String?; var code: String; var severity: String; var message: String }
        for p in result.failures + result.warnings + (result.fatal.map { [PushDeviceProblem(device: "", problem: $0)] } ?? []) {
            let line = Line(device: p.device.isEmpty ? nil : p.device, code: p.problem.code.rawValue, severity: p.problem.severity.rawValue, message: p.problem.message)
            if let data = try? lineEncoder.encode(line) { lines += data + Data("\n".utf8) }
        }
        _ = FileManager.default.createFile(atPath: folder + "/errors.jsonl", contents: lines)
    }
}
