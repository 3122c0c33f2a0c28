/// Appends a JSON string literal (RFC 8259): quotes, `\\`, `\"`, and control characters escaped
/// (`\n`, `\r`, `\t`, else `\u00XX`); everything else as its UTF-8 bytes. One quoting for every
/// JSON the project writes: index lines, declarations, errors.jsonl, lint's JSON, imported values.
@inlinable
public func appendJSONString<S: Sequence<UInt8>>(_ bytes: S, to out: inout [UInt8]) {
    out.append(UInt8(ascii: "\""))
    if bytes.withContiguousStorageIfAvailable({ appendJSONStringContent($0, to: &out) }) == nil {
        for b in bytes { appendJSONEscaped(b, to: &out) }
    }
    out.append(UInt8(ascii: "\""))
}

/// A string's content from contiguous bytes: the runs that need no escape appended whole (every
/// index line quotes its device key; an append per byte showed in profiles).
@usableFromInline
func appendJSONStringContent(_ bytes: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
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

/// Reads a JSON string literal starting at `start` (its opening quote) and appends its content's
/// UTF-8 bytes to `out` (every escape of RFC 8259, surrogate pairs joined). Returns the index
/// after the closing quote, or nil when there is no well-formed string there. The inverse of
/// `appendJSONString`, for the device keys of the index lines a merge orders.
public func readJSONString(_ bytes: UnsafeBufferPointer<UInt8>, at start: Int, into out: inout [UInt8]) -> Int? {
    guard start < bytes.count, bytes[start] == UInt8(ascii: "\"") else { return nil }
    func hex4(_ i: Int) -> UInt32? {
        guard i + 4 <= bytes.count else { return nil }
        var v: UInt32 = 0
        for b in bytes[i..<(i + 4)] {
            switch b {
            case 0x30...0x39: v = v << 4 | UInt32(b - 0x30)
            case 0x41...0x46: v = v << 4 | UInt32(b - 0x37)
            case 0x61...0x66: v = v << 4 | UInt32(b - 0x57)
            default: return nil
            }
        }
        return v
    }
    var i = start + 1
    while i < bytes.count {
        let b = bytes[i]
        if b == UInt8(ascii: "\"") { return i + 1 }
        if b < 0x20 { return nil }
        guard b == UInt8(ascii: "\\") else { out.append(b); i += 1; continue }
        guard i + 1 < bytes.count else { return nil }
        let e = bytes[i + 1]
        i += 2
        switch e {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
        case UInt8(ascii: "n"): out.append(0x0A)
        case UInt8(ascii: "r"): out.append(0x0D)
        case UInt8(ascii: "t"): out.append(0x09)
        case UInt8(ascii: "b"): out.append(0x08)
        case UInt8(ascii: "f"): out.append(0x0C)
        case UInt8(ascii: "u"):
            guard var scalar = hex4(i) else { return nil }
            i += 4
            if (0xD800..<0xDC00).contains(scalar) {
                guard i + 6 <= bytes.count, bytes[i] == UInt8(ascii: "\\"), bytes[i + 1] == UInt8(ascii: "u"),
                      let low = hex4(i + 2), (0xDC00..<0xE000).contains(low) else { return nil }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                i += 6
            }
            guard let s = Unicode.Scalar(scalar) else { return nil }
            UTF8.encode(s) { out.append($0) }
        default: return nil
        }
    }
    return nil
}
