/// XML text escaping as plistlib writes it: `&amp; &lt; &gt;`. A carriage return is written `&#13;`
/// (plistlib turns it into a line feed, which would change the value: a documented difference).
/// The one table behind the compiler's constants and the renderer's resolved strings.
package enum XMLEscaping {
    /// The escape of a byte, or nil when the byte is copied as it is.
    @inlinable @inline(__always)
    package static func escape(_ byte: UInt8) -> StaticString? {
        switch byte {
        case 0x26: "&amp;"
        case 0x3C: "&lt;"
        case 0x3E: "&gt;"
        case 0x0D: "&#13;"
        default: nil
        }
    }

    /// Appends `text` escaped to `out` through `append`, one byte or one escape at a time.
    @inlinable
    package static func forEachEscaped(_ text: ByteView, _ append: (ByteView) -> Void) {
        var runStart = 0
        for i in 0..<text.count {
            guard let e = escape(text[i]) else { continue }
            if i > runStart { append(text[view: runStart..<i]) }
            append(ByteView(e))
            runStart = i + 1
        }
        if text.count > runStart { append(text[view: runStart..<text.count]) }
    }

    /// Whether XML 1.0 can carry this text: no C0 control other than tab, LF and CR, no U+FFFE or U+FFFF.
    package static func isCarriable(_ utf8: ByteView) -> Bool {
        var i = 0
        while i < utf8.count {
            let b = utf8[i]
            if b < 0x20 && b != 0x09 && b != 0x0A && b != 0x0D { return false }
            if b == 0xEF && i + 2 < utf8.count && utf8[i + 1] == 0xBF && (utf8[i + 2] == 0xBE || utf8[i + 2] == 0xBF) { return false }
            i += 1
        }
        return true
    }
}
