import CCrypto

/// SHA-256 by OpenSSL's libcrypto (its SHA-NI / AVX2 code): one call per buffer, the digest on the
/// stack. Not written here: hashes belong to a well-kept library.
public enum SHA256 {
    public static let byteCount = 32

    /// The digest of `bytes`, written into `out` (32 bytes).
    @inline(__always)
    public static func digest(_ bytes: UnsafeRawBufferPointer, into out: UnsafeMutablePointer<UInt8>) {
        _ = CCrypto.SHA256(bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count, out)
    }

    /// The digest of `bytes` as 64 lowercase hex digits.
    public static func hex(_ bytes: UnsafeRawBufferPointer) -> String {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: byteCount) { d in
            digest(bytes, into: d.baseAddress!)
            return hexString(UnsafeBufferPointer(d))
        }
    }

    public static func hex(_ bytes: [UInt8]) -> String { bytes.withUnsafeBytes { hex($0) } }

    /// Appends the first `digits` hex digits of the digest of `bytes` to `out` (no String made).
    @inline(__always)
    public static func appendHex(of bytes: UnsafeRawBufferPointer, digits: Int = 64, to out: inout [UInt8]) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: byteCount) { d in
            digest(bytes, into: d.baseAddress!)
            for i in 0..<digits {
                let b = d[i / 2]
                out.append(Self.digits[Int(i % 2 == 0 ? b >> 4 : b & 0xF)])
            }
        }
    }

    public static func appendHex(of bytes: [UInt8], digits: Int = 64, to out: inout [UInt8]) {
        bytes.withUnsafeBytes { appendHex(of: $0, digits: digits, to: &out) }
    }

    private static let digits = Array("0123456789abcdef".utf8)

    public static func hexString(_ d: UnsafeBufferPointer<UInt8>) -> String {
        var out = [UInt8](repeating: 0, count: 2 * d.count)
        for (i, b) in d.enumerated() {
            out[2 * i] = digits[Int(b >> 4)]
            out[2 * i + 1] = digits[Int(b & 0xF)]
        }
        return String(decoding: out, as: UTF8.self)
    }
}
