import AppConfigCore
/// A small, strict XML 1.0 reader for spec files: UTF-8 only, no DTD, no external anything.
///
/// Why not Foundation's XMLParser: on Linux it is libxml2 underneath, whose entity handling and
/// positions we would have to police from outside. Spec files are small and their grammar is a tiny
/// subset of XML, so a reader we own gives exact line:column for every node, refuses a DOCTYPE
/// (the root of XXE and entity-expansion attacks) before anything is expanded, and enforces limits.
public struct XMLReader {
    public struct Limits: Sendable {
        public var maxBytes = 16 << 20
        public var maxDepth = 64
        public var maxAttributes = 64
        public init() {}
    }

    /// A fatal well-formedness error: XML stops at the first one, as its specification requires.
    public struct Failure: Error, Sendable {
        public var diagnostic: Problem
    }

    private let bytes: [UInt8]
    private let file: String
    private let limits: Limits
    private var pos = 0
    private var line = 1
    private var lineStart = 0

    /// Parses a whole document. `allowingPlainDoctype` skips a DOCTYPE that has no internal subset
    /// (the one every XML plist carries); one with a subset (`[...]`, where entities live) is still refused.
    public static func parse(_ bytes: [UInt8], file: String, limits: Limits = Limits(),
                             allowingPlainDoctype: Bool = false) throws(Failure) -> XMLElement {
        var reader = XMLReader(bytes: bytes, file: file, limits: limits)
        reader.allowsPlainDoctype = allowingPlainDoctype
        return try reader.document()
    }

    private var allowsPlainDoctype = false

    private init(bytes: [UInt8], file: String, limits: Limits) {
        self.bytes = bytes
        self.file = file
        self.limits = limits
    }

    // MARK: Positions and errors

    /// The location of a byte offset on the current line (column in Unicode scalars).
    private func location(at offset: Int) -> Location {
        // Counted on from the last location asked for on this line (from the line's start, a spec
        // on one line was quadratic: every element counted the line again).
        let cache = columns
        var column = 1, i = lineStart
        if cache.lineStart == lineStart && cache.offset <= offset { (column, i) = (cache.column, cache.offset) }
        while i < offset {
            if bytes[i] & 0xC0 != 0x80 { column += 1 }
            i += 1
        }
        (cache.lineStart, cache.offset, cache.column) = (lineStart, offset, column)
        return Location(file: file, line: line, column: column)
    }

    /// The last column counted: where its line started, its offset, its column.
    private final class ColumnCache {
        var lineStart = -1, offset = 0, column = 1
    }
    private let columns = ColumnCache()

    private var here: Location { location(at: pos) }

    private func fail(_ code: DiagnosticCode, _ message: String, at offset: Int? = nil) -> Failure {
        Failure(diagnostic: Problem(code, at: location(at: offset ?? pos), message))
    }

    private func fail(_ message: String, at offset: Int? = nil) -> Failure {
        fail(.xmlSyntax, message, at: offset)
    }

    private var atEnd: Bool { pos >= bytes.count }
    private var peek: UInt8 { pos < bytes.count ? bytes[pos] : 0 }

    private func peek(_ literal: String) -> Bool {
        let u = Array(literal.utf8)
        guard pos + u.count <= bytes.count else { return false }
        for i in 0..<u.count where bytes[pos + i] != u[i] { return false }
        return true
    }

    private mutating func advance(_ n: Int = 1) {
        for _ in 0..<n where pos < bytes.count {
            if bytes[pos] == UInt8(ascii: "\n") {
                line += 1
                lineStart = pos + 1
            }
            pos += 1
        }
    }

    private mutating func expect(_ literal: String) throws(Failure) {
        guard peek(literal) else { throw fail("expected '\(literal)'") }
        advance(literal.utf8.count)
    }

    private mutating func skipWhitespace() {
        while !atEnd, Self.isSpace(peek) { advance() }
    }

