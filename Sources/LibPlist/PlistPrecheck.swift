import Foundation

/// What libplist cannot be trusted with, found before it sees the bytes. libplist parses and frees
/// its tree recursively, so a hostile file nested 200k levels overflows the stack inside libplist:
/// the depth is checked here, iteratively. It turns a binary UTF-16 string with a lone surrogate
/// into an empty string without a word, and it aborts (an assertion) on a string or key holding a
/// NUL character: such strings are found here too (found by tools/fuzz values).
enum PlistPrecheck {
    enum Verdict: Equatable {
        case fine
        case tooDeep
        /// A binary plist whose container references lead back to itself.
        case cycle
        /// A binary plist's UTF-16 string with an unpaired surrogate.
        case loneSurrogate
        /// A NUL character in a string or key (a raw NUL byte or `&#0;` in XML).
        case nulCharacter
        /// A binary plist whose trailer does not describe its object table (libplist 2.2 reads some
        /// such files anyway, past the checks above: found by tools/fuzz values).
        case malformedTrailer
        /// An integer beyond 64 bits (libplist wraps it: 99999999999999999999 read as -1).
        case integerOutOfRange(String)
        /// A date libplist 2.2 cannot hold (it keeps int32 seconds from 2001: others wrap).
        case dateOutOfRange(String)
        /// A real that is not a number (it passed every constraint: NaN compares false).
        case notANumber
    }

    static func check(_ bytes: [UInt8], limit: Int) -> Verdict {
        guard bytes.starts(with: Array("bplist00".utf8)) else { return xml(bytes, limit: limit) }
        guard let table = BinaryObjectTable(bytes) else { return .malformedTrailer }
        if let trouble = table.stringTrouble() ?? table.valueTrouble() { return trouble }
        return binary(table, limit: limit)
    }

