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

    /// Reads `report`; `at` names it in errors (an event's line, its enrollment).
    public static func read(_ report: RawValue, at: Where) throws(Problem) -> Update {
        guard case .dictionary(let top) = report.kind else { throw failure(at, "a status report is a JSON object, not \(report.typeName)") }
        let full = member(top, "FullReport").map { if case .boolean(let b) = $0.kind { b } else { false } } ?? false
        var update = Update(full: full, errors: [])
        if let items = member(top, "StatusItems") {
            guard case .dictionary = items.kind else { throw failure(at, "StatusItems is \(items.typeName), not an object") }
            if let declarations = path(items, ["management", "declarations"]) {
                update.declarations = try readDeclarations(declarations, at: at)
            }
            if let list = path(items, ["app", "managed", "list"]) { update.apps = try readApps(list, at: at) }
        }
        if let errors = member(top, "Errors"), case .array(let list) = errors.kind {
            for e in list {
                guard case .dictionary(let o) = e.kind else { continue }
                let item = string(o, "StatusItem") ?? "?"
                let codes = reasons(member(o, "Reasons"))
                update.errors.append(codes.isEmpty ? item : "\(item): \(codes.joined(separator: ", "))")
            }
        }
        return update
    }

    static func readDeclarations(_ value: RawValue, at: Where) throws(Problem) -> [String: DeviceReport.DeclarationState] {
        guard case .dictionary(let groups) = value.kind else { throw failure(at, "management.declarations is \(value.typeName), not an object") }
        var out: [String: DeviceReport.DeclarationState] = [:]
        for group in groups {
            guard case .array(let list) = group.value.kind else {
                throw failure(at, "management.declarations.\(group.key) is \(group.value.typeName), not an array")
            }
            for item in list {
                guard case .dictionary(let o) = item.kind, let id = string(o, "identifier") else {
                    throw failure(at, "management.declarations.\(group.key) holds an entry without an identifier")
                }
                let active = member(o, "active").map { if case .boolean(let b) = $0.kind { b } else { false } } ?? false
                out[id] = .init(token: string(o, "server-token") ?? "", active: active, valid: string(o, "valid") ?? "unknown",
                                reasons: reasons(member(o, "reasons")))
            }
        }
        return out
    }

    static func readApps(_ value: RawValue, at: Where) throws(Problem) -> [(String, DeviceReport.AppState?)] {
        guard case .array(let list) = value.kind else { throw failure(at, "app.managed.list is \(value.typeName), not an array") }
        var out: [(String, DeviceReport.AppState?)] = []
        for item in list {
            guard case .dictionary(let o) = item.kind, let id = string(o, "identifier") else {
                throw failure(at, "app.managed.list holds an entry without an identifier")
            }
            if case .boolean(true)? = member(o, "_removed")?.kind {
                out.append((id, nil))
                continue
            }
            var app = DeviceReport.AppState(state: string(o, "state"), declaration: string(o, "declaration-identifier"),
                                            configState: nil, extensionStates: [:], reasons: reasons(member(o, "reasons")))
            if let config = member(o, "config-state"), case .dictionary(let c) = config.kind {
                if let a = member(c, "app-config-state"), case .dictionary(let s) = a.kind { app.configState = string(s, "state") }
                if let e = member(c, "extension-config-state"), case .dictionary(let exts) = e.kind {
                    for ext in exts {
                        if case .dictionary(let s) = ext.value.kind, let state = string(s, "state") { app.extensionStates[ext.key] = state }
                    }
                }
            }
            out.append((id, app))
        }
        return out
    }

    /// `reasons` (`[{code, description, details}]`) as their codes, a description beside each when given.
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

    static func path(_ value: RawValue, _ keys: [String]) -> RawValue? {
        var v = value
        for k in keys {
            guard case .dictionary(let o) = v.kind, let next = member(o, k) else { return nil }
            v = next
        }
        return v
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
