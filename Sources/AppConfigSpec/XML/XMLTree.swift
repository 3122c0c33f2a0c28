import AppConfigCore

/// The parsed XML of a spec: elements, attributes and text with their source locations.
/// Comments and processing instructions are dropped; adjacent text and CDATA are merged.
public struct XMLElement: Sendable {
    public var name: String
    public var attributes: [XMLAttribute]
    public var children: [XMLNode]
    public var location: Location

    public func attribute(_ name: String) -> XMLAttribute? { attributes.first { $0.name == name } }

    /// Child elements only, in document order.
    public var elements: [XMLElement] {
        children.compactMap { if case .element(let e) = $0 { e } else { nil } }
    }

    /// The concatenated text directly inside this element (not inside its children).
    public var text: String {
        children.reduce(into: "") { if case .text(let t, _) = $1 { $0 += t } }
    }

    /// Text pieces that are not pure XML white space, with where their first visible character stands.
    public var significantText: [(String, Location)] {
        children.compactMap {
            guard case .text(let t, var loc) = $0, !t.allSatisfy(\.isXMLWhitespace) else { return nil }
            for c in t.prefix(while: \.isXMLWhitespace) {
                if c == "\n" { loc.line += 1; loc.column = 1 } else { loc.column += 1 }
            }
            return (t, loc)
        }
    }
}

public struct XMLAttribute: Sendable {
    public var name: String
    public var value: String
    /// Where the attribute's name starts.
    public var location: Location
}

public enum XMLNode: Sendable {
    case element(XMLElement)
    case text(String, Location)
}

extension Character {
    /// XML's S production: space, tab, CR, LF (not every Unicode space).
    var isXMLWhitespace: Bool { self == " " || self == "\t" || self == "\n" || self == "\r" || self == "\r\n" }
}

extension String {
    /// Trims XML white space only, as XSD's whitespace="collapse" does at the ends.
    var trimmingXMLWhitespace: String {
        var s = Substring(self)
        while let f = s.first, f.isXMLWhitespace { s.removeFirst() }
        while let l = s.last, l.isXMLWhitespace { s.removeLast() }
        return String(s)
    }
}
