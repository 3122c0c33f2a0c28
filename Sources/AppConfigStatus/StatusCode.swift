import AppConfigCore

/// Codes for the problems of `appconfig status`.
public enum StatusCode: String, Sendable, CaseIterable, ProblemCodeCatalog {
    /// The generation given cannot be read (not an output `render` published, a damaged index).
    case source = "status.source"
    /// An option is wrong, or two sources are given.
    case usage = "status.usage"
    /// An event of `--events` is not a webhook event this reads (its line is named).
    case event = "status.event"
    /// A status report is not one in Apple's shape (the event's line or the enrollment is named).
    case report = "status.report"
    /// The state file (`--state`) cannot be read or written.
    case state = "status.state"
    /// The server could not be asked (refused the key, unreachable, answered an error).
    case server = "status.server"
    /// An event or report for an enrollment the generation does not know: counted, not dropped.
    case unknownDevice = "status.unknown-device"

    public var defaultSeverity: Problem.Severity { self == .unknownDevice ? .warning : .error }
}

extension ProblemCode {
    public static func == (lhs: ProblemCode, rhs: StatusCode) -> Bool { lhs.rawValue == rhs.rawValue }
}
