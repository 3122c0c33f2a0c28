/// Appends a JSON string literal (RFC 8259): quotes, `\\`, `\"`, and control characters escaped
/// (`\n`, `\r`, `\t`, else `\u00XX`); everything else as its UTF-8 bytes. One quoting for every
/// JSON the project writes: index lines, declarations, errors.jsonl, lint's JSON, imported values.
@inlinable
package func appendJSONString<S: Sequence<UInt8>>(_ bytes: S, to out: inout [UInt8]) {
    out.append(UInt8(ascii: "\""))
    if bytes.withContiguousStorageIfAvailable({ appendJSONStringContent(ByteView($0), to: &out) }) == nil {
        for b in bytes { appendJSONEscaped(b, to: &out) }
    }
    out.append(UInt8(ascii: "\""))
}

/// A string's content from contiguous bytes: the runs that need no escape appended whole (every
/// index line quotes its device key; an append per byte showed in profiles).
@usableFromInline
func appendJSONStringContent(_ bytes: ByteView, to out: inout [UInt8]) {
    appendEscapingRuns(bytes, to: &out, where: { b, _ in b < 0x20 || b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") },
                       escape: appendJSONEscaped)
}

/// One byte as JSON writes it in a string: itself, or its escape.
@usableFromInline
func appendJSONEscaped(_ b: UInt8, to out: inout [UInt8]) {
    func two(_ c: UInt8) {
        out.append(UInt8(ascii: "\\"))
        out.append(c)
    }
    switch b {
    case UInt8(ascii: "\""): two(UInt8(ascii: "\""))
    case UInt8(ascii: "\\"): two(UInt8(ascii: "\\"))
    case 0x0A: two(UInt8(ascii: "n"))
    case 0x0D: two(UInt8(ascii: "r"))
    case 0x09: two(UInt8(ascii: "t"))
    case 0..<0x20:
        func hex(_ d: UInt8) -> UInt8 { d < 10 ? 0x30 + d : 0x57 + d }  // 0-9, a-f
        two(UInt8(ascii: "u"))
        out += [UInt8(ascii: "0"), UInt8(ascii: "0"), hex(b >> 4), hex(b & 0xF)]
    default: out.append(b)
    }
}
