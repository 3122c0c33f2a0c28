/// The scalar that starts at `p[i]` and its length in bytes, or nil when the bytes there are not
/// valid UTF-8 (a bad lead or continuation byte, an overlong form, a surrogate, beyond U+10FFFF, or
/// cut short by the view's end). The one decoder behind the XML reader, the render scan and the
/// CSV check.
@inlinable @inline(__always)
package func decodeUTF8(_ p: ByteView, _ i: Int) -> (scalar: UInt32, length: Int)? {
    let n = p.count
    let b = p[i]
    if b < 0x80 { return (UInt32(b), 1) }
    let length: Int, minimum: UInt32
    var scalar: UInt32
    switch b {
    case 0xC2...0xDF: length = 2; minimum = 0x80; scalar = UInt32(b & 0x1F)
    case 0xE0...0xEF: length = 3; minimum = 0x800; scalar = UInt32(b & 0x0F)
    case 0xF0...0xF4: length = 4; minimum = 0x10000; scalar = UInt32(b & 0x07)
    default: return nil
    }
    if i + length > n { return nil }
    for k in 1..<length {
        let c = p[i + k]
        if c & 0xC0 != 0x80 { return nil }
        scalar = scalar << 6 | UInt32(c & 0x3F)
    }
    if scalar < minimum || scalar > 0x10FFFF || (scalar >= 0xD800 && scalar <= 0xDFFF) { return nil }
    return (scalar, length)
}

/// The offset of the first byte that does not start a valid UTF-8 sequence, or nil. ASCII runs
/// are skipped eight bytes at a time, straight to the first byte of a word that is not ASCII
/// (byte by byte up to it, a name like "Åsa Yılmaz" loaded a word per byte), and an ASCII tail
/// as the last eight bytes (a short value's tail went byte by byte).
package func firstInvalidUTF8(_ p: ByteView) -> Int? {
    let n = p.count
    var i = 0
    while i < n {
        if i + 8 <= n {
            let high = p.word(at: i) & 0x8080_8080_8080_8080
            if high == 0 { i += 8; continue }
            i += high.trailingZeroBitCount / 8  // little-endian: the lowest set bit is the first such byte
        } else if n >= 8 && p.word(at: n - 8) & 0x8080_8080_8080_8080 == 0 {
            return nil  // the last word, over bytes already seen, is ASCII: so is the rest (a value's tail)
        }
        if p[i] < 0x80 { i += 1; continue }
        // Two bytes, C2-DF then a continuation byte, are always valid (U+0080-U+07FF): Latin,
        // Greek and Cyrillic names, most of an inventory's non-ASCII text.
        if p[i] >= 0xC2 && p[i] <= 0xDF && i + 1 < n && p[i + 1] & 0xC0 == 0x80 { i += 2; continue }
        guard let (_, length) = decodeUTF8(p, i) else { return i }
        i += length
    }
    return nil
}

