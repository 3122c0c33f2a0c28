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
        let source: PushSource
        do { source = try PushSource(options.source) } catch {
            throw Problem(StatusCode.source, at: error.location, error.message)
        }
        let journal = try PushJournal.existing(at: options.resolvedJournal)
        let join = StatusJoin(source: source, journal: journal, enrollments: options.enrollmentIDs ?? [:], groups: try groups(source))
        var fold = try StatusState.read(options.resolvedStatePath)
        switch options.reports {
        case .events(let path)?:
            if path == "-" {
                fold.fold(events: options.standardInput ?? [], file: "<stdin>")
            } else {
                try fold.fold(eventsFile: path)
            }
        case .server(let kind, let url, let key)?:
            guard source.delivery.isDDM else {
                throw Problem(StatusCode.usage, at: Location(), "\(options.source) is an \(source.delivery.rawValue) output: its results come as mdm.Connect events (--events), not from a DDM server")
            }
            let connection: ServerConnection
            do { connection = try ServerConnection(kind: kind, url: url, apiKey: key, connections: options.jobs, caFile: options.caFile, retries: options.retries, timeout: options.timeout) } catch {
                throw Problem(StatusCode.usage, at: error.location, error.message)
            }
            defer { connection.shutdown() }
            var reader = try ServerStatusReader(connection: connection)
            reader.jobs = options.jobs
            let ids = source.devices.filter { !$0.removed }.map { join.enrollment(of: $0.key) }
            let read: StatusFold
            do { read = try await reader.read(ids) } catch {
                throw Problem(StatusCode.server, at: error.location, error.message)
            }
            // The server's view is whole: it replaces what was kept for those enrollments.
            for (id, device) in read.devices { fold.devices[id] = device }
            fold.problems += read.problems
            fold.reports += read.reports
        case nil: break
        }
        let statePath = options.resolvedStatePath
        // The state is written while the join runs: at 1M devices its write is mostly the
        // kernel's copy and the disk's flush, seconds a core of the join need not wait for.
        let writing = options.reports == nil ? nil : WorkBeside { [fold] () throws(Problem) in try StatusState.write(fold, to: statePath) }
        let verdicts: [DeviceVerdict]
        do { verdicts = try join.verdicts(fold) } catch {
            _ = try? writing?.value()
            throw error
        }
        try writing?.value()
        let summary = StatusSummary(generation: options.source, delivery: source.delivery.rawValue, verdicts: verdicts, fold: fold)
        let problems = fold.problems
        OffThePath.release((consume source, consume journal, consume fold, consume join))
        return StatusResult(verdicts: verdicts, summary: summary, problems: problems)
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

