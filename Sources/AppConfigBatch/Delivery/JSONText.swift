/// Appends JSON text straight into a byte buffer, for the declarations and index lines written per
/// device: canonical (the caller writes keys in sorted order), no Foundation objects per device.
enum JSONText {
    /// A JSON string: quotes, `\\`, `\"`, and control characters escaped; everything else as UTF-8.
    @inline(__always)
    static func appendString<S: Sequence<UInt8>>(_ bytes: S, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for b in bytes {
            switch b {
            case UInt8(ascii: "\""): out += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): out += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case 0x0A: out += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case 0x0D: out += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case 0x09: out += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case 0..<0x20:
                out += Array("\\u00".utf8)
                out += [hexDigits[Int(b >> 4)], hexDigits[Int(b & 0xF)]]
            default: out.append(b)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    static func appendString(_ s: String, to out: inout [UInt8]) { appendString(s.utf8, to: &out) }

    /// Raw JSON punctuation and keys: `{"Identifier":`.
    @inline(__always)
    static func append(_ text: StaticString, to out: inout [UInt8]) {
        out.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)
}
