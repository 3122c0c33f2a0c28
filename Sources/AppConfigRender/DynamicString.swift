import AppConfigCore

/// A resolved dynamic string of the current device: where its bytes are and what one scan found,
/// everything either emitter needs, so that the VM does not depend on the output format.
struct DynamicString {
    var start: Int32 = 0
    var count: Int32 = 0
    var utf16Count: Int32 = 0
    var isASCII = true
    /// Holds `& < > \r`: the XML emitter escapes it; otherwise one copy.
    var needsEscape = false
    /// Holds a character XML 1.0 cannot carry (a C0 control, U+FFFE, U+FFFF): an XML device error.
    var hasXMLForbidden = false
    /// The first slot its template reads (for error messages), or -1.
    var firstSlot: Int32 = -1

    init(start: Int32 = 0) { self.start = start }

    @inline(__always)
    func bytes(in text: GrowingStorage<UInt8>) -> ByteView { text.view(start: Int(start), count: Int(count)) }

    /// What a byte needs beyond being copied: 0 plain ASCII; 1 XML escape (`& < > \r`); 2 a control
    /// XML 1.0 forbids; 3 the lead or continuation byte of a multi-byte character.
    private static let byteClass: [UInt8] = (0...255).map { b -> UInt8 in
        switch b {
        case 0x26, 0x3C, 0x3E, 0x0D: 1
        case 0x09, 0x0A: 0
        case 0..<0x20: 2
        case 0x80...: 3
        default: 0
        }
    }

    /// Eight bytes that are all printable ASCII other than `&`, `<` and `>` (SWAR: "has a zero
    /// byte" tests of the word against each; the high-bit test first, as the others assume it).
    @inline(__always)
    static func isPlainASCII(_ w: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        @inline(__always) func hasZero(_ v: UInt64) -> Bool { (v &- ones) & ~v & highs != 0 }
        guard w & highs == 0 else { return false }
        let below20 = (w &- 0x2020_2020_2020_2020) & ~w & highs != 0
        return !below20 && !hasZero(w ^ 0x2626_2626_2626_2626) && !hasZero(w ^ 0x3C3C_3C3C_3C3C_3C3C) && !hasZero(w ^ 0x3E3E_3E3E_3E3E_3E3E)
    }

    /// One pass over a finished string: valid UTF-8, its UTF-16 length, ASCII or not, what XML
    /// needs. False when not valid UTF-8.
    @inline(__always)
    static func scan(_ p: ByteView, into s: inout DynamicString) -> Bool {
        let n = p.count
        guard n > 0 else {
            s.count = 0; s.utf16Count = 0
            return true
        }
        var i = 0
        var utf16 = 0
        var ascii = true, escape = false, forbidden = false
        let valid = byteClass.withView { classes -> Bool in
            while i < n {
                // Eight plain ASCII bytes at a time (no high bit, no control, no `& < >`): most of
                // a device's text (the byte loop was a large share of an XML render).
                if i + 8 <= n {
                    let w = p.word(at: i)
                    if Self.isPlainASCII(w) {
                        utf16 += 8
                        i += 8
                        continue
                    }
                }
                let b = p[i]
                switch classes[Int(b)] {
                case 0: utf16 += 1; i += 1; continue
                case 1: escape = true; utf16 += 1; i += 1; continue
                case 2: forbidden = true; utf16 += 1; i += 1; continue
                default: break
                }
                // A multi-byte character: decode and validate it.
                ascii = false
                guard let (scalar, length) = decodeUTF8(p, i) else { return false }
                if scalar == 0xFFFE || scalar == 0xFFFF { forbidden = true }
                utf16 += length == 4 ? 2 : 1
                i += length
            }
            return true
        }
        guard valid else { return false }
        s.count = Int32(n)
        s.utf16Count = Int32(utf16)
        s.isASCII = ascii
        s.needsEscape = escape
        s.hasXMLForbidden = forbidden
        return true
    }
}
