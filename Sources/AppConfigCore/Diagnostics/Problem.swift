/// Where a problem is: a place in a file (line and column, 1-based; 0 when not known), and what the
/// engine knew of it besides (an inventory row, a directory entry's DN, the device, the spec key).
/// One shape for lint, the sources, the renderer and the report.
public struct Location: Hashable, Sendable, CustomStringConvertible {
    public var file: String
    public var line: Int
    /// Counts Unicode scalars, as editors do.
    public var column: Int
    /// The inventory's data row (0-based, in file order), when the problem is a device's.
    public var row: Int?
    /// The directory entry the value came from.
    public var dn: String?
    /// The device key.
    public var device: String?
    /// The spec's keyName.
    public var key: String?

    public init(file: String = "", line: Int = 0, column: Int = 0, row: Int? = nil, dn: String? = nil,
                device: String? = nil, key: String? = nil) {
        self.file = file
        self.line = line
        self.column = column
        self.row = row
        self.dn = dn
        self.device = device
        self.key = key
    }

    /// This location with the device (or the DN) set.
    public func with(device: String? = nil, dn: String? = nil) -> Location {
        var l = self
        if let device { l.device = device }
        if let dn { l.dn = dn }
        return l
    }

    /// The source a value came from: `file:line[:column]`, else the DN, else the file.
    public var place: String? {
        if let dn { return dn }
        if file.isEmpty { return nil }
        var s = file
        if line > 0 { s += ":\(line)" }
        if line > 0 && column > 0 { s += ":\(column)" }
        return s
    }

    /// `file:line:col`, then the device and the key where known: `inventory.csv:42, device X, key "url"`.
    public var description: String {
        var parts: [String] = []
        if let place { parts.append(place) }
        if let device { parts.append("device \(device)") }
        if let key { parts.append("key \"\(key)\"") }
        return parts.joined(separator: ", ")
    }
}

/// A stable problem code (`csv.field-count`, `device.pattern`, `structure.order`...): reports,
/// scripts and tests match on the raw value. Each area lists its codes in a `ProblemCodeCatalog`
/// enum (`DiagnosticCode`, `SourceCode`, `DeviceCode`, `JobCode`); this is what they share.
public struct ProblemCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

}

/// An area's list of codes: one enum case each, a doc comment each, never renamed. Each area also
/// gives `Problem.init` and `==` overloads for its enum, so that `.csvFieldCount` reads as it is.
public protocol ProblemCodeCatalog: RawRepresentable<String>, CaseIterable, Sendable {
    /// Errors stop what they concern (a spec, a device, a row); warnings are advice.
    var defaultSeverity: Problem.Severity { get }
}

/// One problem: in a spec or values file (lint), in an inventory row or directory entry, with one
/// device's render, or with the job as a whole. `code` is stable: scripts and tests match on it.
public struct Problem: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Severity: String, Sendable {
        case warning, error
    }

    public var code: ProblemCode
    public var severity: Severity
    public var location: Location
    public var message: String
    /// What to do about it, where one line helps.
    public var hint: String?
    /// The variable concerned: the missing one, or the first of the value's template.
    public var variable: Variable?
    /// The value concerned, when there is one (reports may redact it).
    public var value: String?

    public init(_ code: any ProblemCodeCatalog, _ severity: Severity? = nil, at location: Location, _ message: String,
                hint: String? = nil, variable: Variable? = nil, value: String? = nil) {
        self.code = ProblemCode(rawValue: code.rawValue)
        self.severity = severity ?? code.defaultSeverity
        self.location = location
        self.message = message
        self.hint = hint
        self.variable = variable
        self.value = value
    }

    /// `file:line:col: severity: message [code]`, the layout compilers use so editors can jump to it.
    public var description: String {
        let place = location.description
        return Self.printable((place.isEmpty ? "" : place + ": ") + "\(severity.rawValue): \(message) [\(code.rawValue)]")
    }

    /// Text safe for a terminal and a one-line log: control characters (C0, DEL, C1), line and
    /// paragraph separators and invisible format characters (zero-width, bidirectional overrides)
    /// are written as escapes (`\r`, `\n`, `\t`, `\u0000`, `\u202E`), since a device key or a
    /// keyName may hold any of them and must not rewrite the line it is printed on.
    public static func printable(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: needsEscape) else { return text }
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\r": out += "\\r"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            case _ where needsEscape(scalar):
                let hex = String(scalar.value, radix: 16, uppercase: true)
                out += "\\u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    private static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator: true
        default: false
        }
    }
}

/// Collects problems in source order; a parser keeps going after an error so that one lint run
/// reports every problem at once.
public struct ProblemLog: Sendable {
    public private(set) var problems: [Problem] = []

    public init() {}

    public mutating func append(_ problem: Problem) { problems.append(problem) }

    public var hasErrors: Bool { problems.contains { $0.severity == .error } }

    /// Sorted by file, line and column; stable for equal places (the order they were found in).
    public var sorted: [Problem] {
        problems.enumerated().sorted { a, b in
            let (l, r) = (a.element.location, b.element.location)
            if l.file != r.file { return l.file < r.file }
            if l.line != r.line { return l.line < r.line }
            if l.column != r.column { return l.column < r.column }
            return a.offset < b.offset
        }.map(\.element)
    }
}

/// A job-level failure that several problems explain (a spec that does not compile, a load that
/// stopped under `--strict`): thrown as one error, reported as its problems.
public struct ProblemList: Error, Sendable, CustomStringConvertible {
    public var problems: [Problem]
    public init(_ problems: [Problem]) { self.problems = problems }
    public var description: String { problems.map(\.description).joined(separator: "\n") }
}

extension ProblemCode {
    /// The code as a case of one area's catalog (`problem.code.as(DiagnosticCode.self)`), or nil
    /// when it belongs to another area.
    public func `as`<C: ProblemCodeCatalog>(_: C.Type) -> C? { C(rawValue: rawValue) }
}
