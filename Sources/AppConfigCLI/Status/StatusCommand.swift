import AppConfigCore
import AppConfigPush
import AppConfigStatus
import ArgumentParser
import Dispatch
import Foundation

/// `appconfig status SOURCE (--events FILE|- | --server kmfddm|nanohub --url URL --api-key ...)`:
/// what every device reports, joined to what was rendered and pushed.
struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "What every device reports, joined to the generation render published and push sent.",
        discussion: """
        Reads NanoMDM's or NanoHUB's webhook events (--events FILE, or - for standard input; a JSON object per \
        line) or a DDM server's status endpoints (--server kmfddm|nanohub), folds them onto the state kept beside \
        the output (SOURCE.status-state), and judges each device: current, stale, never-reported, pending, \
        invalid-declaration, asset-failed, app-config-rejected, app-not-managed, removed; acknowledged, error, \
        not-now for MDM commands; unknown-device for enrollments the generation does not know. \
        Exit 0 every device current or acknowledged, 3 some are not (or some events were unreadable), 1 fatal, 2 usage.
        """
    )

    @Argument(help: "What render published: an --out folder or a tar.") var source: String
    @Option(help: "Webhook events: a file of JSON objects, one per line, or - for standard input.") var events: String?
    @Option(help: "kmfddm or nanohub: read the server's status endpoints.") var server: String?
    @Option(help: "The server's base URL (https://; http:// only for loopback).") var url: String?
    @Option(name: .customLong("api-key"), help: "The API key: env:VAR or file:PATH (never the key itself).") var apiKey: String?
    @Option(help: "The state kept between runs (default: SOURCE.status-state).") var state: String?
    @Option(help: "The push journal (default: SOURCE.push-journal): the tokens the server computed.") var journal: String?
    @Option(name: .customLong("enrollment-id"), help: "The device variable that is the enrollment ID when neither the journal nor the key is (e.g. udid), read from --inventory.")
    var enrollmentID: String?
    @Option(help: "The inventory the output was rendered from: roll-ups by model and OS version (and --group-by).") var inventory: String?
    @Option(name: .customLong("device-key"), help: "The inventory's device key column, as given to render.") var deviceKey: String?
    @Option(name: .customLong("map"), help: "With --enrollment-id: VARIABLE=Column, as given to render; repeatable.") var map: [String] = []
    @Option(name: .customLong("group-by"), help: "A roll-up NAME=Column of the inventory (e.g. ou=Department); repeatable (default: model and os where found).")
    var groupBy: [String] = []
    @Option(help: "Requests in flight against the server (default 16).") var jobs = 16
    @Option(help: "Retries of a request that may succeed later (default 6).") var retries = 6
    @Option(help: "Seconds a request may take (default 30).") var timeout = 30.0
    @Option(name: .customLong("ca-file"), help: "PEM certificates to trust for https (default: the system's).") var caFile: String?
    @Option(help: "Write status.jsonl, summary.json and errors.jsonl into this folder.") var report: String?
    @Option(help: "Write one self-contained HTML page: a chart of states per variant and a searchable table.") var html: String?

    func validate() throws {
        if events != nil && server != nil { throw ValidationError("give --events or --server, not both") }
        if let server {
            guard server == "kmfddm" || server == "nanohub" else {
                throw ValidationError("--server \(server): kmfddm or nanohub (NanoMDM keeps no status: read its webhook's events with --events)")
            }
            if url == nil || apiKey == nil { throw ValidationError("--server needs --url and --api-key") }
        }
        if enrollmentID != nil && inventory == nil { throw ValidationError("--enrollment-id needs --inventory (where the variable's values are)") }
        guard jobs >= 1, retries >= 0, timeout > 0 else { throw ValidationError("--jobs, --retries and --timeout take positive numbers") }
    }

    func run() throws {
        HeapGrowth.inLargeSteps()
        var options = StatusOptions(source: source)
        options.statePath = state
        options.journal = journal
        options.inventory = inventory
        options.deviceKeyColumn = deviceKey
        options.jobs = jobs
        options.retries = retries
        options.timeout = timeout
        options.caFile = caFile
        for entry in groupBy {
            guard let eq = entry.firstIndex(of: "="), eq != entry.startIndex, entry.index(after: eq) != entry.endIndex else {
                throw ValidationError("--group-by \(entry): NAME=Column")
            }
            options.groupColumns.append((String(entry[..<eq]), String(entry[entry.index(after: eq)...])))
        }
        if let events {
            options.reports = .events(events)
            if events == "-" { options.standardInput = [UInt8](FileHandle.standardInput.readDataToEndOfFile()) }
        } else if let server, let url, let apiKey {
            let key: String
            do { key = try PushCommand.readKey(apiKey) } catch let f as PushCommand.Failure {
                writeStandardError("appconfig: status: \(f.message)\n")
                throw ExitCode(ExitStatus.usage)
            }
            options.reports = .server(kind: ServerKind(rawValue: server)!, url: url, apiKey: key)
        }
        do {
            if let variable = enrollmentID, let inventory {
                options.enrollmentIDs = try PushOptions.enrollmentIDs(inventory: inventory, variable: variable, deviceKeyColumn: deviceKey, columnMap: try PushCommand.columnMap(map))
            }
            let job = StatusJob(options)
            let result = try waitFor { () async -> Result<StatusResult, Problem> in
                do throws(Problem) { return .success(try await job.run()) } catch { return .failure(error) }
            }.get()
            writeStandardOutput(result.summary.text(), terminator: "")
            for p in result.problems.prefix(5) { writeStandardError("appconfig: status: \(p.description)\n") }
            if result.problems.count > 5 { writeStandardError("appconfig: status: ... and \(result.problems.count - 5) more unreadable events (--report lists each)\n") }
            if let report { try StatusReportFiles.write(result.verdicts, summary: result.summary, problems: result.problems, into: report) }
            if let html { try StatusReportFiles.atomicWrite(StatusPage.html(result.verdicts, summary: result.summary), to: html) }
            if !result.summary.allDone || !result.problems.isEmpty { throw ExitCode(ExitStatus.partial) }
        } catch let problem as Problem {
            writeStandardError("appconfig: status: \(problem.description)\n")
            let usage = problem.code == StatusCode.usage || problem.code == StatusCode.source || problem.code.rawValue == PushCode.usage.rawValue
            throw ExitCode(usage ? ExitStatus.usage : ExitStatus.failed)
        }
    }
}