    /// XML: element depth, counting every start tag that is not self-closing and every end tag.
    /// Comments, CDATA, processing instructions and the DOCTYPE are skipped whole, so a `<` inside
    /// them is not a tag. Malformed input is left to libplist, which rejects it.
    static func xml(_ bytes: [UInt8], limit: Int) -> Verdict {
        var depth = 0, i = 0
        let n = bytes.count
        func skip(past terminator: [UInt8], from start: Int) -> Int {
            var j = start
            while j + terminator.count <= n {
                if bytes[j] == terminator[0], bytes[j..<(j + terminator.count)].elementsEqual(terminator) { return j + terminator.count }
                j += 1
            }
            return n
        }
        // No NUL byte anywhere (XML allows none, in CDATA or comments either).
        if bytes.contains(0) { return .nulCharacter }
        while i < n {
            if bytes[i] == UInt8(ascii: "&"), bytes[(i + 1)...].starts(with: [UInt8(ascii: "#")]), Self.referencesNUL(bytes, from: i + 2) {
                return .nulCharacter
            }
            guard bytes[i] == UInt8(ascii: "<") else { i += 1; continue }
            let next = i + 1 < n ? bytes[i + 1] : 0
            if next == UInt8(ascii: "!") {
                if bytes[i...].starts(with: Array("<!--".utf8)) { i = skip(past: Array("-->".utf8), from: i + 4) }
                else if bytes[i...].starts(with: Array("<![CDATA[".utf8)) { i = skip(past: Array("]]>".utf8), from: i + 9) }
                else { i = skip(past: [UInt8(ascii: ">")], from: i + 2) }
            } else if next == UInt8(ascii: "?") {
                i = skip(past: Array("?>".utf8), from: i + 2)
            } else if next == UInt8(ascii: "/") {
                depth -= 1
                i = skip(past: [UInt8(ascii: ">")], from: i + 2)
            } else {
                let end = skip(past: [UInt8(ascii: ">")], from: i + 1)
                let selfClosing = end >= 2 && end <= n && bytes[end - 2] == UInt8(ascii: "/")
                if !selfClosing {
                    depth += 1
                    if depth > limit { return .tooDeep }
                    // A scalar's text: what libplist would read wrongly without a word.
                    let name = bytes[(i + 1)..<max(i + 1, end - 1)]
                    if let kind = ["integer", "real", "date"].first(where: { name.elementsEqual($0.utf8) }) {
                        var close = end
                        while close < n && bytes[close] != UInt8(ascii: "<") { close += 1 }
                        let text = String(decoding: bytes[end..<close], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                        if let trouble = Self.scalarTrouble(kind, text) { return trouble }
                    }
                }
                i = end
            }
        }
        return .fine
    }

    /// libplist 2.2 keeps a date as int32 seconds from 2001-01-01: these are its first and last.
    static let dateRange = -2_147_483_648.0...2_147_483_647.0
    static let dateRangeText = "1932-12-13T20:45:52Z to 2069-01-19T03:14:07Z"

    /// An XML scalar's text that libplist would read as another value.
    static func scalarTrouble(_ kind: String, _ text: String) -> Verdict? {
        switch kind {
        case "integer":
            let digits = text.hasPrefix("-") || text.hasPrefix("+") ? text.dropFirst() : Substring(text)
            guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }  // libplist's own error
            return Int64(text) == nil ? .integerOutOfRange(text) : nil
        case "real":
            return text.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "+-")) == "nan" ? .notANumber : nil
        default:
            guard let seconds = secondsSince2001(text), !dateRange.contains(seconds) else { return nil }
            return .dateOutOfRange(text)
        }
    }

    /// `YYYY-MM-DDTHH:MM:SSZ` as seconds from 2001-01-01T00:00:00Z (proleptic Gregorian), nil for
    /// other text (libplist's to judge).
    static func secondsSince2001(_ text: String) -> Double? {
        let u = Array(text.utf8)
        guard u.count == 20, u[4] == 0x2D, u[7] == 0x2D, u[10] == UInt8(ascii: "T"), u[13] == 0x3A, u[16] == 0x3A, u[19] == UInt8(ascii: "Z") else { return nil }
        func number(_ r: Range<Int>) -> Int? { u[r].allSatisfy { $0 >= 0x30 && $0 <= 0x39 } ? u[r].reduce(0) { $0 * 10 + Int($1 - 0x30) } : nil }
        guard let y = number(0..<4), let m = number(5..<7), let d = number(8..<10), let h = number(11..<13),
              let mi = number(14..<16), let s = number(17..<19), (1...12).contains(m), (1...31).contains(d) else { return nil }
        // Days from 1970-01-01 (Howard Hinnant's days_from_civil).
        let yy = m <= 2 ? y - 1 : y
        let era = (yy >= 0 ? yy : yy - 399) / 400
        let yoe = yy - era * 400
        let doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        let days = era * 146_097 + doe - 719_468
        return Double(days * 86_400 + h * 3600 + mi * 60 + s) - 978_307_200
    }

    /// Whether the character reference whose text starts at `start` (after `&#`) is `0`, `x0`,
    /// `X00`... up to its `;`.
    private static func referencesNUL(_ bytes: [UInt8], from start: Int) -> Bool {
        var j = start
        if j < bytes.count, bytes[j] | 0x20 == UInt8(ascii: "x") { j += 1 }
        let digits = j
        while j < bytes.count, bytes[j] == UInt8(ascii: "0") { j += 1 }
        return j > digits && j < bytes.count && bytes[j] == UInt8(ascii: ";")
    }

    /// Binary: the height of the object graph from the top object, by an iterative post-order walk
    /// with each object's height remembered (shared objects are walked once) and a cycle found as an
    /// object reached again while it is still on the walk. Malformed tables are left to libplist.
    private static func binary(_ table: BinaryObjectTable, limit: Int) -> Verdict {
        let unvisited = -1, onWalk = -2
        var height = [Int](repeating: unvisited, count: table.count)
        // Each frame: object, the index of its next child to visit, the tallest child so far.
        var walk: [(object: Int, next: Int, tallest: Int)] = [(table.top, 0, 0)]
        height[table.top] = onWalk
        while let frame = walk.last {
            let children = table.children(of: frame.object)
            if frame.next < children.count {
                walk[walk.count - 1].next += 1
                let child = children[frame.next]
                guard child < table.count else { continue }
                switch height[child] {
                case onWalk: return .cycle
                case unvisited:
                    if walk.count >= limit { return .tooDeep }
                    height[child] = onWalk
                    walk.append((child, 0, 0))
                default:
                    walk[walk.count - 1].tallest = max(frame.tallest, height[child])
                }
            } else {
                walk.removeLast()
                let h = frame.tallest + 1
                if h > limit { return .tooDeep }
                height[frame.object] = h
                if !walk.isEmpty { walk[walk.count - 1].tallest = max(walk[walk.count - 1].tallest, h) }
            }
        }
        return .fine
    }
}

/// The parts of a binary plist (bplist00) the depth check needs: the offset table and the object
/// references of arrays, sets and dictionaries. Everything is bounds-checked; nil when the trailer
/// is unreadable.
private struct BinaryObjectTable {
    let bytes: [UInt8]
    let count: Int
    let top: Int
    private let offsetSize: Int, refSize: Int, tableOffset: Int

    init?(_ bytes: [UInt8]) {
        guard bytes.count >= 8 + 32 else { return nil }
        self.bytes = bytes
        let trailer = bytes.count - 32
        offsetSize = Int(bytes[trailer + 6])
        refSize = Int(bytes[trailer + 7])
        let be = { Self.bigEndian(bytes, at: $0, size: 8) }
        guard let count = be(trailer + 8), let top = be(trailer + 16), let tableOffset = be(trailer + 24),
              count > 0, top < count, offsetSize > 0, offsetSize <= 8, refSize > 0, refSize <= 8,
              tableOffset >= 8, tableOffset <= trailer, count <= (trailer - tableOffset) / offsetSize else { return nil }
        self.count = count
        self.top = top
        self.tableOffset = tableOffset
    }