    private static func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D }

    // MARK: Document

    private mutating func document() throws(Failure) -> XMLElement {
        if bytes.count > limits.maxBytes {
            throw fail(.xmlLimit, "file is \(bytes.count) bytes; the limit is \(limits.maxBytes)", at: 0)
        }
        if bytes.starts(with: [0xFE, 0xFF]) || bytes.starts(with: [0xFF, 0xFE]) {
            throw fail(.xmlEncoding, "UTF-16 is not supported; save the spec as UTF-8", at: 0)
        }
        try validateCharacters()
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { pos = 3; lineStart = 3 }
        if peek("<?xml") { try xmlDeclaration() }
        try misc()
        guard peek == UInt8(ascii: "<") else {
            throw fail(atEnd ? "no root element" : "expected the root element")
        }
        let root = try element(depth: 1)
        try misc()
        if !atEnd { throw fail("content after the root element") }
        return root
    }

    /// One pass over the bytes before parsing: the first invalid UTF-8 sequence or character that
    /// XML 1.0 forbids is reported where it stands, so nothing downstream sees a broken string.
    private mutating func validateCharacters() throws(Failure) {
        let n = bytes.count
        let found: (offset: Int, scalar: UInt32?)? = bytes.withView { p in
            var i = 0
            while i < n {
                guard let (scalar, length) = decodeUTF8(p, i) else { return (i, nil) }
                if !Self.isXMLChar(scalar) { return (i, scalar) }
                i += length
            }
            return nil
        }
        guard let (offset, scalar) = found else { return }
        guard let scalar else { throw invalidUTF8(at: offset) }
        moveTo(offset)
        throw fail(.xmlSyntax, "character U+\(hex(scalar)) is not allowed in XML 1.0")
    }

    private mutating func invalidUTF8(at offset: Int) -> Failure {
        moveTo(offset)
        return fail(.xmlEncoding, "invalid UTF-8 (byte 0x\(String(bytes[offset], radix: 16, uppercase: true)))")
    }

    /// Positions the line counters at `offset` (used to report errors found before parsing).
    private mutating func moveTo(_ offset: Int) {
        pos = 0; line = 1; lineStart = 0
        advance(offset)
    }

    static func isXMLChar(_ c: UInt32) -> Bool {
        c == 0x9 || c == 0xA || c == 0xD || (0x20...0xD7FF).contains(c)
            || (0xE000...0xFFFD).contains(c) || (0x10000...0x10FFFF).contains(c)
    }

    private mutating func xmlDeclaration() throws(Failure) {
        let start = pos
        advance(5)
        guard let end = find("?>") else { throw fail("unterminated XML declaration", at: start) }
        let body = Substring(String(decoding: bytes[pos..<end], as: UTF8.self))
        if let found = body.indices.first(where: { body[$0...].hasPrefix("encoding") }) {
            let rest = body[found...].dropFirst(8).drop { $0 == " " || $0 == "=" }
            let quote = rest.first
            let value = rest.dropFirst().prefix { $0 != quote }
            if value.lowercased() != "utf-8" {
                throw fail(.xmlEncoding, "encoding \"\(value)\" is not supported; save the spec as UTF-8", at: start)
            }
        }
        advance(end + 2 - pos)
    }

    private func find(_ literal: String) -> Int? {
        let u = Array(literal.utf8)
        var i = pos
        while i + u.count <= bytes.count {
            if bytes[i] == u[0] && Array(bytes[i..<(i + u.count)]) == u { return i }
            i += 1
        }
        return nil
    }

    /// Comments, processing instructions and white space outside the root; a DOCTYPE is refused.
    private mutating func misc() throws(Failure) {
        while true {
            skipWhitespace()
            if peek("<!--") { try comment() }
            else if allowsPlainDoctype, peek("<!DOCTYPE"), let end = find(">"), !bytes[pos..<end].contains(UInt8(ascii: "[")) {
                advance(end + 1 - pos)
            } else if peek("<!DOCTYPE") || peek("<!ENTITY") {
                throw fail(.xmlDTD, "DOCTYPE and entity declarations are not allowed in a spec")
            } else if peek("<?") { try processingInstruction() }
            else { return }
        }
    }

    private mutating func comment() throws(Failure) {
        let start = pos
        advance(4)
        guard let end = find("--") else { throw fail("unterminated comment", at: start) }
        advance(end - pos)
        guard peek("-->") else { throw fail("'--' is not allowed inside a comment") }
        advance(3)
    }

    private mutating func processingInstruction() throws(Failure) {
        let start = pos
        guard let end = find("?>") else { throw fail("unterminated processing instruction", at: start) }
        advance(end + 2 - pos)
    }

    // MARK: Elements

    private mutating func name() throws(Failure) -> String {
        let start = pos
        guard !atEnd, Self.isNameStart(peek) else { throw fail("expected a name") }
        while !atEnd, Self.isNameChar(peek) { advance() }
        return String(decoding: bytes[start..<pos], as: UTF8.self)
    }

    private static func isNameStart(_ b: UInt8) -> Bool {
        (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == UInt8(ascii: "_") || b == UInt8(ascii: ":") || b >= 0x80
    }

    private static func isNameChar(_ b: UInt8) -> Bool {
        isNameStart(b) || (b >= 0x30 && b <= 0x39) || b == UInt8(ascii: "-") || b == UInt8(ascii: ".")
    }

    private mutating func element(depth: Int) throws(Failure) -> XMLElement {
        if depth > limits.maxDepth {
            throw fail(.xmlLimit, "elements nest deeper than \(limits.maxDepth) levels")
        }
        let location = here
        try expect("<")
        let tag = try name()
        var attributes: [XMLAttribute] = []
        while true {
            let hadSpace = !atEnd && Self.isSpace(peek)
            skipWhitespace()
            if peek("/>") {
                advance(2)
                return XMLElement(name: tag, attributes: attributes, children: [], location: location)
            }
            if peek(">") { advance(); break }
            if atEnd { throw fail("unterminated start tag <\(tag)>", at: nil) }
            guard hadSpace else { throw fail("expected white space before an attribute") }
            let attributeLocation = here
            let attributeName = try name()
            skipWhitespace()
            try expect("=")
            skipWhitespace()
            let value = try attributeValue()
            if attributes.contains(where: { $0.name == attributeName }) {
                throw Failure(diagnostic: Problem(.xmlSyntax, at: attributeLocation,
                                                     "attribute '\(attributeName)' is given twice"))
            }
            if attributes.count >= limits.maxAttributes {
                throw Failure(diagnostic: Problem(.xmlLimit, at: attributeLocation,
                                                     "more than \(limits.maxAttributes) attributes"))
            }
            attributes.append(XMLAttribute(name: attributeName, value: value, location: attributeLocation))
        }
        let children = try content(of: tag, depth: depth)
        return XMLElement(name: tag, attributes: attributes, children: children, location: location)
    }

    private mutating func attributeValue() throws(Failure) -> String {
        let quote = peek
        guard quote == UInt8(ascii: "\"") || quote == UInt8(ascii: "'") else {
            throw fail("attribute value must be quoted")
        }
        advance()
        var value: [UInt8] = []
        while true {
            guard !atEnd else { throw fail("unterminated attribute value") }
            let b = peek
            if b == quote { advance(); break }
            if b == UInt8(ascii: "<") { throw fail("'<' is not allowed in an attribute value") }
            if b == UInt8(ascii: "&") { value += try reference(); continue }
            // Attribute-value normalisation: each white-space character becomes a space.
            if b == 0x0D && pos + 1 < bytes.count && bytes[pos + 1] == 0x0A { advance() }
            value.append(Self.isSpace(b) ? 0x20 : b)
            advance()
        }
        return String(decoding: value, as: UTF8.self)
    }

    /// `&amp;` and its four siblings, and `&#...;` character references. Anything else is refused:
    /// with no DTD there are no other entities, and none is ever expanded.
    private mutating func reference() throws(Failure) -> [UInt8] {
        let start = pos
        advance()
        var body: [UInt8] = []
        while !atEnd, peek != UInt8(ascii: ";"), body.count < 12 {
            body.append(peek)
            advance()
        }
        guard peek == UInt8(ascii: ";") else { throw fail(.xmlEntity, "unterminated entity reference", at: start) }
        advance()
        let text = String(decoding: body, as: UTF8.self)
        switch text {
        case "amp": return Array("&".utf8)
        case "lt": return Array("<".utf8)
        case "gt": return Array(">".utf8)
        case "quot": return Array("\"".utf8)
        case "apos": return Array("'".utf8)
        default:
            var scalar: UInt32?
            if text.hasPrefix("#x") { scalar = UInt32(text.dropFirst(2), radix: 16) }
            else if text.hasPrefix("#") { scalar = UInt32(text.dropFirst(1), radix: 10) }
            else { throw fail(.xmlEntity, "unknown entity '&\(text);' (only the five predefined entities are allowed)", at: start) }
            guard let s = scalar, Self.isXMLChar(s), let u = Unicode.Scalar(s) else {
                throw fail(.xmlEntity, "character reference '&\(text);' is not an XML character", at: start)
            }
            return Array(String(Character(u)).utf8)
        }
    }

    private mutating func content(of tag: String, depth: Int) throws(Failure) -> [XMLNode] {
        var children: [XMLNode] = []
        var text: [UInt8] = []
        var textLocation: Location?

        func flush(_ children: inout [XMLNode], _ text: inout [UInt8], _ location: inout Location?) {
            if let loc = location { children.append(.text(String(decoding: text, as: UTF8.self), loc)) }
            text.removeAll()
            location = nil
        }

        while true {
            guard !atEnd else { throw fail("element <\(tag)> is not closed") }
            if peek("</") {
                flush(&children, &text, &textLocation)
                let endLocation = pos
                advance(2)
                let endTag = try name()
                skipWhitespace()
                try expect(">")
                guard endTag == tag else {
                    throw fail("end tag </\(endTag)> does not match <\(tag)>", at: endLocation)
                }
                return children
            } else if peek("<!--") {
                try comment()
            } else if peek("<![CDATA[") {
                if textLocation == nil { textLocation = here }
                advance(9)
                guard let end = find("]]>") else { throw fail("unterminated CDATA section") }
                text += bytes[pos..<end]
                advance(end + 3 - pos)
            } else if peek("<!") {
                throw fail(.xmlDTD, "declarations are not allowed inside an element")
            } else if peek("<?") {
                try processingInstruction()
            } else if peek == UInt8(ascii: "<") {
                flush(&children, &text, &textLocation)
                children.append(.element(try element(depth: depth + 1)))
            } else {
                if textLocation == nil { textLocation = here }
                if peek == UInt8(ascii: "&") {
                    text += try reference()
                } else if peek("]]>") {
                    throw fail("']]>' is not allowed in text")
                } else if peek == 0x0D {
                    // Line-end normalisation: CRLF and CR become LF.
                    advance()
                    if peek != 0x0A { text.append(0x0A) }
                } else {
                    text.append(peek)
                    advance()
                }
            }
        }
    }
}

func hex(_ scalar: UInt32) -> String {
    let h = String(scalar, radix: 16, uppercase: true)
    return String(repeating: "0", count: max(0, 4 - h.count)) + h
}
