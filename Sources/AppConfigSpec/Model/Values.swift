/// The plist type of a key, as the spec's element name says.
public enum KeyType: String, CaseIterable, Sendable, Codable {
    case string, stringArray, integer, integerArray, float, floatArray, date, boolean

    /// The type of the value, or of each element for the array types.
    public var elementType: ScalarType {
        switch self {
        case .string, .stringArray: .string
        case .integer, .integerArray: .integer
        case .float, .floatArray: .float
        case .date: .date
        case .boolean: .boolean
        }
    }

    public var isArray: Bool { self == .stringArray || self == .integerArray || self == .floatArray }

    /// Only string keys can take user and device variables (the reference's defaultValue table).
    public var acceptsVariables: Bool { elementType == .string }
}

public enum ScalarType: String, Sendable {
    case string, integer, float, date, boolean
}

/// A date as plists hold it: seconds since 2001-01-01T00:00:00Z, as a double.
public struct PlistDate: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var secondsSince2001: Double

    public init(secondsSince2001: Double) { self.secondsSince2001 = secondsSince2001 }

    public static func < (a: PlistDate, b: PlistDate) -> Bool { a.secondsSince2001 < b.secondsSince2001 }

    public var description: String { ISO8601.format(self) }
}

/// One literal value of a scalar type.
public enum ScalarValue: Hashable, Sendable, CustomStringConvertible {
    case string(String)
    case integer(Int64)
    case float(Double)
    case date(PlistDate)
    case boolean(Bool)

    public var type: ScalarType {
        switch self {
        case .string: .string
        case .integer: .integer
        case .float: .float
        case .date: .date
        case .boolean: .boolean
        }
    }

    public var description: String {
        switch self {
        case .string(let s): "\"\(s)\""
        case .integer(let i): String(i)
        case .float(let d): String(d)
        case .date(let d): d.description
        case .boolean(let b): String(b)
        }
    }
}

extension ScalarType {
    /// Parses a literal as the spec and the admin console write it. Non-string literals may carry
    /// surrounding white space (XSD collapses it); strings are taken exactly as written.
    public func parse(_ text: String) -> ScalarValue? {
        if self == .string { return .string(text) }
        let t = text.trimmingXMLWhitespace
        switch self {
        case .string: return .string(text)
        case .integer: return Self.parseInteger(t).map(ScalarValue.integer)
        case .float: return Self.parseFloat(t).map(ScalarValue.float)
        case .boolean:
            switch t {
            case "true": return .boolean(true)
            case "false": return .boolean(false)
            default: return nil
            }
        case .date: return ISO8601.parse(t).map(ScalarValue.date)
        }
    }

    /// An optional sign and decimal digits, within 64 bits (plist integers are 64-bit).
    static func parseInteger(_ t: String) -> Int64? {
        var digits = Substring(t)
        if digits.first == "+" { digits.removeFirst() }
        let body = digits.first == "-" ? digits.dropFirst() : digits
        guard !body.isEmpty, body.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return Int64(digits)
    }

    /// A decimal number with optional fraction and exponent; no INF/NaN (JSON and most apps cannot take them).
    static func parseFloat(_ t: String) -> Double? {
        var i = t.unicodeScalars.makeIterator()
        var sawDigit = false
        var state = 0  // 0 sign, 1 int, 2 frac, 3 exp sign, 4 exp
        var expDigit = false
        while let c = i.next() {
            switch (state, c) {
            case (0, "+"), (0, "-"): state = 1
            case (0...1, "0"..."9"): state = 1; sawDigit = true
            case (0...1, "."): state = 2
            case (2, "0"..."9"): sawDigit = true
            case (1...2, "e"), (1...2, "E"): state = 3
            case (3, "+"), (3, "-"): state = 4
            case (3...4, "0"..."9"): state = 4; expDigit = true
            default: return nil
            }
        }
        guard sawDigit, state < 3 || expDigit, let d = Double(t), d.isFinite else { return nil }
        return d
    }
}
