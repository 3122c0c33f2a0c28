import AppConfigCore

/// Codes for problems of a job's output: its files, its generations, its lock, a manifest read
/// back. Such a problem stops the run; nothing is published.
public enum OutputCode: String, Sendable, CaseIterable, ProblemCodeCatalog {
    /// An output file or folder cannot be created or written (permissions, a full disk, a closed pipe).
    case outputWrite = "output.write"
    /// `--out` names something that is not an appconfig output (a real folder, a file).
    case outputExists = "output.exists"
    /// Two devices map to the same output file.
    case outputCollision = "output.collision"
    /// A generation does not hold the files this run wrote into it (something else removed some):
    /// it is not published.
    case outputIncomplete = "output.incomplete"
    /// The run's output is locked by another run that is still going.
    case outputLocked = "output.locked"
    /// A manifest (`--since`) that is not one appconfig wrote.
    case manifestSyntax = "manifest.syntax"

    public var defaultSeverity: Problem.Severity { .error }
}

extension Problem {
    public init(_ code: OutputCode, at location: Location = Location(), _ message: String) {
        self.init(code as any ProblemCodeCatalog, at: location, message)
    }
}

extension ProblemCode {
    public static func == (lhs: ProblemCode, rhs: OutputCode) -> Bool { lhs.rawValue == rhs.rawValue }
    public static func != (lhs: ProblemCode, rhs: OutputCode) -> Bool { lhs.rawValue != rhs.rawValue }
}
