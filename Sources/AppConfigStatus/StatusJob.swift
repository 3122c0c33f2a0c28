import AppConfigCore
import AppConfigPush
import AppConfigSources
import AppConfigSpec
import Dispatch
import Foundation

/// What `appconfig status` is asked.
public struct StatusOptions: Sendable {
    /// Where the reports come from this run (nil: only the state file kept before).
    public enum Reports: Sendable {
        /// Webhook events, a JSON object per line; `-` reads them from standard input.
        case events(String)
        /// A DDM server's status endpoints.
        case server(kind: ServerKind, url: String, apiKey: String)
    }

    /// What `render` published (an `--out` folder or a tar).
    public var source: String
    public var reports: Reports?
    /// The fold kept between runs (default `SOURCE.status-state`); events fold on top of it.
    public var statePath: String?
    /// The push journal (default `SOURCE.push-journal`, when there is one): the server's tokens.
    public var journal: String?
    /// Device key -> enrollment ID when neither the journal nor the key is it.
    public var enrollmentIDs: [String: String]?
    /// The inventory the output was rendered from, for the roll-ups' groups.
    public var inventory: String?
    public var deviceKeyColumn: String?
    /// Roll-up groups read from the inventory: name -> column (default `model` and `os` where found).
    public var groupColumns: [(name: String, column: String)] = []
    public var jobs = 16
    public var retries = 6
    public var timeout = 30.0
    public var caFile: String?
    /// Standard input's bytes, for `--events -` (the command line reads them).
    public var standardInput: [UInt8]?

    public init(source: String) { self.source = source }

    public var resolvedStatePath: String { statePath ?? Self.beside(source, ".status-state") }
    public var resolvedJournal: String { journal ?? Self.beside(source, ".push-journal") }

    static func beside(_ source: String, _ suffix: String) -> String {
        var s = source
        while s.count > 1 && s.hasSuffix("/") { s.removeLast() }
        return s + suffix
    }
}

/// What a status run found.
public struct StatusResult: Sendable {
    public var verdicts: [DeviceVerdict]
    public var summary: StatusSummary
    /// Events or reports that could not be read (the others were folded).
    public var problems: [Problem]
}

/// `appconfig status`, for an embedder: read the generation and the journal, fold this run's
/// reports onto the state kept before, keep the state, join.
public struct StatusJob: Sendable {
    public let options: StatusOptions

    public init(_ options: StatusOptions) { self.options = options }

    public func run() async throws(Problem) -> StatusResult {
        // The generation is read on a thread of its own while the events are folded (they need
        // nothing of it): each phase alone left a core idle part of its time (1M devices: the
        // two in turn 8.8 s, together 7.4-7.8). Its problems still come first.
        let path = options.source
        let reading = WorkBeside { () throws(Problem) -> PushSource in
            do throws(Problem) { return try PushSource(path) } catch { throw Problem(StatusCode.source, at: error.location, error.message) }
        }
        var fold = StatusFold()
        var folding: Problem?
        if case .events(let events)? = options.reports {
            do throws(Problem) { fold = try Self.fold(events: events, state: options.resolvedStatePath, standardInput: options.standardInput) } catch { folding = error }
        }
        let source = try reading.value()
        let journal = try PushJournal.existing(at: options.resolvedJournal)
        let join = StatusJoin(source: source, journal: journal, enrollments: options.enrollmentIDs ?? [:], groups: try groups(source))
        if let folding { throw folding }
        switch options.reports {
        case .events?: break
        case .server(let kind, let url, let key)?:
            guard source.delivery.isDDM else {
                throw Problem(StatusCode.usage, at: Location(), "\(options.source) is an \(source.delivery.rawValue) output: its results come as mdm.Connect events (--events), not from a DDM server")
            }
            fold = try StatusState.read(options.resolvedStatePath)
            let connection: ServerConnection
            do throws(Problem) { connection = try ServerConnection(kind: kind, url: url, apiKey: key, connections: options.jobs, caFile: options.caFile, retries: options.retries, timeout: options.timeout) } catch {
                throw Problem(StatusCode.usage, at: error.location, error.message)
            }
            defer { connection.shutdown() }
            var reader = try ServerStatusReader(connection: connection)
            reader.jobs = options.jobs
            let ids = source.devices.filter { !$0.removed }.map { join.enrollment(of: $0.key) }
            let read: StatusFold
            do throws(Problem) { read = try await reader.read(ids) } catch {
                throw Problem(StatusCode.server, at: error.location, error.message)
            }
            // The server's view is whole: it replaces what was kept for those enrollments.
            for (id, device) in read.packed { fold.packed[id] = device }
            fold.problems += read.problems
            fold.reports += read.reports
        case nil: fold = try StatusState.read(options.resolvedStatePath)
        }
        let statePath = options.resolvedStatePath
        // The state is written while the join runs, on a thread of its own: at 1M devices its
        // making and writing take longer than the join itself.
        let writing = options.reports == nil ? nil : WorkBeside { [fold] () throws(Problem) in try StatusState.write(fold, to: statePath) }
        let verdicts: [DeviceVerdict]
        do throws(Problem) { verdicts = try join.verdicts(fold) } catch {
            _ = try? writing?.value()
            throw error
        }
        // The summary is made while the state's write ends (it needs only the verdicts and the fold).
        let summary = StatusSummary(generation: options.source, delivery: source.delivery.rawValue, verdicts: verdicts, fold: fold)
        try writing?.value()
        let problems = fold.problems
        OffThePath.release((consume source, consume journal, consume fold, consume join))
        return StatusResult(verdicts: verdicts, summary: summary, problems: problems)
    }

