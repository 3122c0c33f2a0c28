#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// The fast path for webhook events, written by hand because the benchmark says so (a 100k-event
/// run spent most of its time building the full reader's values, with their lines and columns,
/// for an event's few fields): a validating scan of one JSON text that builds nothing and returns
/// where the string values of the keys asked for are (at any depth, the first of each, only those
/// that need no unescaping). Nil when the text is not well-formed JSON or a value asked for
/// needs unescaping: the full reader then reads the line and says what is wrong.
struct JSONFieldScan {
    private let b: UnsafeBufferPointer<UInt8>
    private var i = 0
    /// Each key asked for: in the top object (`parent` nil), or in the object the top object's
    /// member `parent` holds.
    struct Field {
        var key: [UInt8]
        var parent: [UInt8]?
        init(_ key: String, in parent: String? = nil) {
            self.key = Array(key.utf8)
            self.parent = parent.map { Array($0.utf8) }
        }
    }
    private let wanted: [Field]
    private(set) var found: [Range<Int>?]

    static func fields(_ bytes: UnsafeBufferPointer<UInt8>, _ keys: [Field]) -> [Range<Int>?]? {
        var scan = JSONFieldScan(b: bytes, wanted: keys, found: Array(repeating: nil, count: keys.count))
        scan.skipSpace()
        guard scan.value(depth: 0, parent: nil) else { return nil }
        scan.skipSpace()
        return scan.i == bytes.count ? scan.found : nil
    }

    private init(b: UnsafeBufferPointer<UInt8>, wanted: [Field], found: [Range<Int>?]) {
        self.b = b
        self.wanted = wanted
        self.found = found
    }

    private mutating func skipSpace() {
        while i < b.count, b[i] == 0x20 || b[i] == 0x0A || b[i] == 0x0D || b[i] == 0x09 { i += 1 }
    }

    /// A string at `i` (its opening quote): its content's range and whether it has an escape.
    private mutating func string() -> (Range<Int>, escaped: Bool)? {
        guard i < b.count, b[i] == 0x22 else { return nil }
        i += 1
        let start = i
        var escaped = false
        while i < b.count {
            let c = b[i]
            if c == 0x22 {
                i += 1
                return (start..<(i - 1), escaped)
            }
            if c < 0x20 { return nil }
            if c == 0x5C {
                escaped = true
                i += 2
                continue
            }
            i += 1
        }
        return nil
    }

    /// A value at `i`; `parent`: for an object that is a member of the top object, its key.
    private mutating func value(depth: Int, parent: Range<Int>?) -> Bool {
        guard i < b.count, depth < 64 else { return false }
        switch b[i] {
        case 0x7B: // {
            i += 1
            skipSpace()
            if i < b.count, b[i] == 0x7D { i += 1; return true }
            while true {
                guard let (key, keyEscaped) = string() else { return false }
                skipSpace()
                guard i < b.count, b[i] == 0x3A else { return false }
                i += 1
                skipSpace()
                let slot = keyEscaped || depth > 1 ? nil : wanted.firstIndex { w in
                    guard w.key.elementsEqual(b[key]) else { return false }
                    if let p = w.parent { return depth == 1 && parent.map { b[$0].elementsEqual(p) } == true }
                    return depth == 0
                }
                if let slot, i < b.count, b[i] == 0x22 {
                    guard let (v, escaped) = string() else { return false }
                    if found[slot] == nil {
                        if escaped { return false }
                        found[slot] = v
                    }
                } else {
                    guard value(depth: depth + 1, parent: depth == 0 && !keyEscaped ? key : nil) else { return false }
                }
                skipSpace()
                guard i < b.count else { return false }
                if b[i] == 0x2C { i += 1; skipSpace(); continue }
                if b[i] == 0x7D { i += 1; return true }
                return false
            }
        case 0x5B: // [
            i += 1
            skipSpace()
            if i < b.count, b[i] == 0x5D { i += 1; return true }
            while true {
                guard value(depth: depth + 1, parent: nil) else { return false }
                skipSpace()
                guard i < b.count else { return false }
                if b[i] == 0x2C { i += 1; skipSpace(); continue }
                if b[i] == 0x5D { i += 1; return true }
                return false
            }
        case 0x22:
            return string() != nil
        case 0x74: return literal("true")
        case 0x66: return literal("false")
        case 0x6E: return literal("null")
        default:
            // A number: a sign, digits, a fraction, an exponent.
            let start = i
            while i < b.count, (b[i] >= 0x30 && b[i] <= 0x39) || b[i] == 0x2D || b[i] == 0x2B || b[i] == 0x2E || b[i] == 0x65 || b[i] == 0x45 { i += 1 }
            return i > start
        }
    }

