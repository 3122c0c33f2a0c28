#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// The fast path for an XML check-in plist (what devices send): a flat `<dict>` of `<key>`s with
/// `<string>` and `<data>` values, read by hand with `memchr` and `memcmp` (the generic `firstRange(of:)` was
/// most of a run in perf: generic metadata per call). Nil for anything else (a binary plist,
/// nested containers, entities): libplist reads it then.
enum FlatPlistScan {
    /// Key -> (is data, the raw text between the value's tags).
    static func fields(_ b: [UInt8]) -> [String: (data: Bool, text: ArraySlice<UInt8>)]? {
        b.withUnsafeBufferPointer { p in fields(p).map { $0.mapValues { ($0.data, b[$0.range]) } } }
    }

    static func fields(_ b: UnsafeBufferPointer<UInt8>) -> [String: (data: Bool, range: Range<Int>)]? {
        var out: [String: (Bool, Range<Int>)] = [:]
        let read = scan(b) { key, data, range in out[String(decoding: key, as: UTF8.self)] = (data, range) }
        return read ? out : nil
    }

    /// The status check-in's two fields, `Endpoint` and `Data` (nil where the plist has none),
    /// with nothing made for the others: a dictionary of every field per event was hashing a
    /// status run did not need. Nil for a plist this does not read.
    static func endpointAndData(_ b: [UInt8]) -> (endpoint: (data: Bool, text: ArraySlice<UInt8>)?, data: (data: Bool, text: ArraySlice<UInt8>)?)? {
        b.withUnsafeBufferPointer { p in
            var endpoint: (Bool, Range<Int>)?, data: (Bool, Range<Int>)?
            let read = scan(p) { key, isData, range in
                if key.elementsEqual("Endpoint".utf8) { endpoint = (isData, range) } else if key.elementsEqual("Data".utf8) { data = (isData, range) }
            }
            guard read else { return nil }
            return (endpoint.map { ($0.0, b[$0.1]) }, data.map { ($0.0, b[$0.1]) })
        }
    }

    /// Calls `field` with each key's bytes, whether its value is data, and the value's text's
    /// place; false for anything but a flat dict of strings and data.
    private static func scan(_ b: UnsafeBufferPointer<UInt8>, _ field: (UnsafeBufferPointer<UInt8>, Bool, Range<Int>) -> Void) -> Bool {
        func find(_ needle: StaticString, from: Int, to end: Int? = nil) -> Int? {
            search(b, UnsafeBufferPointer(start: needle.utf8Start, count: needle.utf8CodeUnitCount), from: from, to: end ?? b.count)
        }
        guard b.count > 8, !(b[0] == 0x62 && b[1] == 0x70), let open = find("<dict>", from: 0) else { return false }
        let start = open + 6
        // The last `</dict>`: the top dict's end (nothing nested, checked below).
        var close: Int?
        var at = start
        while let c = find("</dict>", from: at) {
            close = c
            at = c + 7
        }
        guard let end = close else { return false }
        if find("<dict", from: start, to: end) != nil || find("<array", from: start, to: end) != nil || find("&", from: start, to: end) != nil { return false }
        var i = start
        while let k = find("<key>", from: i, to: end) {
            guard let kc = find("</key>", from: k + 5, to: end) else { return false }
            let key = UnsafeBufferPointer(rebasing: b[(k + 5)..<kc])
            var v = kc + 6
            while v < end, b[v] == 0x20 || b[v] == 0x0A || b[v] == 0x0D || b[v] == 0x09 { v += 1 }
            guard v < end, b[v] == UInt8(ascii: "<") else { return false }
            var tagEnd = v
            while tagEnd < end, b[tagEnd] != UInt8(ascii: ">") { tagEnd += 1 }
            guard tagEnd < end else { return false }
            let tag = UnsafeBufferPointer(rebasing: b[(v + 1)..<tagEnd])
            if tag.last == UInt8(ascii: "/") {
                i = tagEnd + 1
                continue
            }
            // The value ends at `</TAG>`.
            var closing: [UInt8] = [UInt8(ascii: "<"), UInt8(ascii: "/")]
            closing += tag
            closing.append(UInt8(ascii: ">"))
            let found = closing.withUnsafeBufferPointer { search(b, $0, from: tagEnd + 1, to: end) }
            guard let valueEnd = found else { return false }
            let isData = tag.elementsEqual("data".utf8)
            if isData || tag.elementsEqual("string".utf8) { field(key, isData, (tagEnd + 1)..<valueEnd) }
            i = valueEnd + closing.count
        }
        return true
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