/// The fold kept between runs: a header line, then per enrollment a line
/// `{"enrollment":…,"report":{…}}` (`DeviceReport` as JSON). Written by hand under a temporary
/// name, then renamed: JSONEncoder took a fifth of a 100k-event run (perf), this a few percent.
/// Read back lean, a line at a time on every core; a line the lean read does not take goes to the
/// values' reader, which says what is wrong with it.
enum StatusState {
    static let magic = "appconfig-status-state 1"
    static var header: [UInt8] { Array(#"{"state":"\#(magic)"}"#.utf8) + [0x0A] }

    static func read(_ path: String) throws(Problem) -> StatusFold {
        var fold = StatusFold()
        guard access(path, F_OK) == 0 else { return fold }
        let bytes: [UInt8]
        do { bytes = try readFileBytes(path, limit: 64 << 30) } catch { throw Problem(StatusCode.state, at: Location(file: path), error.problem.message) }
        let lines = bytes.lineRanges
        guard let first = lines.first, bytes[first].elementsEqual(header.dropLast()) else {
            throw Problem(StatusCode.state, at: Location(file: path, line: 1), "\(path) is not a state file appconfig status wrote")
        }
        let entries = try ParallelLines.map(lines.count - 1) { i throws(Problem) -> (String, DeviceReport)? in
            let line = bytes[lines[i + 1]]
            if line.isEmpty { return nil }
            if let lean = LeanJSON(line), let entry = decode(lean) { return entry }
            var message = "no enrollment and report"
            do throws(Problem) { _ = try JSONReader.document(Array(line), file: path) } catch { message = error.message }
            throw Problem(StatusCode.state, at: Location(file: path, line: i + 2), "not a line of a status state file: \(message)")
        }
        fold.devices.reserveCapacity(entries.count)
        for case let (id, report)? in entries { fold.devices[id] = report }
        return fold
    }

    static func write(_ fold: StatusFold, to path: String) throws(Problem) {
        // In the order of the enrollments' FNV-1a hashes (the same every run): sorting 1M strings
        // was a second of cache misses. Lines made on every core, a chunk each, written in order.
        let keys = Array(fold.devices.keys)
        let hashes = keys.map { key in Array(key.utf8).withView { fnv1a($0) } }
        let ids = keys.indices.sorted { hashes[$0] != hashes[$1] ? hashes[$0] < hashes[$1] : keys[$0] < keys[$1] }.map { keys[$0] }
        let devices = fold.devices, chunk = 4096
        let pieces = ParallelLines.map((ids.count + chunk - 1) / chunk, chunk: 1) { c -> [UInt8] in
            var piece: [UInt8] = []
            piece.reserveCapacity(chunk * 600)
            for id in ids[(c * chunk)..<min(ids.count, (c + 1) * chunk)] { appendLine(id, devices[id]!, to: &piece) }
            return piece
        }
        do { try StatusReportFiles.atomicWrite(parts: [header] + pieces, to: path) } catch {
            throw Problem(StatusCode.state, at: Location(file: path), error.message)
        }
    }

    static func appendLine(_ id: String, _ r: DeviceReport, to out: inout [UInt8]) {
        func string(_ s: String) { JSONText.appendString(s, to: &out) }
        func key(_ k: StaticString) { JSONText.append(k, to: &out) }
        func strings(_ list: [String]) {
            out.append(UInt8(ascii: "["))
            for (i, s) in list.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                string(s)
            }
            out.append(UInt8(ascii: "]"))
        }
        func object<V>(_ d: [String: V], _ value: (V) -> Void) {
            out.append(UInt8(ascii: "{"))
            for (i, k) in d.keys.sorted().enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                string(k)
                out.append(UInt8(ascii: ":"))
                value(d[k]!)
            }
            out.append(UInt8(ascii: "}"))
        }
        key(#"{"enrollment":"#)
        string(id)
        key(#","report":{"apps":"#)
        object(r.apps) { a in
            key(#"{"extensionStates":"#)
            object(a.extensionStates) { string($0) }
            key(#","reasons":"#)
            strings(a.reasons)
            if let s = a.state { key(#","state":"#); string(s) }
            if let s = a.declaration { key(#","declaration":"#); string(s) }
            if let s = a.configState { key(#","configState":"#); string(s) }
            out.append(UInt8(ascii: "}"))
        }
        key(#","commands":"#)
        object(r.commands) { c in
            key(#"{"errorChain":"#)
            strings(c.errorChain)
            key(#","status":"#)
            string(c.status)
            out.append(UInt8(ascii: "}"))
        }
        key(#","declarations":"#)
        object(r.declarations) { d in
            key(#"{"active":"#)
            out += (d.active ? "true" : "false").utf8
            key(#","reasons":"#)
            strings(d.reasons)
            key(#","token":"#)
            string(d.token)
            key(#","valid":"#)
            string(d.valid)
            out.append(UInt8(ascii: "}"))
        }
        key(#","errors":"#)
        strings(r.errors)
        if let received = r.received { key(#","received":"#); string(received) }
        key(#","reports":"#)
        out += String(r.reports).utf8
        key("}}\n")
    }

    /// A line read back: the enrollment and its report; nil when it is not one.
    static func decode(_ j: LeanJSON) -> (String, DeviceReport)? {
        func strings(_ node: Int?) -> [String] { j.items(node).compactMap(j.string) }
        guard let id = j.string(j.member(0, "enrollment")), let r = j.member(0, "report"), j.isObject(r) else { return nil }
        var report = DeviceReport()
        for (key, value) in j.members(j.member(r, "apps")) {
            guard let bundle = j.string(key) else { return nil }
            var states: [String: String] = [:]
            for (e, state) in j.members(j.member(value, "extensionStates")) { if let e = j.string(e) { states[e] = j.string(state) } }
            report.apps[bundle] = .init(state: j.string(j.member(value, "state")), declaration: j.string(j.member(value, "declaration")),
                                        configState: j.string(j.member(value, "configState")), extensionStates: states,
                                        reasons: strings(j.member(value, "reasons")))
        }
        for (key, value) in j.members(j.member(r, "commands")) {
            guard let uuid = j.string(key) else { return nil }
            report.commands[uuid] = .init(status: j.string(j.member(value, "status")) ?? "", errorChain: strings(j.member(value, "errorChain")))
        }
        for (key, value) in j.members(j.member(r, "declarations")) {
            guard let declaration = j.string(key) else { return nil }
            report.declarations[declaration] = .init(token: j.string(j.member(value, "token")) ?? "", active: j.bool(j.member(value, "active")) ?? false,
                                                     valid: j.string(j.member(value, "valid")) ?? "unknown", reasons: strings(j.member(value, "reasons")))
        }
        report.errors = strings(j.member(r, "errors"))
        report.received = j.string(j.member(r, "received"))
        report.reports = j.integer(j.member(r, "reports")) ?? 0
        return (id, report)
    }
}
