/// Standard base64 (RFC 4648): LDIF values, webhook events' payloads, plists' `<data>`; white
/// space (space, CR, LF; a tab too where asked: a plist's `<data>` is indented with tabs) is
/// skipped. By hand: Foundation's decoder makes a `Data` per call,
/// and a status run at 1M events decodes two per event.
package enum Base64 {
    /// 0...63 for the alphabet, 64 for '=', 65 for white space, 255 for anything else.
    private static let table: [UInt8] = (0...255).map { c -> UInt8 in c == 0x09 ? 255 : tabbedTable[c] }
    /// The same with a tab as white space.
    private static let tabbedTable: [UInt8] = (0...255).map { c -> UInt8 in
        switch c {
        case 0x41...0x5A: UInt8(c - 0x41)
        case 0x61...0x7A: UInt8(c - 0x61 + 26)
        case 0x30...0x39: UInt8(c - 0x30 + 52)
        case 0x2B: 62
        case 0x2F: 63
        case 0x3D: 64
        case 0x20, 0x09, 0x0D, 0x0A: 65
        default: 255
        }
    }

    /// Decodes `text` into its own first bytes (the output is never longer than what it has read)
    /// and returns them; nil when it is not base64. Four letters of the alphabet at a time make
    /// three bytes at once (much of an export is base64 values, and byte by byte through the shared
    /// table they were costly); anything else (white space,
    /// padding, the end) goes byte by byte.
    package static func decodeInPlace(_ text: MutableByteView, skippingTabs: Bool = false) -> MutableByteView? {
        (skippingTabs ? tabbedTable : table).withView { table in decodeInPlace(text, table: table) }
    }

    @inline(__always)
    private static func decodeInPlace(_ text: MutableByteView, table: ByteView) -> MutableByteView? {
        var out = 0
        var buffer: UInt32 = 0
        var bits = 0
        var padding = 0
        var i = 0
        while i < text.count {
            // Whole bytes made so far: 32 letters at a time where the CPU can (AVX2).
            if bits == 0 && padding == 0 { text.decodeBase64Blocks(input: &i, output: &out) }
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

    /// `text` decoded into a new array; nil when it is not base64.
    package static func decode<C: Collection<UInt8>>(_ text: C, skippingTabs: Bool = false) -> [UInt8]? {
        var bytes = Array(text)
        guard let count = bytes.withWorkerSlots({ decodeInPlace($0, skippingTabs: skippingTabs)?.count }) else { return nil }
        bytes.removeSubrange(count...)
        return bytes
    }
}
