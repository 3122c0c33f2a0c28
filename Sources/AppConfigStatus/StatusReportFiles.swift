import AppConfigCore
import AppConfigOutput
import Foundation

/// What `--report DIR` and `--html FILE` write: `status.jsonl` (a device per line), `summary.json`,
/// `errors.jsonl` (events that could not be read), and one self-contained page. Each file is
/// written whole beside its name, then renamed: no partial file under a final name.
public enum StatusReportFiles {
    /// A device's line of `status.jsonl`, its fields in a fixed order.
    public static func appendLine(_ v: DeviceVerdict, to out: inout [UInt8]) {
        JSONText.append(#"{"device":"#, to: &out)
        JSONText.appendString(v.device, to: &out)
        JSONText.append(#","enrollment":"#, to: &out)
        JSONText.appendString(v.enrollment, to: &out)
        JSONText.append(#","state":"#, to: &out)
        JSONText.appendString(v.state.rawValue, to: &out)
        if let d = v.detail {
            JSONText.append(#","detail":"#, to: &out)
            JSONText.appendString(d, to: &out)
        }
        if !v.reasons.isEmpty { appendList("reasons", v.reasons, to: &out) }
        if !v.assignments.isEmpty { appendList("assignments", v.assignments, to: &out) }
        for (k, value) in v.groups.sorted(by: { $0.key < $1.key }) {
            out.append(UInt8(ascii: ","))
            JSONText.appendString(k, to: &out)
            out.append(UInt8(ascii: ":"))
            JSONText.appendString(value, to: &out)
        }
        if let r = v.reported {
            JSONText.append(#","reported":"#, to: &out)
            JSONText.appendString(r, to: &out)
        }
        JSONText.append("}\n", to: &out)
    }

    static func appendList(_ name: String, _ items: [String], to out: inout [UInt8]) {
        out.append(UInt8(ascii: ","))
        JSONText.appendString(name, to: &out)
        out += ":[".utf8
        for (i, s) in items.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            JSONText.appendString(s, to: &out)
        }
        out.append(UInt8(ascii: "]"))
    }

    /// Writes `status.jsonl`, `summary.json` and `errors.jsonl` into `folder` (made if missing).
    public static func write(_ verdicts: [DeviceVerdict], summary: StatusSummary, problems: [Problem], into folder: String) throws(Problem) {
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        } catch {
            throw Problem(StatusCode.usage, at: Location(file: folder), "--report \(folder): cannot make the folder (\(error.localizedDescription))")
        }
        var lines: [UInt8] = []
        lines.reserveCapacity(verdicts.count * 160)
        for v in verdicts { appendLine(v, to: &lines) }
        try atomicWrite(lines, to: folder + "/status.jsonl")
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let json: Data
        do { json = try encoder.encode(summary) } catch {
            throw Problem(StatusCode.usage, at: Location(file: folder), "summary.json: \(error)")
        }
        try atomicWrite([UInt8](json) + [0x0A], to: folder + "/summary.json")
        var errors: [UInt8] = []
        for p in problems {
            JSONText.append(#"{"code":"#, to: &errors)
            JSONText.appendString(p.code.rawValue, to: &errors)
            JSONText.append(#","where":"#, to: &errors)
            JSONText.appendString(p.location.description, to: &errors)
            JSONText.append(#","message":"#, to: &errors)
            JSONText.appendString(p.message, to: &errors)
            JSONText.append("}\n", to: &errors)
        }
        try atomicWrite(errors, to: folder + "/errors.jsonl")
    }

    /// `bytes` into a temporary file beside `path`, then renamed over it.
    public static func atomicWrite(_ bytes: [UInt8], to path: String) throws(Problem) { try atomicWrite(parts: [bytes], to: path) }

    /// Written under a temporary name beside `path` (never one a planted symlink stands at),
    /// flushed, then renamed: no partial file under the final name.
    static func atomicWrite(parts: [[UInt8]], to path: String) throws(Problem) {
        do { try writeFileAtomically(parts: parts, to: path) } catch {
            throw Problem(StatusCode.usage, at: Location(file: path), error.message)
        }
    }
}
