/// A distinguished name parsed per RFC 4514: RDNs from the leaf to the root, each with one or more
/// attribute-value pairs (`+` joins a multi-valued RDN). Values are unescaped (`\,` `\+` `\"` `\\`
/// `\<` `\>` `\;` `\=` `\ ` `\#` and hex pairs such as `\2C` or `\C3\A9`). Spaces around `,`, `+` and
/// `=` are tolerated, as older (RFC 1779 / 2253) writers and the AppConfig reference's sample put them.
public struct DistinguishedName: Sendable, Equatable {
    public struct Attribute: Sendable, Equatable {
        /// As written (`CN`, `ou`, `2.5.4.3`).
        public var type: String
        public var value: String
    }

    /// Leaf first: `CN=Jane Doe,OU=NA,OU=Users,DC=corp` has four RDNs, CN first.
    public var rdns: [[Attribute]]

    public struct ParseError: Error, Equatable, Sendable {
        public var message: String
        /// Offset in UTF-8 bytes.
        public var offset: Int
    }

    public init(parsing text: String) throws(ParseError) {
        var rdns: [[Attribute]] = []
        try Self.scan(Array(text.utf8), wants: { _ in true }) { type, value, newRDN in
            let attribute = Attribute(type: String(decoding: type, as: UTF8.self), value: String(decoding: value, as: UTF8.self))
            if newRDN { rdns.append([attribute]) } else { rdns[rdns.count - 1].append(attribute) }
        }
        self.rdns = rdns
    }

    /// A DN in one spelling for comparison: types and values ASCII-lowercased, values unescaped,
    /// no spaces around separators (`CN=Sales, OU=Groups` and `cn=sales,ou=groups` are one group).
    /// Distinguished names compare case-insensitively in AD and in the usual OpenLDAP schemas.
    /// The characters `canonical` writes escaped (`\,`).
    public static let canonicallyEscaped = Array(",+\"\\<>;=".utf8)

