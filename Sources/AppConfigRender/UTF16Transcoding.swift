import AppConfigCore

extension ByteWriter {
    /// Transcodes validated UTF-8 to UTF-16 big-endian (surrogate pairs above U+FFFF), as binary
    /// plists store strings that are not ASCII.
    @inline(__always)
    mutating func writeUTF16BigEndian(_ bytes: ByteView) {
        var i = 0
        let n = bytes.count
        @inline(__always) func put(_ unit: UInt32, _ w: inout ByteWriter) {
            w.write(UInt8(truncatingIfNeeded: unit >> 8))
            w.write(UInt8(truncatingIfNeeded: unit))
        }
        while i < n {
            let b = UInt32(bytes[i])
            if b < 0x80 {
                put(b, &self); i += 1
            } else if b < 0xE0 {
                put((b & 0x1F) << 6 | UInt32(bytes[i + 1] & 0x3F), &self); i += 2
            } else if b < 0xF0 {
                put((b & 0x0F) << 12 | UInt32(bytes[i + 1] & 0x3F) << 6 | UInt32(bytes[i + 2] & 0x3F), &self); i += 3
            } else {
                let scalar = (b & 0x07) << 18 | UInt32(bytes[i + 1] & 0x3F) << 12 | UInt32(bytes[i + 2] & 0x3F) << 6 | UInt32(bytes[i + 3] & 0x3F)
                let v = scalar - 0x10000
                put(0xD800 | (v >> 10), &self); put(0xDC00 | (v & 0x3FF), &self); i += 4
            }
        }
    }
}
