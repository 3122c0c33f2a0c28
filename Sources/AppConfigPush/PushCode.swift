import AppConfigCore

/// Codes for the problems of a push: the whole push's (it stops) and one device's (the others go on).
public enum PushCode: String, Sendable, CaseIterable, ProblemCodeCatalog {
    /// The output given is not one a server takes (a plist delivery, a damaged index).
    case source = "push.source"
    /// The delivery does not go to that server, or an option is wrong.
    case usage = "push.usage"
    /// The server refused the API key (401, 403).
    case auth = "push.auth"
    /// The server could not be reached, or kept failing, after every retry.
    case unreachable = "push.unreachable"
    /// The server answered a device's request with an error.
    case server = "push.server"
    /// "declaration not found": a set named a declaration the server does not hold yet. An
    /// ordering fault, never retried blindly.
    case ordering = "push.ordering"
    /// `--verify-assets`: an asset is not served at its DataURL with its size and hash.
    case assetNotServed = "push.asset-not-served"
    /// The journal cannot be read or written.
    case journal = "push.journal"
    /// More removals than `--max-removal-ratio` allows: nothing was sent.
    case removalGuard = "push.removal-guard"
    /// A removal of a device this journal never pushed: nothing to remove on the server.
    case removalUnknown = "push.removal-unknown"
    /// Garbage collection left a declaration on the server (another set still names it).
    case collection = "push.collection"

    public var defaultSeverity: Problem.Severity { self == .removalUnknown || self == .collection ? .warning : .error }
}

extension ProblemCode {
    public static func == (lhs: ProblemCode, rhs: PushCode) -> Bool { lhs.rawValue == rhs.rawValue }
    public static func != (lhs: ProblemCode, rhs: PushCode) -> Bool { lhs.rawValue != rhs.rawValue }
}
