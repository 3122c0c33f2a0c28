import AppConfigRender
import AppConfigSources
import Foundation

/// The run's account: `summary.json` (counts, errors by code, time per phase, devices per second)
/// and `errors.jsonl` (one JSON object a line: every device that failed, every row skipped, every
/// device whose user was not found). Written last, each file atomically. `redact` leaves values out.
public struct RunReport {
    public var summary: [String: Any]
    public var failures: [DeviceFailure]
    public var problems: [SourceProblem]
    public var redact: Bool

    public init(summary: [String: Any], failures: [DeviceFailure], problems: [SourceProblem], redact: Bool) {
        self.summary = summary
        self.failures = failures
        self.problems = problems
        self.redact = redact
    }

    /// One line per failure: device, key, code, message, variable, source, and the value unless redacted.
    public func errorLines() -> [String] {
        var lines: [String] = []
        for f in failures {
            var o: [String: Any] = ["device": f.deviceKey, "key": f.error.key, "code": f.error.code.rawValue,
                                    "message": redact ? Self.redacted(f.error.message, f.error.value) : f.error.message]
            if let v = f.error.variable { o["variable"] = v.description }
            if let s = f.error.source { o["source"] = s }
            if !redact, let v = f.error.value { o["value"] = v }
            lines.append(Self.json(o))
        }
        for p in problems {
            lines.append(Self.json(["code": p.code.rawValue, "message": p.message, "source": p.location]))
        }
        return lines
    }

    public func write(to directory: String) throws {
        if mkdir(directory, 0o755) != 0 && errno != EEXIST {
            throw BatchError(message: "cannot create \(directory): \(String(cString: strerror(errno)))")
        }
        let errors = errorLines().map { $0 + "\n" }.joined()
        try writeFileAtomically(Array(errors.utf8), to: directory + "/errors.jsonl")
        try writeFileAtomically(Array((Self.json(summary, pretty: true) + "\n").utf8), to: directory + "/summary.json")
    }

    static func redacted(_ message: String, _ value: String?) -> String {
        guard let value, !value.isEmpty else { return message }
        return message.replacingOccurrences(of: value, with: "<redacted>")
    }

    static func json(_ object: [String: Any], pretty: Bool = false) -> String {
        var options: JSONSerialization.WritingOptions = [.sortedKeys, .withoutEscapingSlashes]
        if pretty { options.insert(.prettyPrinted) }
        let data = (try? JSONSerialization.data(withJSONObject: object, options: options)) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }
}
