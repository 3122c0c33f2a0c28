import AppConfigCore
import AppConfigOutput
import Foundation

/// The run's account on disk: `summary.json` (the `RunSummary`), `changes.jsonl` (with a previous
/// generation: one line per device added, changed or removed) and `errors.jsonl` (one JSON
/// object a line: every device that failed, every row or entry skipped, every device whose user
/// was not found). Written last, each file atomically. `redact` leaves values out.
package struct RunReport {
    package var summary: RunSummary
    package var redact: Bool
    /// `changes.jsonl`, when the run compared with a previous generation.
    package var changes: [UInt8]?
    /// `diff.jsonl`, when the run compared with a previous generation: each changed device's keys.
    package var diff: [UInt8]?

    package init(summary: RunSummary, redact: Bool, changes: [UInt8]? = nil) {
        self.summary = summary
        self.redact = redact
        self.changes = changes
    }

    /// Creates the report folder (and its parents) and checks that a file can be written there:
    /// done before rendering, so that a bad `--report` is found before anything is published.
    package static func prepare(_ directory: String) throws(Problem) {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw Problem(.reportWrite, at: Location(file: directory), "cannot create \(directory): \(error.localizedDescription)")
        }
        // A random name, created exclusively: never a planted file or symlink's target.
        let probe = directory + "/.appconfig-probe-\(getpid())-" + String(UInt32.random(in: 0...UInt32.max), radix: 16)
        let fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw Problem(.reportWrite, at: Location(file: directory), "cannot write into \(directory): \(systemError())") }
        close(fd)
        unlink(probe)
    }

    /// One line per problem (a device with three failing keys has three): code, message, and where
    /// known device, serialNumber, userKey, assignments, key, variable, dn, source, and the value
    /// unless redacted. Keys in sorted order. The schema is docs/errors-jsonl.md. Written straight
    /// into bytes: JSONSerialization was slow for tens of thousands of problems.
    package func errorsJSONL() -> [UInt8] {
        var out: [UInt8] = []
        // The sources' problems first (a user not found, a device without a user): they are the
        // causes of the device failures listed after them.
        for p in summary.problems + summary.failures.flatMap(\.problems) {
            let identity = p.location.row.flatMap { summary.identities[$0] }
            var first = true
            func field(_ name: StaticString, _ write: (inout [UInt8]) -> Void) {
                out.append(UInt8(ascii: first ? "{" : ","))
                first = false
                name.withUTF8Buffer { JSONText.appendString($0, to: &out) }
                out.append(UInt8(ascii: ":"))
                write(&out)
            }
            func field(_ name: StaticString, _ text: String?) {
                if let text { field(name) { JSONText.appendString(text, to: &$0) } }
            }
            if let assignments = identity?.assignments {
                field("assignments") { out in
                    out.append(UInt8(ascii: "["))
                    for (i, name) in assignments.enumerated() {
                        if i > 0 { out.append(UInt8(ascii: ",")) }
                        JSONText.appendString(name, to: &out)
                    }
                    out.append(UInt8(ascii: "]"))
                }
            }
            field("code", p.code.rawValue)
            field("device", p.location.device)
            field("dn", p.location.dn)
            field("key", p.location.key)
            field("message", redact ? Self.redacted(p.message, p.value) : p.message)
            field("serialNumber", identity?.serialNumber)
            field("source", p.location.place)
            field("userKey", identity?.userKey)
            field("value", redact ? nil : p.value)
            field("variable", p.variable?.description)
            out += Array("}\n".utf8)
        }
        return out
    }

    package func write(to directory: String) throws(Problem) {
        do {
            try writeFileAtomically(errorsJSONL(), to: directory + "/errors.jsonl")
            if let changes { try writeFileAtomically(changes, to: directory + "/changes.jsonl") }
            if let diff { try writeFileAtomically(diff, to: directory + "/diff.jsonl") }
        } catch {
            throw Problem(.reportWrite, at: error.location, error.message)
        }
        try writeSummary(to: directory)
    }

    /// `summary.json` alone: after publishing, where the other files were written just before
    /// with the same problems and changes, and only the summary's times and outcome differ.
    package func writeSummary(to directory: String) throws(Problem) {
        do {
            try writeFileAtomically(Array(summary.json().utf8), to: directory + "/summary.json")
        } catch {
            throw Problem(.reportWrite, at: error.location, error.message)
        }
    }

    static func redacted(_ message: String, _ value: String?) -> String {
        guard let value, !value.isEmpty else { return message }
        return message.replacingOccurrences(of: value, with: "<redacted>")
    }
}
