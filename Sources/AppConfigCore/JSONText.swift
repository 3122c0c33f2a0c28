/// Appends JSON text straight into a byte buffer, for the declarations and index lines written per
/// device: canonical (the caller writes keys in sorted order), no Foundation objects per device.
package enum JSONText {
    /// A JSON string (`appendJSONString`).
    @inline(__always)
    package static func appendString<S: Sequence<UInt8>>(_ bytes: S, to out: inout [UInt8]) { appendJSONString(bytes, to: &out) }

    package static func appendString(_ s: String, to out: inout [UInt8]) { appendString(s.utf8, to: &out) }

    /// Raw JSON punctuation and keys: `{"Identifier":`.
    @inline(__always)
    package static func append(_ text: StaticString, to out: inout [UInt8]) {
        text.withUTF8Buffer { out.append(contentsOf: $0) }
    }
}
