/// A string value built from literal text and variables: `https://$(ou).corp.example/$(serialNumber)`.
/// A spec's `<value>` is one literal part; a `<userVariable>` is one variable part.
public struct StringTemplate: Hashable, Sendable, CustomStringConvertible {
    public enum Part: Hashable, Sendable {
        case literal(String)
        case variable(Variable)
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
        parts.compactMap { if case .variable(let v) = $0 { v } else { nil } }
    }

    /// The admin-console syntax again, with `$` doubled where it is literal.
    public var description: String {
        parts.map {
            switch $0 {
            case .literal(let s): s.map { $0 == "$" ? "$$" : String($0) }.joined()
            case .variable(let v): "$(\(v))"
            }
        }.joined()
    }

    public enum ParseError: Error, Equatable, Sendable {
        /// A `$` not followed by `(` or `$`, at this scalar offset.
        case loneDollar(offset: Int)
        case unterminated(offset: Int)
        case emptyName(offset: Int)
        case unknownVariable(name: String, offset: Int)
    }

    /// Parses the admin syntax: `$(name)` is a variable, `$$` a literal `$`. Names are matched as
    /// `Variable.named` does; `device.<Column>` names an inventory column. Non-canonical spellings
    /// are returned so that the caller can warn.
    public static func parse(_ text: String) -> Result<(StringTemplate, nonCanonical: [String]), ParseError> {
        var parts: [Part] = []
        var literal = ""
        var nonCanonical: [String] = []
        let scalars = Array(text.unicodeScalars)
        var i = 0
        while i < scalars.count {
            let c = scalars[i]
            guard c == "$" else { literal.unicodeScalars.append(c); i += 1; continue }
            guard i + 1 < scalars.count else { return .failure(.loneDollar(offset: i)) }
            if scalars[i + 1] == "$" { literal += "$"; i += 2; continue }
            guard scalars[i + 1] == "(" else { return .failure(.loneDollar(offset: i)) }
            guard let close = scalars[(i + 2)...].firstIndex(of: ")") else { return .failure(.unterminated(offset: i)) }
            var name = ""
            name.unicodeScalars.append(contentsOf: scalars[(i + 2)..<close])
            name = name.trimmingXMLWhitespace
            guard !name.isEmpty else { return .failure(.emptyName(offset: i)) }
            let variable: Variable
            if name.lowercased().hasPrefix("device."), name.count > 7 {
                variable = .deviceAttribute(String(name.dropFirst(7)))
            } else if let (v, canonical) = Variable.named(name) {
                variable = v
                if !canonical { nonCanonical.append(name) }
            } else {
                return .failure(.unknownVariable(name: name, offset: i))
            }
            if !literal.isEmpty { parts.append(.literal(literal)); literal = "" }
            parts.append(.variable(variable))
            i = close + 1
        }
        if !literal.isEmpty || parts.isEmpty { parts.append(.literal(literal)) }
        return .success((StringTemplate(parts: parts), nonCanonical))
    }
}
