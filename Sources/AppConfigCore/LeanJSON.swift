#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A JSON text parsed into a flat list of nodes that point into its bytes: no string is made
/// until asked for, no place kept. Written by hand because the benchmark says so: the values'
/// reader (`JSONReader`, every value with its line and column, every string made) was most of a
/// status run. Nil for text that is not JSON: the values' reader then says where and why.
package struct LeanJSON {
    package enum Kind: UInt8 { case object, array, string, number, literal }

    package struct Node {
        package var kind: Kind
        /// A string's content (without its quotes), or a number's or literal's text.
        package var start: Int32
        package var end: Int32
        /// The index after this node's subtree (its next sibling's).
        package var next: Int32
        /// A string with an escape (unescaped when read).
        package var escaped: Bool
    }

    /// The text; nodes count from its start (a line of a larger file is read where it lies).
    package let bytes: ArraySlice<UInt8>
    private let base: Int
    package private(set) var nodes: [Node] = []

    package init?(_ bytes: [UInt8], maxDepth: Int = 64) { self.init(bytes[...], maxDepth: maxDepth) }

    package init?(_ bytes: ArraySlice<UInt8>, maxDepth: Int = 64) {
        self.bytes = bytes
        base = bytes.startIndex
        let ok: Bool = bytes.withUnsafeBufferPointer { b in
            var i = 0
            var nodes: [Node] = []
            nodes.reserveCapacity(b.count / 16)
            func space() { while i < b.count, b[i] == 0x20 || b[i] == 0x0A || b[i] == 0x0D || b[i] == 0x09 { i += 1 } }
            func string() -> Bool {
                i += 1
                let start = i
                var escaped = false
                while i < b.count {
                    // Sixteen bytes at a time to the next quote, backslash or control character
                    // (`appconfig_json_string_stop`): an event's raw_payload is a 1.7 KB string,
                    // byte by byte a tenth of a status run.
                    i = b.jsonStringStop(from: i)
                    guard i < b.count else { break }
                    let c = b[i]
                    if c == 0x22 {
                        nodes.append(Node(kind: .string, start: Int32(start), end: Int32(i), next: Int32(nodes.count + 1), escaped: escaped))
                        i += 1
                        return true
                    }
                    if c < 0x20 { return false }
                    if c == 0x5C { escaped = true; i += 2; continue }
                    i += 1
                }
                return false
            }
            func value(_ depth: Int) -> Bool {
                guard i < b.count, depth < maxDepth else { return false }
                let c = b[i]
                if c == 0x22 { return string() }
                if c == 0x7B || c == 0x5B {
                    let me = nodes.count
                    nodes.append(Node(kind: c == 0x7B ? .object : .array, start: Int32(i), end: 0, next: 0, escaped: false))
                    let close: UInt8 = c == 0x7B ? 0x7D : 0x5D
                    i += 1
                    space()
                    if i < b.count, b[i] == close {
                        i += 1
                    } else {
                        while true {
                            if c == 0x7B {
                                guard i < b.count, b[i] == 0x22, string() else { return false }
                                space()
                                guard i < b.count, b[i] == 0x3A else { return false }
                                i += 1
                                space()
                            }
                            guard value(depth + 1) else { return false }
                            space()
                            guard i < b.count else { return false }
                            if b[i] == 0x2C { i += 1; space(); continue }
                            guard b[i] == close else { return false }
                            i += 1
                            break
                        }
                    }
                    nodes[me].end = Int32(i)
                    nodes[me].next = Int32(nodes.count)
                    return true
                }
                let start = i
                if c == 0x74 || c == 0x66 || c == 0x6E {
                    for word in ["true", "false", "null"] where b.count - i >= word.utf8.count && word.utf8.elementsEqual(b[i..<(i + word.utf8.count)]) {
                        i += word.utf8.count
                        nodes.append(Node(kind: .literal, start: Int32(start), end: Int32(i), next: Int32(nodes.count + 1), escaped: false))
                        return true
                    }
                    return false
                }
                while i < b.count, (b[i] >= 0x30 && b[i] <= 0x39) || b[i] == 0x2D || b[i] == 0x2B || b[i] == 0x2E || b[i] == 0x65 || b[i] == 0x45 { i += 1 }
                guard i > start else { return false }
                nodes.append(Node(kind: .number, start: Int32(start), end: Int32(i), next: Int32(nodes.count + 1), escaped: false))
                return true
            }
            if b.count >= 3, b[0] == 0xEF, b[1] == 0xBB, b[2] == 0xBF { i = 3 }
            space()
            guard value(0) else { return false }
            space()
            self.nodes = nodes
            return i == b.count
        }
        if !ok { return nil }
    }

    /// The members of the object at `node`: (key node, value node) pairs.
    package func members(_ node: Int?) -> [(key: Int, value: Int)] {
        guard let node, node < nodes.count, nodes[node].kind == .object else { return [] }
        var out: [(Int, Int)] = []
        var k = node + 1
        let end = Int(nodes[node].next)
        while k < end {
            out.append((k, k + 1))
            k = Int(nodes[k + 1].next)
        }
        return out
    }

    /// The value of the object's member `key` (the first), if any.
    package func member(_ node: Int?, _ key: String) -> Int? {
        guard let node, node < nodes.count, nodes[node].kind == .object else { return nil }
        var k = node + 1
        let end = Int(nodes[node].next)
        var key = key
        return key.withUTF8 { utf8 in
            bytes.withUnsafeBufferPointer { b in
                while k < end {
                    let n = nodes[k]
                    if !n.escaped, Int(n.end - n.start) == utf8.count, utf8.isEmpty || memcmp(b.baseAddress! + Int(n.start), utf8.baseAddress!, utf8.count) == 0 { return k + 1 }
                    if n.escaped, string(k) == String(decoding: utf8, as: UTF8.self) { return k + 1 }
                    k = Int(nodes[k + 1].next)
                }
                return nil
            }
        }
    }

    /// The items of the array at `node`.
    package func items(_ node: Int?) -> [Int] {
        guard let node, node < nodes.count, nodes[node].kind == .array else { return [] }
        var out: [Int] = []
        var k = node + 1
        while k < Int(nodes[node].next) {
            out.append(k)
            k = Int(nodes[k].next)
        }
        return out
    }

    /// The string at `node`, unescaped; nil for another kind.
    package func string(_ node: Int?) -> String? {
        guard let node, node < nodes.count, nodes[node].kind == .string else { return nil }
        let n = nodes[node]
        let raw = bytes[(base + Int(n.start))..<(base + Int(n.end))]
        guard n.escaped else { return String(decoding: raw, as: UTF8.self) }
        return Self.unescape(raw)
    }

    /// The string at `node` as UTF-8: its bytes in the text when it has no escape (no copy).
    package func utf8(_ node: Int?) -> ArraySlice<UInt8>? {
        guard let node, node < nodes.count, nodes[node].kind == .string else { return nil }
        let n = nodes[node]
        return n.escaped ? string(node).map { Array($0.utf8)[...] } : bytes[(base + Int(n.start))..<(base + Int(n.end))]
    }

    package func bool(_ node: Int?) -> Bool? {
        guard let node, node < nodes.count, nodes[node].kind == .literal else { return nil }
        switch bytes[base + Int(nodes[node].start)] {
        case 0x74: return true
        case 0x66: return false
        default: return nil
        }
    }

    package func integer(_ node: Int?) -> Int? {
        guard let node, node < nodes.count, nodes[node].kind == .number else { return nil }
        return Int(String(decoding: bytes[(base + Int(nodes[node].start))..<(base + Int(nodes[node].end))], as: UTF8.self))
    }

    package func isObject(_ node: Int?) -> Bool { node.map { $0 < nodes.count && nodes[$0].kind == .object } ?? false }
    package func isArray(_ node: Int?) -> Bool { node.map { $0 < nodes.count && nodes[$0].kind == .array } ?? false }

    /// A string's escapes undone (`\\uXXXX` with surrogate pairs); the scan checked its quotes only.
    static func unescape(_ raw: ArraySlice<UInt8>) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(raw.count)
        var i = raw.startIndex
        func hex4(_ at: Int) -> UInt32? {
            guard at + 4 <= raw.endIndex else { return nil }
            var v: UInt32 = 0
            for k in at..<(at + 4) {
                let c = raw[k]
                let d: UInt32
                switch c {
                case 0x30...0x39: d = UInt32(c - 0x30)
                case 0x41...0x46: d = UInt32(c - 0x41 + 10)
                case 0x61...0x66: d = UInt32(c - 0x61 + 10)
                default: return nil
                }
                v = v << 4 | d
            }
            return v
        }
        while i < raw.endIndex {
            let c = raw[i]
            guard c == 0x5C, i + 1 < raw.endIndex else {
                out.append(c)
                i += 1
                continue
            }
            let e = raw[i + 1]
            i += 2
            switch e {
            case 0x6E: out.append(0x0A)
            case 0x74: out.append(0x09)
            case 0x72: out.append(0x0D)
            case 0x62: out.append(0x08)
            case 0x66: out.append(0x0C)
            case 0x75:
                guard var scalar = hex4(i) else { out.append(e); continue }
                i += 4
                if (0xD800..<0xDC00).contains(scalar), i + 6 <= raw.endIndex, raw[i] == 0x5C, raw[i + 1] == 0x75, let low = hex4(i + 2), (0xDC00..<0xE000).contains(low) {
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    i += 6
                }
                out += String(Character(Unicode.Scalar(scalar) ?? "\u{FFFD}")).utf8
            default: out.append(e)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