    /// Waits until the memory earlier runs handed to another thread to free is freed, and gives
    /// the allocator's free pages back to the system: for an embedder that runs jobs back to back
    /// (a benchmark's samples), so that one run's freeing is not counted in the next.
    public static func awaitReleased() {
        OffThePath.pending.wait()
        HeapGrowth.returnFreePages()
    }

    /// The state kept before with `--events`' events folded on top.
    static func fold(events path: String, state: String, standardInput: [UInt8]?) throws(Problem) -> StatusFold {
        var fold = try StatusState.read(state)
        if path == "-" {
            fold.fold(events: standardInput ?? [], file: "<stdin>")
        } else {
            try fold.fold(eventsFile: path)
        }
        return fold
    }

    /// The roll-up groups of each device from the inventory: the columns asked for, else `model`
    /// (the model variable's column) and `os` (an OS version column) where the export has them.
    func groups(_ source: PushSource) throws(Problem) -> [String: [String: String]] {
        guard let inventory = options.inventory else { return [:] }
        var invOptions = InventoryOptions()
        invOptions.deviceKeyColumn = options.deviceKeyColumn
        invOptions.deviceVariables = []
        invOptions.extraColumns = nil
        let table: InventoryTable
        do { table = try InventoryTable.load(inventory, options: invOptions) } catch {
            throw Problem(StatusCode.usage, at: error.location, "--inventory: \(error.message)")
        }
        let folded = table.header.map { $0.lowercased() }
        var wanted = options.groupColumns
        if wanted.isEmpty {
            for (name, candidates) in [("model", ["model", "product name", "device model"]),
                                       ("os", ["os version", "operating system version", "osversion", "ios version", "os"]),
                                       ("ou", ["ou", "organizational unit", "organizationalunit"])] {
                if let c = candidates.first(where: { folded.contains($0) }) { wanted.append((name, table.header[folded.firstIndex(of: c)!])) }
            }
        }
        var slots: [(String, Int)] = []
        for (name, column) in wanted {
            guard let c = folded.firstIndex(of: column.lowercased()), let slot = table.keptColumns.firstIndex(of: c) else {
                throw Problem(StatusCode.usage, at: Location(file: inventory), "--group-by \(name)=\(column): \(inventory) has no column \(column)")
            }
            slots.append((name, slot))
        }
        var out: [String: [String: String]] = [:]
        out.reserveCapacity(table.rowCount)
        for row in 0..<table.rowCount {
            var g: [String: String] = [:]
            for (name, slot) in slots { g[name] = table.string(row: row, slot: slot) }
            out[table.deviceKey(row)] = g
        }
        return out
    }
}
