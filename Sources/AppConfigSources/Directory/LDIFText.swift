import AppConfigCore
import Dispatch
import Foundation

/// Bytes equal to a lowercase ASCII word, ignoring ASCII case.
@inline(__always)
func equalsLower(_ bytes: ByteView, _ word: StaticString) -> Bool { equalsLowerBytes(bytes, ByteView(word)) }

/// Bytes equal to lowercase bytes, ignoring ASCII case.
@inline(__always)
func equalsLowerBytes(_ bytes: ByteView, _ lower: ByteView) -> Bool {
    guard bytes.count == lower.count else { return false }
    for i in 0..<bytes.count where asciiLower(bytes[i]) != lower[i] { return false }
    return true
}

/// 0x80 in the bytes of `x` that are zero, and maybe in bytes above the first such: a borrow
/// only marks bytes above a zero byte, so the lowest mark is exact (the first zero byte).
@inline(__always)
func zeroByteMarks(_ x: UInt64) -> UInt64 { (x &- 0x0101_0101_0101_0101) & ~x & 0x8080_8080_8080_8080 }

/// LDIF's lines with folding undone (a line starting with one space continues the previous one),
/// CRLF or LF, each with the number of its first physical line. A folded line is joined in place:
/// each continuation is copied down over the line break and the fold's space before it.
struct LogicalLines {
    let bytes: MutableByteView
    var position = 0
    /// Physical lines read so far.
    var line = 0

    init(bytes: MutableByteView) { self.bytes = bytes }

    /// The next logical line, its number, and whether all its bytes are ASCII (then so is any
    /// part of it: no UTF-8 check needed).
    mutating func next() -> (MutableByteView, Int, ascii: Bool)? {
        guard position < bytes.count else { return nil }
        var (first, ascii) = physical()
        let number = line
        var end = first.upperBound
        while position < bytes.count && bytes[position] == 0x20 {
            position += 1  // the fold's space
            let (more, moreASCII) = physical()
            if more.lowerBound != end { bytes.move(from: more.lowerBound, to: end, count: more.count) }
            end += more.count
            ascii = ascii && moreASCII
        }
        return (bytes[slots: first.lowerBound..<end], number, ascii)
    }

    /// The physical line at `position`, and whether its bytes are all ASCII. Eight bytes at a
    /// time, inline: lines are short (an export's average is under 30 bytes), and memchr's call
    /// per line, with a separate pass for the UTF-8 check, was a fifth of the reader's time.
    private mutating func physical() -> (Range<Int>, Bool) {
        line += 1
        let start = position
        let view = bytes.view
        let n = view.count
        var i = start
        var high: UInt64 = 0
        var newline = n
        while i + 8 <= n {
            let w = view.word(at: i)
            let found = zeroByteMarks(w ^ 0x0A0A_0A0A_0A0A_0A0A)
            if found != 0 {
                let k = found.trailingZeroBitCount / 8
                // The bytes before the newline only.
                high |= k == 0 ? 0 : w & (UInt64.max >> (64 - 8 * k))
                newline = i + k
                break
            }
            high |= w
            i += 8
        }
        if newline == n {
            while i < n {
                let b = view[i]
                if b == 0x0A { newline = i; break }
                high |= UInt64(b)
                i += 1
            }
        }
        var stop = newline
        if stop > start && view[stop - 1] == 0x0D { stop -= 1 }
        position = newline < n ? newline + 1 : n
        return (start..<stop, high & 0x8080_8080_8080_8080 == 0)
    }
}

/// Standard base64 (RFC 4648), as LDIF writes it; white space is skipped.
enum Base64 {
    /// 0...63 for the alphabet, 64 for '=', 65 for white space, 255 for anything else.
    private static let table: [UInt8] = (0...255).map { c -> UInt8 in
        switch c {
        case 0x41...0x5A: UInt8(c - 0x41)
        case 0x61...0x7A: UInt8(c - 0x61 + 26)
        case 0x30...0x39: UInt8(c - 0x30 + 52)
        case 0x2B: 62
        case 0x2F: 63
        case 0x3D: 64
        case 0x20, 0x0D, 0x0A: 65
        default: 255
        }
    }

    /// Decodes `text` into its own first bytes (the output is never longer than what it has read)
    /// and returns them; nil when it is not base64. Four letters of the alphabet at a time make
    /// three bytes at once (much of an export is base64 values, and byte by byte through the shared
    /// table they were costly); anything else (white space,
    /// padding, the end) goes byte by byte.
    static func decodeInPlace(_ text: MutableByteView) -> MutableByteView? {
        table.withView { table in decodeInPlace(text, table: table) }
    }

    @inline(__always)
    private static func decodeInPlace(_ text: MutableByteView, table: ByteView) -> MutableByteView? {
        var out = 0
        var buffer: UInt32 = 0
        var bits = 0
        var padding = 0
        var i = 0
        while i < text.count {
            // Wrapping arithmetic and masking shifts: indices stay within the text, shifts under 32.
            let pending = UInt32(truncatingIfNeeded: bits)
            while padding == 0 && i &+ 4 <= text.count {
                let a = table[Int(text[i])], b = table[Int(text[i &+ 1])], c = table[Int(text[i &+ 2])], d = table[Int(text[i &+ 3])]
                guard (a | b | c | d) < 64 else { break }
                // `bits` (0, 2 or 4) pending bits, then 24 more: three whole bytes out, the same bits pending.
                buffer = buffer &<< 24 | UInt32(a) &<< 18 | UInt32(b) &<< 12 | UInt32(c) &<< 6 | UInt32(d)
                text[out] = UInt8(truncatingIfNeeded: buffer &>> (pending &+ 16))
                text[out &+ 1] = UInt8(truncatingIfNeeded: buffer &>> (pending &+ 8))
                text[out &+ 2] = UInt8(truncatingIfNeeded: buffer &>> pending)
                out &+= 3
                i &+= 4
            }
            guard i < text.count else { break }
            let v = table[Int(text[i])]
            i += 1
            if v < 64 {
                if padding > 0 { return nil }
                buffer = buffer << 6 | UInt32(v)
                bits += 6
                if bits >= 8 {
                    bits -= 8
                    text[out] = UInt8(truncatingIfNeeded: buffer >> UInt32(bits))
                    out += 1
                }
            } else if v == 64 {
                padding += 1
            } else if v == 255 {
                return nil
            }
        }
        guard padding <= 2, bits < 6 else { return nil }
        return text[slots: 0..<out]
    }
}