    private func be(_ at: Int, _ size: Int) -> Int? { Self.bigEndian(bytes, at: at, size: size) }

    private static func bigEndian(_ bytes: [UInt8], at: Int, size: Int) -> Int? {
        guard at >= 0, at + size <= bytes.count else { return nil }
        var v: UInt64 = 0
        for b in bytes[at..<(at + size)] { v = v << 8 | UInt64(b) }
        return v > UInt64(Int.max) ? nil : Int(v)
    }

    /// A string object (ASCII 0x5n, UTF-16 0x6n, UTF-8 0x7n; keys are strings too) holding a NUL,
    /// or a UTF-16 one with a high surrogate not followed by a low one, or a low one alone.
    func stringTrouble() -> PlistPrecheck.Verdict? {
        for object in 0..<count {
            guard let (kind, length, start) = header(of: object), kind >= 0x5 && kind <= 0x7 else { continue }
            if kind != 0x6 {
                guard length <= bytes.count - start else { continue }
                if bytes[start..<(start + length)].contains(0) { return .nulCharacter }
                continue
            }
            guard length <= (bytes.count - start) / 2 else { continue }
            var expectingLow = false
            for i in 0..<length {
                let unit = UInt16(bytes[start + 2 * i]) << 8 | UInt16(bytes[start + 2 * i + 1])
                if unit == 0 { return .nulCharacter }
                let isHigh = unit & 0xFC00 == 0xD800, isLow = unit & 0xFC00 == 0xDC00
                if expectingLow != isLow { return .loneSurrogate }
                expectingLow = isHigh
            }
            if expectingLow { return .loneSurrogate }
        }
        return nil
    }

    /// An integer beyond 64 bits (a 16-byte integer libplist reads as unsigned: it wraps), a real
    /// that is NaN, a date outside what libplist holds.
    func valueTrouble() -> PlistPrecheck.Verdict? {
        for object in 0..<count {
            guard let offset = be(tableOffset + object * offsetSize, offsetSize), offset < bytes.count else { continue }
            let marker = bytes[offset]
            let size = 1 << Int(marker & 0x0F)
            guard size <= 16, offset + 1 + size <= bytes.count else { continue }
            let value = bytes[(offset + 1)..<(offset + 1 + size)]
            switch marker >> 4 {
            case 0x1 where size == 16:
                // Fits a signed 64-bit integer only with nothing in the high half and the low one's top bit clear.
                if value.prefix(8).contains(where: { $0 != 0 }) || value[value.startIndex + 8] & 0x80 != 0 {
                    let bits = value.reduce(UInt128(0)) { $0 << 8 | UInt128($1) }
                    return .integerOutOfRange(String(Int128(bitPattern: bits)))
                }
            case 0x2 where size == 4:
                if Float(bitPattern: value.reduce(0) { $0 << 8 | UInt32($1) }).isNaN { return .notANumber }
            case 0x2 where size == 8:
                if Double(bitPattern: value.reduce(0) { $0 << 8 | UInt64($1) }).isNaN { return .notANumber }
            case 0x3 where marker == 0x33:
                let seconds = Double(bitPattern: value.reduce(0) { $0 << 8 | UInt64($1) })
                if !PlistPrecheck.dateRange.contains(seconds) {
                    let text = seconds.isFinite ? ISO8601DateFormatter().string(from: Date(timeIntervalSinceReferenceDate: seconds)) : "\(seconds)"
                    return .dateOutOfRange(text)
                }
            default: break
            }
        }
        return nil
    }

    /// An object's kind (the marker's high nibble), its length (the low nibble, or the integer that
    /// follows when it is 0xF) and where its contents start.
    private func header(of object: Int) -> (kind: UInt8, length: Int, start: Int)? {
        guard let offset = be(tableOffset + object * offsetSize, offsetSize), offset < bytes.count else { return nil }
        let marker = bytes[offset]
        var length = Int(marker & 0x0F), start = offset + 1
        if length == 0x0F {
            guard start < bytes.count, bytes[start] >> 4 == 0x1 else { return nil }
            let size = 1 << Int(bytes[start] & 0x0F)
            guard size <= 8, let n = be(start + 1, size) else { return nil }
            length = n
            start += 1 + size
        }
        return (marker >> 4, length, start)
    }

    /// The objects an array, set or dictionary refers to (a dictionary's keys included); none for
    /// other objects or unreadable ones.
    func children(of object: Int) -> [Int] {
        guard let (kind, length, refs) = header(of: object), kind == 0xA || kind == 0xC || kind == 0xD else { return [] }
        guard length <= bytes.count else { return [] }
        let total = kind == 0xD ? length * 2 : length
        guard total <= (bytes.count - refs) / refSize else { return [] }
        return (0..<total).compactMap { be(refs + $0 * refSize, refSize) }
    }
}
