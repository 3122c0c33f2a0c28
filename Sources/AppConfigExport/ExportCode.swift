import AppConfigCore

/// Codes for the problems of `appconfig export`.
public enum ExportCode: String, Sendable, CaseIterable, ProblemCodeCatalog {
    /// A value the console cannot express (a filter, an inventory column or attribute with no
    /// token, a type it has not): a warning naming the key, the variant and why; `--strict` makes
    /// it an error. The key is left out of that variant's object, never written wrong.
    case untranslatable = "export.untranslatable"
    /// A secret or a credential in the values file: none of these consoles takes one.
    case secret = "export.secret"
    /// The spec, the values file or an option cannot be used.
    case usage = "export.usage"
    /// A value converted to fit the console (a number, a date or a list as a string).
    case converted = "export.converted"

    public var defaultSeverity: Problem.Severity {
        switch self {
        case .untranslatable, .converted: .warning
        case .secret, .usage: .error
        }
    }
}

extension ProblemCode {
    public static func == (lhs: ProblemCode, rhs: ExportCode) -> Bool { lhs.rawValue == rhs.rawValue }
}
