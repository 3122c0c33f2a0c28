/// Appends a JSON string literal (RFC 8259): quotes, `\\`, `\"`, and control characters escaped
/// (`\n`, `\r`, `\t`, else `\u00XX`); everything else as its UTF-8 bytes. One quoting for every
/// JSON the project writes: index lines, declarations, errors.jsonl, lint's JSON, imported values.
@inlinable
public func appendJSONString<S: Sequence<UInt8>>(_ bytes: S, to out: inout [UInt8]) {
    out.append(UInt8(ascii: "\""))
    for b in bytes {
        switch b {
        case UInt8(ascii: "\""): out += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
        case UInt8(ascii: "\\"): out += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
        case 0x0A: out += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
        case 0x0D: out += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
        case 0x09: out += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
        case 0..<0x20:
            func hex(_ d: UInt8) -> UInt8 { d < 10 ? 0x30 + d : 0x57 + d }  // 0-9, a-f
            out += [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex(b >> 4), hex(b & 0xF)]
        default: out.append(b)
        }
    }
    out.append(UInt8(ascii: "\""))
}
