import AppConfigCore

/// A JSON reader (RFC 8259) that keeps the line and column of every value, so that a values-file
/// or job-file diagnostic points at the entry. Foundation's JSONSerialization gives no positions.
public struct JSONReader {
    /// The document, or its first syntax error with line and column (`values.syntax`).
    public static func document(_ bytes: [UInt8], file: String) throws(Problem) -> RawValue {
        do { return try parse(bytes, file: file) } catch { throw error.diagnostic }
    }

    struct Failure: Error {
        var diagnostic: Problem
    }

    private let bytes: [UInt8]
    private let file: String
    private var pos = 0
    private var line = 1
    private var lineStart = 0
    private let maxDepth = 128

    static func parse(_ bytes: [UInt8], file: String) throws(Failure) -> RawValue {
        var reader = JSONReader(bytes: bytes, file: file)
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { reader.pos = 3; reader.lineStart = 3 }
        reader.skipWhitespace()
        let value = try reader.value(depth: 0)
        reader.skipWhitespace()
        guard reader.pos == bytes.count else { throw reader.fail("unexpected content after the JSON value") }
        return value
    }

    private init(bytes: [UInt8], file: String) {
        self.bytes = bytes
        self.file = file
    }

    /// The last column computed: the next is counted from it, not from the line's start (a values
    /// file of one long line was quadratic, each location counting from column 1).
    private var counted = (pos: 0, column: 1)

    private mutating func here() -> Location {
        if counted.pos < lineStart || counted.pos > pos { counted = (lineStart, 1) }
        var column = counted.column
        for i in counted.pos..<pos where bytes[i] & 0xC0 != 0x80 { column += 1 }
        counted = (pos, column)
        return Location(file: file, line: line, column: column)
    }

    private mutating func fail(_ message: String, at location: Location? = nil) -> Failure {
        Failure(diagnostic: Problem(.valuesSyntax, at: location ?? here(), message))
    }

    private var peek: UInt8? { pos < bytes.count ? bytes[pos] : nil }

    private mutating func skipWhitespace() {
        while let b = peek, b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D {
            if b == 0x0A { line += 1; lineStart = pos + 1 }
            pos += 1
        }
    }

    private mutating func literal(_ word: String) -> Bool {
        let u = Array(word.utf8)
        guard bytes.count - pos >= u.count, Array(bytes[pos..<(pos + u.count)]) == u else { return false }
        pos += u.count
        return true
    }

    /// Whether another item of an object or array follows (`started`: one was read), past the
    /// comma and white space before it; false past `close`.
    private mutating func another(closedBy close: UInt8, started: inout Bool) throws(Failure) -> Bool {
        skipWhitespace()
        if peek == close { pos += 1; return false }
        if started {
            guard peek == UInt8(ascii: ",") else { throw fail("expected ',' or '\(Character(Unicode.Scalar(close)))'") }
            pos += 1
            skipWhitespace()
        }
        started = true
        return true
    }

    private mutating func value(depth: Int) throws(Failure) -> RawValue {
        guard depth < maxDepth else { throw fail("JSON nests deeper than \(maxDepth) levels") }
        let location = here()
        guard let b = peek else { throw fail("unexpected end of JSON") }
        switch b {
        case UInt8(ascii: "{"):
            pos += 1
            var members: [RawValue.Member] = [], started = false
            while try another(closedBy: UInt8(ascii: "}"), started: &started) {
                let keyLocation = here()
                guard peek == UInt8(ascii: "\"") else { throw fail("expected a string key") }
                let key = try string()
                skipWhitespace()
                guard peek == UInt8(ascii: ":") else { throw fail("expected ':' after a key") }
                pos += 1
                skipWhitespace()
                members.append(.init(key: key, keyLocation: keyLocation, value: try value(depth: depth + 1)))
            }
            return RawValue(.dictionary(members), at: location)
        case UInt8(ascii: "["):
            pos += 1
            var items: [RawValue] = [], started = false
            while try another(closedBy: UInt8(ascii: "]"), started: &started) { items.append(try value(depth: depth + 1)) }
            return RawValue(.array(items), at: location)
        case UInt8(ascii: "\""):
            return RawValue(.string(try string()), at: location)
        case UInt8(ascii: "t") where literal("true"): return RawValue(.boolean(true), at: location)
        case UInt8(ascii: "f") where literal("false"): return RawValue(.boolean(false), at: location)
        case UInt8(ascii: "n") where literal("null"): return RawValue(.null, at: location)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return RawValue(try number(), at: location)
        default:
            throw fail("unexpected character '\(Character(Unicode.Scalar(b)))'")
        }
    }

