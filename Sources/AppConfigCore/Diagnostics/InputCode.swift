/// Codes for an input file that cannot be taken at all, whatever it holds (a spec, values, an
/// inventory, a directory, a job file).
public enum InputCode: String, Sendable, CaseIterable, ProblemCodeCatalog {
    /// A file that cannot be read (missing, unreadable, a folder).
    case read = "input.read"
    /// A file beyond the size its reader takes.
    case tooLarge = "input.too-large"
    /// A file cut shorter or written to in place while the job read it (nothing is published).
    case changed = "input.changed"

    public var defaultSeverity: Problem.Severity { .error }
}

extension Problem {
    public init(_ code: InputCode, at location: Location, _ message: String) {
        self.init(code as any ProblemCodeCatalog, at: location, message)
    }
}

extension ProblemCode {
    public static func == (lhs: ProblemCode, rhs: InputCode) -> Bool { lhs.rawValue == rhs.rawValue }
    public static func != (lhs: ProblemCode, rhs: InputCode) -> Bool { lhs.rawValue != rhs.rawValue }
}

extension FileReadError {
    /// The read failure as a problem of the input.
    public var problem: Problem {
        tooLarge ? Problem(InputCode.tooLarge, at: Location(file: path), "\(path) is not read: \(reason)")
            : changed ? Problem(InputCode.changed, at: Location(file: path), "\(path) is not used: \(reason)")
            : Problem(InputCode.read, at: Location(file: path), "cannot read \(path): \(reason)")
    }
}
