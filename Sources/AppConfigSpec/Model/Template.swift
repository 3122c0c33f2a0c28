import AppConfigCore
import Foundation

/// A string value built from literal text and variables: `https://$(ou).corp.example/$(serialNumber)`.
/// A spec's `<value>` is one literal part; a `<userVariable>` is one variable part.
public struct StringTemplate: Hashable, Sendable, CustomStringConvertible {
    public enum Part: Hashable, Sendable {
        case literal(String)
        case variable(Variable)
        /// `$(ou|lower|replace: :-)`: a variable whose value passes through filters, in order.
        case filtered(Variable, [TemplateFilter])
    }

    public var parts: [Part]

    public init(parts: [Part]) { self.parts = parts }

    public static func literal(_ s: String) -> StringTemplate { StringTemplate(parts: [.literal(s)]) }

    /// The text when the template has no variable.
    public var literalValue: String? {
        var out = ""
        for p in parts {
            guard case .literal(let s) = p else { return nil }
            out += s
        }
        return out
    }

    public var variables: [Variable] {
        parts.compactMap {
            switch $0 {
            case .variable(let v), .filtered(let v, _): v
            case .literal: nil
            }
        }
    }

    /// The admin-console syntax again, with `$` doubled where it is literal.
    public var description: String {
        parts.map {
            switch $0 {
            case .literal(let s): s.map { $0 == "$" ? "$$" : String($0) }.joined()
            case .variable(let v): "$(\(v))"
            case .filtered(let v, let filters): "$(\(v)" + filters.map { "|\($0)" }.joined() + ")"
            }
        }.joined()
    }

    public enum ParseError: Error, Equatable, Sendable {
        /// A `$` not followed by `(` or `$`, at this scalar offset.
        case loneDollar(offset: Int)
        case unterminated(offset: Int)
        case emptyName(offset: Int)
        case unknownVariable(name: String, offset: Int)
        case unknownFilter(name: String, offset: Int)
        /// A filter given the wrong number of arguments, or `replace` with nothing to replace.
        case filterArguments(filter: String, offset: Int)
    }

    /// Parses the admin syntax: `$(name)` is a variable, `$$` a literal `$`. Names are matched as
    /// `Variable.named` does; `device.<Column>` names an inventory column. Non-canonical spellings
    /// are returned so that the caller can warn.
    public static func parse(_ text: String) -> Result<(StringTemplate, nonCanonical: [String]), ParseError> {
        let scanned = scan(text, collectingAll: false)
        if let first = scanned.errors.first { return .failure(first) }
        return .success((scanned.template, scanned.nonCanonical))
    }

    /// Every error of a template, not only the first: a lint run reports them all.
    public static func errors(in text: String) -> [ParseError] { scan(text, collectingAll: true).errors }

    /// One pass over the text; after an error in a `$(...)` it goes on past its `)` when collecting.
    private static func scan(_ text: String, collectingAll: Bool) -> (template: StringTemplate, nonCanonical: [String], errors: [ParseError]) {
        var parts: [Part] = []
        var literal = ""
        var nonCanonical: [String] = []
        var errors: [ParseError] = []
        let scalars = Array(text.unicodeScalars)
        var i = 0
        func failed(_ error: ParseError, resumeAt next: Int) -> Bool {
            errors.append(error)
            i = next
            return collectingAll
        }
        scanning: while i < scalars.count {
            let c = scalars[i]
            guard c == "$" else { literal.unicodeScalars.append(c); i += 1; continue }
            guard i + 1 < scalars.count else { _ = failed(.loneDollar(offset: i), resumeAt: i + 1); break }
            if scalars[i + 1] == "$" { literal += "$"; i += 2; continue }
            guard scalars[i + 1] == "(" else { if failed(.loneDollar(offset: i), resumeAt: i + 1) { continue } else { break } }
            guard let close = scalars[(i + 2)...].firstIndex(of: ")") else { _ = failed(.unterminated(offset: i), resumeAt: scalars.count); break }
            var inside = ""
            inside.unicodeScalars.append(contentsOf: scalars[(i + 2)..<close])
            let pieces = inside.split(separator: "|", omittingEmptySubsequences: false)
            let name = String(pieces[0]).trimmingXMLWhitespace
            guard !name.isEmpty else { if failed(.emptyName(offset: i), resumeAt: close + 1) { continue } else { break } }
            var filters: [TemplateFilter] = []
            var bad: ParseError?
            for piece in pieces.dropFirst() where bad == nil {
                switch TemplateFilter.parse(String(piece)) {
                case .success(let filter): filters.append(filter)
                case .failure(.unknown(let filterName)): bad = .unknownFilter(name: filterName, offset: i)
                case .failure(.arguments(let filterName)): bad = .filterArguments(filter: filterName, offset: i)
                }
            }
            if bad == nil, filters.filter({ if case .defaultText = $0 { true } else { false } }).count > 1 {
                bad = .filterArguments(filter: "default", offset: i)
            }
            var variable: Variable?
            if name.lowercased().hasPrefix("device."), name.count > 7 {
                variable = .deviceAttribute(String(name.dropFirst(7)))
            } else if let (v, canonical) = Variable.named(name) {
                variable = v
                if !canonical { nonCanonical.append(name) }
            } else {
                if failed(.unknownVariable(name: name, offset: i), resumeAt: close + 1) {
                    if let bad { errors.append(bad) }
                    continue
                } else { break }
            }
            if let bad { if failed(bad, resumeAt: close + 1) { continue scanning } else { break } }
            if !literal.isEmpty { parts.append(.literal(literal)); literal = "" }
            parts.append(filters.isEmpty ? .variable(variable!) : .filtered(variable!, filters))
            i = close + 1
        }
        if !literal.isEmpty || parts.isEmpty { parts.append(.literal(literal)) }
        return (StringTemplate(parts: parts), nonCanonical, errors)
    }
}

