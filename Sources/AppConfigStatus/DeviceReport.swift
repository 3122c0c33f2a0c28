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
    /// What one report says, read (in parallel with others) before it is folded in order.
    public struct Update: Sendable {
        public var full: Bool
        /// `management.declarations` whole, when the report carries it.
        public var declarations: [String: DeviceReport.DeclarationState]?
        /// `app.managed.list`'s entries, when the report carries it: nil for an app `_removed`.
        public var apps: [(String, DeviceReport.AppState?)]?
        public var errors: [String]
        public var received: String?

        /// Folds the report into the device's state.
        public func apply(to device: inout DeviceReport) {
            device.reports += 1
            if let received { device.received = received }
            if let declarations { device.declarations = declarations } else if full { device.declarations = [:] }
            if full { device.apps = [:] }
            for (id, app) in apps ?? [] { device.apps[id] = app }
            device.errors = errors
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
        return try read(lean, at: at)
    }

    static func read(_ j: LeanJSON, at: Where) throws(Problem) -> Update {
        guard j.isObject(0) else { throw failure(at, "a status report is a JSON object") }
        let full = j.bool(j.member(0, "FullReport")) ?? false
        var update = Update(full: full, errors: [])
        if let items = j.member(0, "StatusItems") {
            guard j.isObject(items) else { throw failure(at, "StatusItems is not an object") }
            if let declarations = j.member(j.member(items, "management"), "declarations") {
                update.declarations = try readDeclarations(j, declarations, at: at)
            }
            if let list = j.member(j.member(j.member(items, "app"), "managed"), "list") { update.apps = try readApps(j, list, at: at) }
        }
        for e in j.items(j.member(0, "Errors")) where j.isObject(e) {
            let item = j.string(j.member(e, "StatusItem")) ?? "?"
            let codes = reasons(j, j.member(e, "Reasons"))
            update.errors.append(codes.isEmpty ? item : "\(item): \(codes.joined(separator: ", "))")
        }
        return update
    }

    static func readDeclarations(_ j: LeanJSON, _ node: Int, at: Where) throws(Problem) -> [String: DeviceReport.DeclarationState] {
        guard j.isObject(node) else { throw failure(at, "management.declarations is not an object") }
        var out: [String: DeviceReport.DeclarationState] = [:]
        for (key, group) in j.members(node) {
            guard j.isArray(group) else { throw failure(at, "management.declarations.\(j.string(key) ?? "") is not an array") }
            for item in j.items(group) {
                guard j.isObject(item), let id = j.string(j.member(item, "identifier")) else {
                    throw failure(at, "management.declarations.\(j.string(key) ?? "") holds an entry without an identifier")
                }
                out[id] = .init(token: j.string(j.member(item, "server-token")) ?? "", active: j.bool(j.member(item, "active")) ?? false,
                                valid: j.string(j.member(item, "valid")) ?? "unknown", reasons: reasons(j, j.member(item, "reasons")))
            }
        }
        return out
    }

    static func readApps(_ j: LeanJSON, _ node: Int, at: Where) throws(Problem) -> [(String, DeviceReport.AppState?)] {
        guard j.isArray(node) else { throw failure(at, "app.managed.list is not an array") }
        var out: [(String, DeviceReport.AppState?)] = []
        for item in j.items(node) {
            guard j.isObject(item), let id = j.string(j.member(item, "identifier")) else {
                throw failure(at, "app.managed.list holds an entry without an identifier")
            }
            if j.bool(j.member(item, "_removed")) == true {
                out.append((id, nil))
                continue
            }
            var app = DeviceReport.AppState(state: j.string(j.member(item, "state")), declaration: j.string(j.member(item, "declaration-identifier")),
                                            configState: nil, extensionStates: [:], reasons: reasons(j, j.member(item, "reasons")))
            if let config = j.member(item, "config-state") {
                app.configState = j.string(j.member(j.member(config, "app-config-state"), "state"))
                if let exts = j.member(config, "extension-config-state") {
                    for (key, value) in j.members(exts) {
                        if let k = j.string(key), let state = j.string(j.member(value, "state")) { app.extensionStates[k] = state }
                    }
                }
            }
            out.append((id, app))
        }
        return out
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
