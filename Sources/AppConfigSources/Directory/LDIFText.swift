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
