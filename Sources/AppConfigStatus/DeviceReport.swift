import AppConfigCore
import AppConfigSpec

/// What one device has reported on the status channel, folded over its reports in order: the
/// declarations it holds (`management.declarations`: each one's token, active and valid state,
/// reasons), its managed apps (`app.managed.list`: state, `config-state`, reasons), the errors
/// of its last report, and for MDM deliveries the results of the commands it answered.
public struct DeviceReport: Sendable, Equatable, Codable {
    public struct DeclarationState: Sendable, Equatable, Codable {
        public var token: String
        public var active: Bool
        /// `unknown`, `invalid` or `valid`.
        public var valid: String
        public var reasons: [String]
    }

    public struct AppState: Sendable, Equatable, Codable {
        /// `managed`, `installing`, `failed`...; nil when the report leaves it out.
        public var state: String?
        public var declaration: String?
        /// `config-state`'s `app-config-state.state` (`unknown|invalid|valid`).
        public var configState: String?
        /// `extension-config-state`: per extension bundle ID, its state.
        public var extensionStates: [String: String]
        public var reasons: [String]
    }

    public struct CommandResult: Sendable, Equatable, Codable {
        /// `Acknowledged`, `Error`, `NotNow`.
        public var status: String
        /// `ErrorChain`'s entries, as `domain code: description`.
        public var errorChain: [String]
    }

    /// Declarations by Identifier.
    public var declarations: [String: DeclarationState] = [:]
    /// Managed apps by bundle ID.
    public var apps: [String: AppState] = [:]
    /// The root `Errors` of the newest report (`StatusItem: code`).
    public var errors: [String] = []
    /// Command results by CommandUUID.
    public var commands: [String: CommandResult] = [:]
    /// Reports and results folded, and when the newest came (as the event or server said).
    public var reports = 0
    public var received: String?

    public init() {}
}

/// Reads one status report (Apple's `StatusReport`: `StatusItems`, `Errors`, `FullReport`) into a
/// device's fold. A full report replaces what it carries; an incremental one changes only what it
/// names: `management.declarations` comes whole whenever it changes, `app.managed.list` item by
/// item (`_removed` takes an app out).
public enum StatusReportReader {
    /// What one report says, read (in parallel with others) before it is folded in order, packed
    /// as `PackedReport` packs (see there): when it came (an optional string), its errors
    /// (strings), `management.declarations`' entries when it carries them, then when it carries
    /// `app.managed.list` that list's changes (their count, then each a bundle ID, a byte 0 for an
    /// app `_removed` or 1 before its state), all in the byte order of their keys.
    public struct Update: Sendable {
        public var full: Bool
        var carriesDeclarations = false
        var carriesApps = false
        var bytes: [UInt8] = []

        /// `app.managed.list`'s entries, when the report carries it: nil for an app `_removed`.
        public var apps: [(String, DeviceReport.AppState?)]? {
            guard carriesApps else { return nil }
            return bytes.withView { b in
                var c = PackedCursor(b)
                _ = c.optional()
                _ = c.skipStrings()
                if carriesDeclarations { _ = c.skipEntries(PackedCursor.skipDeclaration) }
                var out: [(String, DeviceReport.AppState?)] = []
                for _ in 0..<(c.count() ?? 0) {
                    guard let key = c.text(), let present = c.flag() else { break }
                    out.append((key, present ? c.appState() : nil))
                }
                return out
            }
        }
    }

    /// Reads a report's JSON text; `at` names it in errors (an event's line, its enrollment).
    /// Text that is not JSON is named with the values' reader's line and column.
    public static func read(json: [UInt8], at: Where) throws(Problem) -> Update {
        guard let lean = LeanJSON(json) else {
            do { _ = try JSONReader.document(json, file: at.location.file) } catch {
                throw failure(at, "not JSON (\(error.message))")
            }
            throw failure(at, "not JSON")
        }
        return try read(lean, received: nil, at: at)
    }

    /// Reads a report packed straight from the JSON's bytes: no string is made for an
    /// identifier, token or state (at 1M events that was a dozen objects each, perf).
    static func read(_ j: LeanJSON, received: ArraySlice<UInt8>?, at: Where) throws(Problem) -> Update {
        guard j.isObject(0) else { throw failure(at, "a status report is a JSON object") }
        var update = Update(full: j.bool(j.member(0, "FullReport")) ?? false)
        var w = PackedWriter()
        w.bytes.reserveCapacity(j.bytes.count / 2)
        w.optional(received)
        var errors: [String] = []
        for e in j.items(j.member(0, "Errors")) where j.isObject(e) {
            let item = j.string(j.member(e, "StatusItem")) ?? "?"
            let codes = reasons(j, j.member(e, "Reasons"))
            errors.append(codes.isEmpty ? item : "\(item): \(codes.joined(separator: ", "))")
        }
        w.strings(errors)
        if let items = j.member(0, "StatusItems") {
            guard j.isObject(items) else { throw failure(at, "StatusItems is not an object") }
            if let declarations = j.member(j.member(items, "management"), "declarations") {
                update.carriesDeclarations = true
                try packDeclarations(j, declarations, into: &w, at: at)
            }
            if let list = j.member(j.member(j.member(items, "app"), "managed"), "list") {
                update.carriesApps = true
                try packApps(j, list, into: &w, at: at)
            }
        }
        update.bytes = w.bytes
        return update
    }