    /// Integers that do not fit 64 bits and reals that overflow or underflow to zero are errors:
    /// reading them as something else would change the admin's value silently.
    private mutating func number() throws(Failure) -> RawValue.Kind {
        let start = pos, location = here()
        var integral = true
        func digits() -> Int {
            var n = 0
            while let b = peek, b >= 0x30 && b <= 0x39 { pos += 1; n += 1 }
            return n
        }
        if peek == UInt8(ascii: "-") { pos += 1 }
        guard digits() > 0 else { throw fail("malformed number") }
        if peek == UInt8(ascii: ".") {
            pos += 1
            integral = false
            guard digits() > 0 else { throw fail("malformed number") }
        }
        if peek == UInt8(ascii: "e") || peek == UInt8(ascii: "E") {
            pos += 1
            integral = false
            if peek == UInt8(ascii: "+") || peek == UInt8(ascii: "-") { pos += 1 }
            guard digits() > 0 else { throw fail("malformed number") }
        }
        let text = String(decoding: bytes[start..<pos], as: UTF8.self)
        if integral {
            guard let i = Int64(text) else { throw fail("integer \(text) is out of range for a 64-bit integer", at: location) }
            return .integer(i)
        }
        guard let d = Double(text), d.isFinite else { throw fail("number \(text) is out of range for a 64-bit float", at: location) }
        if d == 0, !Self.mantissaIsZero(text) {
            throw fail("number \(text) is too small for a 64-bit float: it would be read as 0", at: location)
        }
        return .real(d)
    }

    /// Whether the digits before the exponent are all zero (`0.0e-999` is a zero, not an underflow).
    private static func mantissaIsZero(_ text: String) -> Bool {
        let mantissa = text.utf8.prefix { $0 != UInt8(ascii: "e") && $0 != UInt8(ascii: "E") }
        return !mantissa.contains { $0 >= UInt8(ascii: "1") && $0 <= UInt8(ascii: "9") }
    }

    private mutating func string() throws(Failure) -> String {
        pos += 1  // opening quote
        var out: [UInt8] = []
        while true {
            guard let b = peek else { throw fail("unterminated string") }
            pos += 1
            switch b {
            case UInt8(ascii: "\""):
                guard let s = String(validating: out, as: UTF8.self) else {
                    throw fail("string is not valid UTF-8")
                }
                return s
            case UInt8(ascii: "\\"):
                guard let e = peek else { throw fail("unterminated escape") }
                pos += 1
                switch e {
                case UInt8(ascii: "\""): out.append(0x22)
                case UInt8(ascii: "\\"): out.append(0x5C)
                case UInt8(ascii: "/"): out.append(0x2F)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if (0xD800...0xDBFF).contains(scalar) {
                        guard literal("\\u") else { throw fail("unpaired surrogate in \\u escape") }
                        let low = try hex4()
                        guard (0xDC00...0xDFFF).contains(low) else { throw fail("unpaired surrogate in \\u escape") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let u = Unicode.Scalar(scalar) else { throw fail("unpaired surrogate in \\u escape") }
                    out.append(contentsOf: Array(String(Character(u)).utf8))
                default:
                    throw fail("unknown escape '\\\(Character(Unicode.Scalar(e)))'")
                }
            case 0x00..<0x20:
                throw fail("control character in a string; escape it")
            default:
                out.append(b)
            }
        }
    }

    private mutating func hex4() throws(Failure) -> UInt32 {
        guard bytes.count - pos >= 4,
              let v = UInt32(String(decoding: bytes[pos..<(pos + 4)], as: UTF8.self), radix: 16)
        else { throw fail("malformed \\u escape") }
        pos += 4
        return v
    }
}