    public static func canonical(_ dn: [UInt8]) throws(ParseError) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(dn.count)
        try scan(dn, wants: { _ in true }) { type, value, newRDN in
            if !out.isEmpty { out.append(newRDN ? UInt8(ascii: ",") : UInt8(ascii: "+")) }
            out += type.map(asciiLower)
            out.append(UInt8(ascii: "="))
            for b in value {
                if Self.canonicallyEscaped.contains(b) { out.append(UInt8(ascii: "\\")) }  // kept apart from the separators
                out.append(asciiLower(b))
            }
        }
        return out
    }

    /// The `cn` (leaf-most CN) and `ou` (OU nearest the domain components) of a DN, as bytes,
    /// without building the whole parsed DN.
    public static func commonNameAndUnit(_ dn: [UInt8]) throws(ParseError) -> (cn: [UInt8]?, ou: [UInt8]?) {
        let pieces = try dn.withView { b throws(ParseError) in try commonNameAndUnit(in: b) }
        return (pieces.cn?.bytes(in: dn), pieces.ou?.bytes(in: dn))
    }

    /// `commonNameAndUnit` for the user table, which derives both for every entry: a value
    /// written without escapes or quotes (most are) is a range of `dn`, with nothing built.
    /// `readInOnePass`: the DN is written plainly (`plainCommonNameAndUnit` read it).
    /// `validUTF8`: the caller checked the whole DN (the values are not checked again).
    package static func commonNameAndUnit(in dn: ByteView, validUTF8: Bool = false) throws(ParseError) -> (cn: Piece?, ou: Piece?, readInOnePass: Bool) {
        // Bound from the call and returned, not kept: a copy of the optional pieces cost every user.
        if let plain = plainCommonNameAndUnit(in: dn, validUTF8: validUTF8) { return (plain.cn, plain.ou, true) }
        let walked = try walkedCommonNameAndUnit(in: dn)
        return (walked.cn, walked.ou, false)
    }

    /// `commonNameAndUnit` of a DN written plainly: `type=value` pairs separated by `,`, no spaces
    /// around the separators, no escapes, quotes, `+`, `;` or leading `#`. Read in one pass (the
    /// values' ends eight bytes at a time); nil for any other DN, which `walk` reads (through
    /// `walk`, the DNs were most of reading a directory's users after the lines themselves).
    static func plainCommonNameAndUnit(in dn: ByteView, validUTF8: Bool = false) -> (cn: Piece?, ou: Piece?)? {
        let b = dn
        guard dn.count > 0 else { return nil }
        let n = dn.count
        var cn: Range<Int>?, ou: Range<Int>?
        var i = 0
        while true {
            let typeStart = i
            while i < n && isTypeCharacter(b[i]) { i += 1 }
            guard i > typeStart, i < n, b[i] == UInt8(ascii: "=") else { return nil }
            let type = typeStart..<i
            i += 1
            let valueStart = i
            guard let end = plainValueEnd(dn, from: i), end > valueStart else { return nil }
            let first = b[valueStart]
            guard first != 0x20, first != UInt8(ascii: "\""), first != UInt8(ascii: "#"), b[end - 1] != 0x20 else { return nil }
            if type.count == 2 {
                let t0 = b[type.lowerBound] | 0x20, t1 = b[type.lowerBound + 1] | 0x20
                let isCN = t0 == UInt8(ascii: "c") && t1 == UInt8(ascii: "n"), isOU = t0 == UInt8(ascii: "o") && t1 == UInt8(ascii: "u")
                // Every CN and OU value is UTF-8, as `walk` checks each (one that is not: walked, for
                // its error), unless the caller checked the whole DN.
                if !validUTF8 && (isCN || isOU) && firstInvalidUTF8(dn[view: valueStart..<end]) != nil { return nil }
                if isCN && cn == nil { cn = valueStart..<end }
                if isOU { ou = valueStart..<end }  // the last OU wins: the one nearest the DCs
            }
            i = end
            if i == n { break }
            guard b[i] == UInt8(ascii: ","), i + 1 < n else { return nil }  // `+` `;` or a trailing `,`: walked
            i += 1
        }
        return (cn.map(Piece.range), ou.map(Piece.range))
    }

    /// `commonNameAndUnit` through `walk`: any DN RFC 4514 (and older writers) allow.
    static func walkedCommonNameAndUnit(in dn: ByteView) throws(ParseError) -> (cn: Piece?, ou: Piece?) {
        var cn: Piece?, ou: Piece?
        func isType(_ type: Range<Int>, _ a: UInt8, _ b: UInt8) -> Bool {
            type.count == 2 && dn[type.lowerBound] | 0x20 == a && dn[type.lowerBound + 1] | 0x20 == b
        }
        // Only CN and OU values are built; the others are checked and skipped.
        try walk(dn, wants: { isType($0, UInt8(ascii: "c"), UInt8(ascii: "n")) || isType($0, UInt8(ascii: "o"), UInt8(ascii: "u")) }) { type, value, _ in
            if isType(type, UInt8(ascii: "c"), UInt8(ascii: "n")) { if cn == nil { cn = value } }
            else { ou = value }  // the last OU wins: the one nearest the DCs
        }
        return (cn, ou)
    }

    /// An attribute value: a range of the DN's bytes when written plainly, else built (unescaped).
    public enum Piece: Equatable, Sendable {
        case range(Range<Int>)
        case bytes([UInt8])

        public func bytes<S: RandomAccessCollection<UInt8>>(in dn: S) -> [UInt8] where S.Index == Int {
            switch self {
            case .range(let r): Array(dn[r])
            case .bytes(let b): b
            }
        }
    }

    /// Walks a DN, calling `visit(type, value, startsNewRDN)` for each attribute whose type `wants`
    /// accepts, leaf first; the other values are checked and skipped without being built.
    public static func scan(_ s: [UInt8], wants: (ArraySlice<UInt8>) -> Bool,
                     visit: (ArraySlice<UInt8>, [UInt8], Bool) -> Void) throws(ParseError) {
        try walk(s, wants: { wants(s[$0]) }) { type, value, newRDN in visit(s[type], value.bytes(in: s), newRDN) }
    }

    /// `scan` over any contiguous bytes, types as ranges, values as pieces.
    static func walk<S: RandomAccessCollection<UInt8>>(_ s: S, wants: (Range<Int>) -> Bool,
                                                      visit: (Range<Int>, Piece, Bool) -> Void) throws(ParseError) where S.Index == Int {
        var i = 0
        func skipSpaces() { while i < s.count && s[i] == 0x20 { i += 1 } }
        if s.allSatisfy({ $0 == 0x20 }) { return }  // the root DSE
        while true {
            var newRDN = true
            while true {
                skipSpaces()
                let typeStart = i
                while i < s.count && s[i] != UInt8(ascii: "=") && s[i] != UInt8(ascii: ",") && s[i] != UInt8(ascii: "+") { i += 1 }
                var typeEnd = i
                while typeEnd > typeStart && s[typeEnd - 1] == 0x20 { typeEnd -= 1 }
                let type = typeStart..<typeEnd
                guard i < s.count, s[i] == UInt8(ascii: "="), !type.isEmpty,
                      type.allSatisfy({ isTypeCharacter(s[$0]) })
                else { throw ParseError(message: "expected an attribute type and '='", offset: typeStart) }
                i += 1
                skipSpaces()
                let wanted = wants(type)
                let v = try value(s, &i, build: wanted)
                if wanted { visit(type, v, newRDN) }
                newRDN = false
                guard i < s.count, s[i] == UInt8(ascii: "+") else { break }
                i += 1
            }
            guard i < s.count else { break }
            guard s[i] == UInt8(ascii: ",") || s[i] == UInt8(ascii: ";") else {
                throw ParseError(message: "expected ',' between RDNs", offset: i)
            }
            i += 1
        }
    }

    /// One attribute value, up to an unescaped `,` `+` `;` or the end; trailing unescaped spaces
    /// dropped. Built only when an escape or quotes make it differ from its bytes as written.
    private static func value<S: RandomAccessCollection<UInt8>>(_ s: S, _ i: inout Int, build: Bool) throws(ParseError) -> Piece where S.Index == Int {
        if i < s.count && s[i] == UInt8(ascii: "#") {
            // A BER-encoded value in hex: kept as written (no AppConfig variable reads one).
            let start = i
            while i < s.count && s[i] != UInt8(ascii: ",") && s[i] != UInt8(ascii: "+") && s[i] != UInt8(ascii: ";") { i += 1 }
            return .range(build ? start..<i : start..<start)
        }
        var out: [UInt8] = []
        if i < s.count && s[i] == UInt8(ascii: "\"") {
            // RFC 1779's quoted value.
            let start = i
            i += 1
            while i < s.count && s[i] != UInt8(ascii: "\"") {
                if s[i] == UInt8(ascii: "\\") && i + 1 < s.count { i += 1 }
                out.append(s[i])
                i += 1
            }
            guard i < s.count else { throw ParseError(message: "unterminated quoted value", offset: start) }
            i += 1
            while i < s.count && s[i] == 0x20 { i += 1 }
            return .bytes(out)
        }
        // Plain until the first escape: a range of the input; from an escape on, built.
        let start = i
        if let stop = s.withContiguousStorageIfAvailable({ plainValueEnd(ByteView($0), from: start) }) ?? nil {
            // No escape before the value ends: its bytes as written, less trailing spaces.
            i = stop
            guard build else { return .range(start..<start) }
            var keep = stop
            while keep > start && s[keep - 1] == 0x20 { keep -= 1 }
            let invalid = s.withContiguousStorageIfAvailable { firstInvalidUTF8(ByteView($0)[view: start..<keep]) } ?? nil
            if let invalid { throw ParseError(message: "the value is not UTF-8", offset: start + invalid) }
            return .range(start..<keep)
        }
        var built = false
        var keep = 0  // up to the last escaped or non-space byte: of `out` once built, else of the input
        while i < s.count {
            let c = s[i]
            if c == UInt8(ascii: ",") || c == UInt8(ascii: "+") || c == UInt8(ascii: ";") { break }
            if c == UInt8(ascii: "\\") {
                guard i + 1 < s.count else { throw ParseError(message: "a '\\' ends the DN", offset: i) }
                if build && !built {
                    out.append(contentsOf: s[start..<i])
                    built = true
                }
                if let hi = hexDigitValue(s[i + 1]), i + 2 < s.count, let lo = hexDigitValue(s[i + 2]) {
                    if build { out.append(hi << 4 | lo) }
                    i += 3
                } else if "\"+,;<>\\=# ".utf8.contains(s[i + 1]) {
                    if build { out.append(s[i + 1]) }
                    i += 2
                } else {
                    throw ParseError(message: "invalid escape '\\\(Character(Unicode.Scalar(s[i + 1])))'", offset: i)
                }
                keep = out.count
                continue
            }
            if built {
                out.append(c)
                if c != 0x20 { keep = out.count }
            } else if c != 0x20 {
                keep = i + 1
            }
            i += 1
        }
        guard build else { return .range(start..<start) }
        if built {
            out.removeSubrange(keep...)
            guard out.withView({ firstInvalidUTF8($0) }) == nil else {
                throw ParseError(message: "the value, its escapes decoded, is not UTF-8", offset: i)
            }
            return .bytes(out)
        }
        let range = start..<max(keep, start)
        let invalid = s.withContiguousStorageIfAvailable { firstInvalidUTF8(ByteView($0)[view: range]) } ?? nil
        if let invalid { throw ParseError(message: "the value is not UTF-8", offset: range.lowerBound + invalid) }
        return .range(range)
    }

    /// Where a value from `start` ends (its `,` `+` `;` or the end), or nil when a `\` comes first
    /// (the value is read byte by byte, and built). Eight bytes at a time, the first match the
    /// lowest of the word's "has zero byte" bits (false ones only follow a true one): values read
    /// byte by byte cost every directory read.
    private static func plainValueEnd(_ s: ByteView, from start: Int) -> Int? {
        func zeroBytes(_ v: UInt64) -> UInt64 { (v &- 0x0101_0101_0101_0101) & ~v & 0x8080_8080_8080_8080 }
        guard !s.isEmpty else { return start }
        let b = s, n = s.count
        var i = start
        while i + 8 <= n {
            let w = b.word(at: i)
            let stops = zeroBytes(w ^ 0x2C2C_2C2C_2C2C_2C2C) | zeroBytes(w ^ 0x2B2B_2B2B_2B2B_2B2B)
                | zeroBytes(w ^ 0x3B3B_3B3B_3B3B_3B3B) | zeroBytes(w ^ 0x5C5C_5C5C_5C5C_5C5C)
            if stops != 0 {
                i += stops.trailingZeroBitCount / 8
                return b[i] == UInt8(ascii: "\\") ? nil : i
            }
            i += 8
        }
        while i < n {
            switch b[i] {
            case UInt8(ascii: ","), UInt8(ascii: "+"), UInt8(ascii: ";"): return i
            case UInt8(ascii: "\\"): return nil
            default: i += 1
            }
        }
        return n
    }

    /// A letter, digit, `-` or `.`: what an attribute type (a name or an OID) is made of.
    private static func isTypeCharacter(_ c: UInt8) -> Bool {
        (c >= 0x30 && c <= 0x39) || (c | 0x20 >= 0x61 && c | 0x20 <= 0x7A) || c == 0x2D || c == 0x2E
    }

    /// The `cn` variable: the CN of the leaf-most RDN that has one.
    public var commonName: String? { first("cn", fromLeaf: true) }

    /// The `ou` variable: the OU nearest the domain components (the reference's sample:
    /// `CN=Jane Doe, OU=NA,OU=Users, OU=XY, DC=myCompany, DC=com` gives `XY`).
    public var organizationalUnit: String? { first("ou", fromLeaf: false) }

    private func first(_ type: String, fromLeaf: Bool) -> String? {
        let ordered = fromLeaf ? rdns : rdns.reversed()
        for rdn in ordered {
            if let a = rdn.first(where: { $0.type.lowercased() == type }) { return a.value }
        }
        return nil
    }
}
