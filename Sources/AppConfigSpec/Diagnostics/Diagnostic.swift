/// A place in a source file: 1-based line and column (the column counts Unicode scalars, as editors do).
public struct SourceLocation: Hashable, Sendable, CustomStringConvertible {
    public var file: String
    public var line: Int
    public var column: Int

    public init(file: String, line: Int, column: Int) {
        self.file = file
        self.line = line
        self.column = column
    }

    public var description: String { "\(file):\(line):\(column)" }
}

/// One problem found in a spec or a values file. `code` is stable: scripts and tests match on it.
public struct Diagnostic: Hashable, Sendable, CustomStringConvertible {
    public enum Severity: String, Sendable {
        case warning, error
    }

    public var location: SourceLocation
    public var severity: Severity
    public var code: DiagnosticCode
    public var message: String
    /// What to do about it, where one line helps.
    public var hint: String?

    public init(_ code: DiagnosticCode, _ severity: Severity? = nil, at location: SourceLocation,
                _ message: String, hint: String? = nil) {
        self.location = location
        self.severity = severity ?? code.defaultSeverity
        self.code = code
        self.message = message
        self.hint = hint
    }

    /// `file:line:col: severity: message [code]`, the layout compilers use so editors can jump to it.
    public var description: String {
        "\(location): \(severity.rawValue): \(message) [\(code.rawValue)]"
    }
}

/// Collects diagnostics in source order; a parser keeps going after an error so that one lint run
/// reports every problem at once.
public struct DiagnosticLog: Sendable {
    public private(set) var diagnostics: [Diagnostic] = []

    public init() {}

    public mutating func append(_ diagnostic: Diagnostic) { diagnostics.append(diagnostic) }

    public mutating func report(_ code: DiagnosticCode, at location: SourceLocation, _ message: String,
                                hint: String? = nil) {
        diagnostics.append(Diagnostic(code, at: location, message, hint: hint))
    }

    public var hasErrors: Bool { diagnostics.contains { $0.severity == .error } }

    /// Sorted by file, line and column; stable for equal places (the order they were found in).
    public var sorted: [Diagnostic] {
        diagnostics.enumerated().sorted { a, b in
            let (l, r) = (a.element.location, b.element.location)
            if l.file != r.file { return l.file < r.file }
            if l.line != r.line { return l.line < r.line }
            if l.column != r.column { return l.column < r.column }
            return a.offset < b.offset
        }.map(\.element)
    }
}
