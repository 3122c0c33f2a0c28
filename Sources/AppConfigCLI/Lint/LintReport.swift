import AppConfigCore
import AppConfigSpec

/// Formats lint findings for people (compiler style, with hints) or for scripts (JSON).
public enum LintReport {
    public enum Format: String, CaseIterable, Sendable {
        case text, json
    }

    public static func render(_ outcome: Linter.Outcome, format: Format) -> String {
        switch format {
        case .text: text(outcome)
        case .json: json(outcome.diagnostics)
        }
    }

    /// `file:line:col: severity: message [code]`, a hint line where there is one, then a summary.
    static func text(_ outcome: Linter.Outcome) -> String {
        var out = ""
        for d in outcome.diagnostics {
            out += d.description + "\n"
            if let hint = d.hint { out += "    hint: \(Problem.printable(hint))\n" }
        }
        let errors = outcome.diagnostics.filter { $0.severity == .error }.count
        let warnings = outcome.diagnostics.count - errors
        out += "\(plural(outcome.filesChecked, "file")) checked: \(plural(errors, "error")), \(plural(warnings, "warning"))\n"
        return out
    }

    /// A JSON array of objects with exactly the fields file, line, column, severity, code, message,
    /// in that order (written by hand: JSONEncoder orders keys its own way).
    public static func json(_ diagnostics: [Problem]) -> String {
        let objects = diagnostics.map { d in
            "{\"file\":\(quote(d.location.file)),\"line\":\(d.location.line),\"column\":\(d.location.column),"
                + "\"severity\":\(quote(d.severity.rawValue)),\"code\":\(quote(d.code.rawValue)),\"message\":\(quote(d.message))}"
        }
        return "[" + objects.joined(separator: ",\n ") + "]\n"
    }

    static func quote(_ s: String) -> String { jsonQuoted(s) }

    static func plural(_ n: Int, _ word: String) -> String { "\(n) \(word)\(n == 1 ? "" : "s")" }
}

extension Linter.Outcome {
    /// 2 when a file could not be read, else 1 when any file has an error, else 0.
    public var exitStatus: Int32 {
        if !ioFailures.isEmpty { return ExitStatus.usage }
        return hasErrors ? ExitStatus.failed : ExitStatus.ok
    }
}
