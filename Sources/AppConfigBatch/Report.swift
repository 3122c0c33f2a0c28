import AppConfigSpec
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The run's account on disk: `summary.json` (the `RunSummary`), `changes.jsonl` (with a previous
/// generation: one line per device added, changed or removed) and `errors.jsonl` (one JSON
/// object a line: every device that failed, every row or entry skipped, every device whose user
/// was not found). Written last, each file atomically. `redact` leaves values out.
public struct RunReport {
    public var summary: RunSummary
    public var redact: Bool
    /// `changes.jsonl`, when the run compared with a previous generation.
    public var changes: [UInt8]?

    public init(summary: RunSummary, redact: Bool, changes: [UInt8]? = nil) {
        self.summary = summary
        self.redact = redact
        self.changes = changes
    }

    /// Creates the report folder (and its parents) and checks that a file can be written there:
    /// done before rendering, so that a bad `--report` is found before anything is published.
    public static func prepare(_ directory: String) throws(Problem) {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw Problem(.reportWrite, at: Location(file: directory), "cannot create \(directory): \(error.localizedDescription)")
        }
        let probe = directory + "/.appconfig-probe-\(getpid())"
        let fd = open(probe, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw Problem(.reportWrite, at: Location(file: directory), "cannot write into \(directory): \(systemError())") }
        close(fd)
        unlink(probe)
    }

    /// One line per problem (a device with three failing keys has three): code, message, and where
    /// known device, serialNumber, userKey, key, variable, dn, source, and the value unless redacted.
    /// The schema is docs/errors-jsonl.md.
    public func errorLines() -> [String] {
        (summary.failures.flatMap(\.problems) + summary.problems).map { p in
            var o: [String: Any] = ["code": p.code.rawValue, "message": redact ? Self.redacted(p.message, p.value) : p.message]
            if let device = p.location.device { o["device"] = device }
            if let row = p.location.row, let identity = summary.identities[row] {
                if let serial = identity.serialNumber { o["serialNumber"] = serial }
                if let user = identity.userKey { o["userKey"] = user }
                if let assignments = identity.assignments { o["assignments"] = assignments }
            }
            if let dn = p.location.dn { o["dn"] = dn }
            if let key = p.location.key { o["key"] = key }
            if let v = p.variable { o["variable"] = v.description }
            if let source = p.location.place { o["source"] = source }
            if !redact, let v = p.value { o["value"] = v }
            return Self.json(o)
        }
    }

    public func write(to directory: String) throws(Problem) {
        let errors = errorLines().map { $0 + "\n" }.joined()
        do {
            try writeFileAtomically(Array(errors.utf8), to: directory + "/errors.jsonl")
            if let changes { try writeFileAtomically(changes, to: directory + "/changes.jsonl") }
            try writeFileAtomically(Array(summary.json().utf8), to: directory + "/summary.json")
        } catch {
            throw Problem(.reportWrite, at: error.location, error.message)
        }
    }

    static func redacted(_ message: String, _ value: String?) -> String {
        guard let value, !value.isEmpty else { return message }
        return message.replacingOccurrences(of: value, with: "<redacted>")
    }

    static func json(_ object: [String: Any]) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }
}