/// A filter in a template variable, applied by the VM to the variable's bytes in the device's
/// buffer: `$(ou|lower)`, `$(cn|replace: :_)`, `$(locale|default:en)`. Arguments follow `:` and
/// cannot hold `:`, `|` or `)`; they are taken as written (spaces included).
public enum TemplateFilter: Hashable, Sendable, CustomStringConvertible {
    /// ASCII letters to lower case (other letters by Unicode's mapping).
    case lower
    case upper
    /// Spaces, tabs and line breaks removed from both ends.
    case trim
    /// Percent-encoding per RFC 3986: every byte but `A-Z a-z 0-9 - . _ ~` as `%XX`.
    case urlencode
    /// Every occurrence of the first text replaced by the second, left to right.
    case replace(String, String)
    /// The text used when the variable is missing or empty (instead of the key's missing-value
    /// policy), before the other filters, wherever it stands in the chain.
    case defaultText(String)
    /// `substr:START[:LENGTH]`: the characters (Unicode scalars) from START (0-based; negative
    /// counts from the end), LENGTH of them or to the end. Intune's `{{partialupn}}`-like tokens
    /// and the `last4` tokens need it.
    case substr(Int, Int?)
    /// `last:N`: the last N characters (all of a shorter value): `substr:-N`.
    case last(Int)
    /// `split:SEP:INDEX`: the INDEX-th piece (0-based; negative from the end) of the value cut at
    /// each SEP; empty when there is no such piece. `$(upn|split:@:0)` is the UPN's user part.
    case split(String, Int)

    public static let names = ["lower", "upper", "trim", "urlencode", "replace", "default", "substr", "last", "split"]
    public static let usage = "lower, upper, trim, urlencode, replace:FROM:TO, default:TEXT, substr:START[:LENGTH], last:N, split:SEP:INDEX"
    /// The largest START, LENGTH, N or INDEX (either sign): what an instruction's operand holds.
    public static let maxCount = (1 << 27) - 1

    public var description: String {
        switch self {
        case .lower: "lower"
        case .upper: "upper"
        case .trim: "trim"
        case .urlencode: "urlencode"
        case .replace(let from, let to): "replace:\(from):\(to)"
        case .defaultText(let text): "default:\(text)"
        case .substr(let start, let length): "substr:\(start)" + (length.map { ":\($0)" } ?? "")
        case .last(let n): "last:\(n)"
        case .split(let separator, let index): "split:\(separator):\(index)"
        }
    }

    /// The filter applied to a value held as a `String`, for those that render outside the VM
    /// (credentials) and the verifier. The VM applies the same filters to bytes (`TemplateFilters`).
    public func applied(to value: String) -> String {
        switch self {
        case .lower: return value.lowercased()
        case .upper: return value.uppercased()
        case .trim: return value.trimmingCharacters(in: CharacterSet(charactersIn: " \t\n\r\u{0B}\u{0C}"))
        case .urlencode:
            return value.addingPercentEncoding(withAllowedCharacters: CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")) ?? value
        case .replace(let from, let to): return value.replacingOccurrences(of: from, with: to, options: .literal)
        case .defaultText: return value
        case .substr(let start, let length):
            let scalars = Array(value.unicodeScalars)
            let lo = start >= 0 ? min(start, scalars.count) : max(0, scalars.count + start)
            let hi = length.map { min(scalars.count, lo + $0) } ?? scalars.count
            var out = ""
            out.unicodeScalars.append(contentsOf: scalars[lo..<hi])
            return out
        case .last(let n): return TemplateFilter.substr(-n, nil).applied(to: value)
        case .split(let separator, let index):
            let pieces = value.components(separatedBy: separator)
            let i = index >= 0 ? index : pieces.count + index
            return pieces.indices.contains(i) ? pieces[i] : ""
        }
    }

    enum ParseError: Error { case unknown(String), arguments(String) }

    /// A filter's number argument: decimal, either sign, at most `maxCount` in magnitude.
    static func count(_ text: String) -> Int? {
        guard let n = Int(text.trimmingXMLWhitespace), abs(n) <= maxCount else { return nil }
        return n
    }

    static func parse(_ text: String) -> Result<TemplateFilter, ParseError> {
        let fields = text.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        let name = fields[0].trimmingXMLWhitespace, arguments = Array(fields.dropFirst())
        switch (name.lowercased(), arguments.count) {
        case ("lower", 0): return .success(.lower)
        case ("upper", 0): return .success(.upper)
        case ("trim", 0): return .success(.trim)
        case ("urlencode", 0): return .success(.urlencode)
        case ("replace", 2) where !arguments[0].isEmpty: return .success(.replace(arguments[0], arguments[1]))
        case ("default", 1): return .success(.defaultText(arguments[0]))
        case ("substr", 1), ("substr", 2):
            guard let start = count(arguments[0]) else { return .failure(.arguments(name.lowercased())) }
            if arguments.count == 1 { return .success(.substr(start, nil)) }
            guard let length = count(arguments[1]), length >= 0 else { return .failure(.arguments(name.lowercased())) }
            return .success(.substr(start, length))
        case ("last", 1):
            guard let n = count(arguments[0]), n >= 0 else { return .failure(.arguments("last")) }
            return .success(.last(n))
        case ("split", 2) where !arguments[0].isEmpty:
            guard let index = count(arguments[1]) else { return .failure(.arguments("split")) }
            return .success(.split(arguments[0], index))
        case (let n, _) where names.contains(n): return .failure(.arguments(n))
        default: return .failure(.unknown(name))
        }
    }
}