    private mutating func literal(_ word: StaticString) -> Bool {
        let n = word.utf8CodeUnitCount
        guard i + n <= b.count else { return false }
        for k in 0..<n where b[i + k] != word.utf8Start[k] { return false }
        i += n
        return true
    }
}

/// The fast path for an XML check-in plist (what devices send): a flat `<dict>` of `<key>`s with
/// `<string>` and `<data>` values, read by hand with `memmem` (the generic `firstRange(of:)` was
/// most of a run in perf: generic metadata per call). Nil for anything else (a binary plist,
/// nested containers, entities): libplist reads it then.
enum FlatPlistScan {
    /// Key -> (is data, the raw text between the value's tags).
    static func fields(_ b: [UInt8]) -> [String: (data: Bool, text: ArraySlice<UInt8>)]? {
        b.withUnsafeBufferPointer { p in fields(p).map { $0.mapValues { ($0.data, b[$0.range]) } } }
    }

    static func fields(_ b: UnsafeBufferPointer<UInt8>) -> [String: (data: Bool, range: Range<Int>)]? {
        func find(_ needle: StaticString, from: Int, to end: Int? = nil) -> Int? {
            search(b, UnsafeBufferPointer(start: needle.utf8Start, count: needle.utf8CodeUnitCount), from: from, to: end ?? b.count)
        }
        guard b.count > 8, !(b[0] == 0x62 && b[1] == 0x70), let open = find("<dict>", from: 0) else { return nil }
        let start = open + 6
        // The last `</dict>`: the top dict's end (nothing nested, checked below).
        var close: Int?
        var at = start
        while let c = find("</dict>", from: at) {
            close = c
            at = c + 7
        }
        guard let end = close else { return nil }
        if find("<dict", from: start, to: end) != nil || find("<array", from: start, to: end) != nil || find("&", from: start, to: end) != nil { return nil }
        var out: [String: (Bool, Range<Int>)] = [:]
        var i = start
        while let k = find("<key>", from: i, to: end) {
            guard let kc = find("</key>", from: k + 5, to: end) else { return nil }
            let key = String(decoding: UnsafeBufferPointer(rebasing: b[(k + 5)..<kc]), as: UTF8.self)
            var v = kc + 6
            while v < end, b[v] == 0x20 || b[v] == 0x0A || b[v] == 0x0D || b[v] == 0x09 { v += 1 }
            guard v < end, b[v] == UInt8(ascii: "<") else { return nil }
            var tagEnd = v
            while tagEnd < end, b[tagEnd] != UInt8(ascii: ">") { tagEnd += 1 }
            guard tagEnd < end else { return nil }
            let tag = String(decoding: UnsafeBufferPointer(rebasing: b[(v + 1)..<tagEnd]), as: UTF8.self)
            if tag.hasSuffix("/") {
                i = tagEnd + 1
                continue
            }
            let closing = Array("</\(tag)>".utf8)
            let found = closing.withUnsafeBufferPointer { search(b, $0, from: tagEnd + 1, to: end) }
            guard let valueEnd = found else { return nil }
            if tag == "string" || tag == "data" { out[key] = (tag == "data", (tagEnd + 1)..<valueEnd) }
            i = valueEnd + closing.count
        }
        return out
    }

    /// Where `needle` first is in `b[from..<end]`: `memchr` for its first byte, `memcmp` for the rest.
    static func search(_ b: UnsafeBufferPointer<UInt8>, _ needle: UnsafeBufferPointer<UInt8>, from: Int, to end: Int) -> Int? {
        guard let base = b.baseAddress, let first = needle.first, from >= 0, end <= b.count else { return nil }
        let n = needle.count
        var i = from
        while i + n <= end {
            guard let hit = memchr(base + i, Int32(first), end - i - n + 1) else { return nil }
            let at = base.distance(to: hit.assumingMemoryBound(to: UInt8.self))
            if memcmp(base + at, needle.baseAddress!, n) == 0 { return at }
            i = at + 1
        }
        return nil
    }
}