    static func packDeclarations(_ j: LeanJSON, _ node: Int, into w: inout PackedWriter, at: Where) throws(Problem) {
        guard j.isObject(node) else { throw failure(at, "management.declarations is not an object") }
        var scratch = PackedWriter()
        var spans: [(key: Range<Int>, entry: Range<Int>)] = []
        for (key, group) in j.members(node) {
            guard j.isArray(group) else { throw failure(at, "management.declarations.\(j.string(key) ?? "") is not an array") }
            for item in j.items(group) {
                guard j.isObject(item), let id = j.utf8(j.member(item, "identifier")) else {
                    throw failure(at, "management.declarations.\(j.string(key) ?? "") holds an entry without an identifier")
                }
                let start = scratch.bytes.count
                scratch.string(id)
                let keyEnd = scratch.bytes.count
                scratch.string(j.utf8(j.member(item, "server-token")) ?? [])
                scratch.bytes.append(j.bool(j.member(item, "active")) == true ? 1 : 0)
                if let valid = j.utf8(j.member(item, "valid")) { scratch.string(valid) } else { scratch.string("unknown") }
                packReasons(j, j.member(item, "reasons"), into: &scratch)
                spans.append(((keyEnd - id.count)..<keyEnd, start..<scratch.bytes.count))
            }
        }
        scratch.bytes.withView { w.sortedEntries($0, spans) }
    }

    static func packApps(_ j: LeanJSON, _ node: Int, into w: inout PackedWriter, at: Where) throws(Problem) {
        guard j.isArray(node) else { throw failure(at, "app.managed.list is not an array") }
        var scratch = PackedWriter()
        var spans: [(key: Range<Int>, entry: Range<Int>)] = []
        for item in j.items(node) {
            guard j.isObject(item), let id = j.utf8(j.member(item, "identifier")) else {
                throw failure(at, "app.managed.list holds an entry without an identifier")
            }
            let start = scratch.bytes.count
            scratch.string(id)
            let keyEnd = scratch.bytes.count
            if j.bool(j.member(item, "_removed")) == true {
                scratch.bytes.append(0)
            } else {
                scratch.bytes.append(1)
                scratch.optional(j.utf8(j.member(item, "state")))
                scratch.optional(j.utf8(j.member(item, "declaration-identifier")))
                let config = j.member(item, "config-state")
                scratch.optional(config.flatMap { j.utf8(j.member(j.member($0, "app-config-state"), "state")) })
                // In key order, the last of equal keys kept (as the dictionary it unpacks to).
                var states = PackedWriter()
                var spans: [(key: Range<Int>, entry: Range<Int>)] = []
                if let exts = config.flatMap({ j.member($0, "extension-config-state") }) {
                    for (key, value) in j.members(exts) {
                        guard let k = j.utf8(key), let state = j.utf8(j.member(value, "state")) else { continue }
                        let start = states.bytes.count
                        states.string(k)
                        let keyEnd = states.bytes.count
                        states.string(state)
                        spans.append(((keyEnd - k.count)..<keyEnd, start..<states.bytes.count))
                    }
                }
                states.bytes.withView { scratch.sortedEntries($0, spans) }
                packReasons(j, j.member(item, "reasons"), into: &scratch)
            }
            spans.append(((keyEnd - id.count)..<keyEnd, start..<scratch.bytes.count))
        }
        scratch.bytes.withView { w.sortedEntries($0, spans) }
    }

    /// `reasons` (`[{code, description, details}]`) packed as `reasons(_:_:)` gives them.
    static func packReasons(_ j: LeanJSON, _ node: Int?, into w: inout PackedWriter) {
        guard let node else { return w.count(0) }
        let codes = j.items(node).compactMap { r in j.utf8(j.member(r, "code")).map { ($0, j.utf8(j.member(r, "description")) ?? []) } }
        w.count(codes.count)
        for (code, description) in codes {
            if description.isEmpty {
                w.string(code)
            } else {
                w.count(code.count + description.count + 3)
                w.bytes += code
                w.bytes += " (".utf8
                w.bytes += description
                w.bytes.append(0x29)
            }
        }
    }

    /// `reasons` (`[{code, description, details}]`) as their codes, a description beside each when given.
    static func reasons(_ j: LeanJSON, _ node: Int?) -> [String] {
        j.items(node).compactMap { r in
            guard let code = j.string(j.member(r, "code")) else { return nil }
            if let d = j.string(j.member(r, "description")), !d.isEmpty { return "\(code) (\(d))" }
            return code
        }
    }

    /// `reasons` of a value the values' reader read (the server's answers).
    static func reasons(_ value: RawValue?) -> [String] {
        guard let value, case .array(let list) = value.kind else { return [] }
        return list.compactMap { r in
            guard case .dictionary(let o) = r.kind, let code = string(o, "code") else { return nil }
            if let d = string(o, "description"), !d.isEmpty { return "\(code) (\(d))" }
            return code
        }
    }

    static func member(_ o: [RawValue.Member], _ key: String) -> RawValue? { o.first { $0.key == key }?.value }

    static func string(_ o: [RawValue.Member], _ key: String) -> String? {
        if case .string(let s)? = member(o, key)?.kind { s } else { nil }
    }

    /// Where a report came from, for its errors: a place in a file, and the enrollment.
    public struct Where: Sendable {
        public var location: Location
        public var enrollment: String
        public init(_ location: Location, enrollment: String) {
            self.location = location
            self.enrollment = enrollment
        }
    }

    static func failure(_ at: Where, _ message: String) -> Problem {
        Problem(StatusCode.report, at: at.location, "the status report of \(Problem.printable(at.enrollment)): \(message)")
    }
}
