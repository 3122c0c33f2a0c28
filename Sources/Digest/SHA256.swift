import AppConfigCore
import CCrypto

/// SHA-256 by OpenSSL's libcrypto (its SHA-NI / AVX2 code): one call per buffer, the digest on the
/// stack. Not written here: hashes belong to a well-kept library.
public enum SHA256 {
    public static let byteCount = 32

    /// The digest of `bytes`, written into `out` (32 bytes). The context is on the stack: no
    /// allocation and no lock per digest (OpenSSL 3's one-shot `SHA256()` allocated an EVP context
    /// and fetched the algorithm under a lock each time).
    @inline(__always)
    package static func digest(_ bytes: UnsafeRawBufferPointer, into out: UnsafeMutablePointer<UInt8>) {
        var context = SHA256_CTX()
        SHA256_Init(&context)
        if let base = bytes.baseAddress { SHA256_Update(&context, base, bytes.count) }
        SHA256_Final(out, &context)
    }

    /// The digest of `bytes` as 64 lowercase hex digits.
    package static func hex(_ bytes: UnsafeRawBufferPointer) -> String { SHA256Digest(of: bytes).hex }

    /// Appends the first `digits` hex digits of the digest of `bytes` to `out` (no String made).
    public static func appendHex(of bytes: [UInt8], digits: Int = 64, to out: inout [UInt8]) {
        bytes.withUnsafeBytes { SHA256Digest(of: $0).appendHex(digits: digits, to: &out) }
    }

}

/// A SHA-256 digest as a value: 32 bytes, compared and stored without allocation.
public struct SHA256Digest: Hashable, Sendable {
    public var a: UInt64, b: UInt64, c: UInt64, d: UInt64

    public init(a: UInt64, b: UInt64, c: UInt64, d: UInt64) {
        (self.a, self.b, self.c, self.d) = (a, b, c, d)
    }

    /// The digest of `bytes`.
    package init(of bytes: UnsafeRawBufferPointer) {
        var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        withUnsafeMutableBytes(of: &words) { SHA256.digest(bytes, into: $0.baseAddress!.assumingMemoryBound(to: UInt8.self)) }
        (a, b, c, d) = words
    }

    package init(of bytes: [UInt8]) { self = bytes.withUnsafeBytes { SHA256Digest(of: $0) } }

    /// Parses 64 hex digits from a buffer (the manifest's hot path: inlined, no generic dispatch).
    @inlinable
    package init?(hex: UnsafeBufferPointer<UInt8>) {
        guard hex.count == 64 else { return nil }
        @inline(__always) func word(_ k: Int) -> UInt64? {
            var word: UInt64 = 0
            // Byte order as the digest's bytes: byte j of the word is digest byte 8k + j.
            for j in 0..<8 {
                guard let hi = SHA256Digest.nibble(hex[16 * k + 2 * j]), let lo = SHA256Digest.nibble(hex[16 * k + 2 * j + 1]) else { return nil }
                word |= UInt64(hi << 4 | lo) << (8 * UInt64(j))
            }
            return word
        }
        guard let w0 = word(0), let w1 = word(1), let w2 = word(2), let w3 = word(3) else { return nil }
        (a, b, c, d) = (w0, w1, w2, w3)
    }

    @inlinable @inline(__always)
    static func nibble(_ ch: UInt8) -> UInt8? {
        switch ch {
        case 0x30...0x39: ch - 0x30
        case 0x61...0x66: ch - 0x57
        case 0x41...0x46: ch - 0x37
        default: nil
        }
    }

    /// Appends the first `digits` (default all 64) lowercase hex digits to `out`, made on the stack
    /// and appended at once (an append per digit showed in profiles: two files of a digest per device).
    @inline(__always)
    public func appendHex(digits: Int = 64, to out: inout [UInt8]) {
        out.append(room: 64) { $0.write(hex: self, digits: digits) }
    }

    /// 64 lowercase hex digits.
    public var hex: String {
        var out: [UInt8] = []
        out.reserveCapacity(64)
        appendHex(to: &out)
        return String(decoding: out, as: UTF8.self)
    }
}

extension SHA256 {
    /// SHA-256 over data that comes in parts (a file read in blocks), through OpenSSL's EVP API.
    public final class Hasher {
        private let context: OpaquePointer

        public init() {
            context = EVP_MD_CTX_new()
            EVP_DigestInit_ex(context, EVP_sha256(), nil)
        }

        package func update(_ bytes: UnsafeRawBufferPointer) {
            EVP_DigestUpdate(context, bytes.baseAddress, bytes.count)
        }

        public func finish() -> SHA256Digest {
            var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
            withUnsafeMutableBytes(of: &words) { _ = EVP_DigestFinal_ex(context, $0.baseAddress!.assumingMemoryBound(to: UInt8.self), nil) }
            return SHA256Digest(a: words.0, b: words.1, c: words.2, d: words.3)
        }

        deinit { EVP_MD_CTX_free(context) }
    }
}

extension ByteWriter {
    /// The digest's first `digits` (default all 64) lowercase hex digits: the one hex writer of digests.
    @inline(__always)
    package mutating func write(hex digest: SHA256Digest, digits: Int = 64) {
        // Each word holds 8 of the digest's bytes in memory order: big-endian reads them in order.
        write(word: digest.a, from: 0, of: digits)
        write(word: digest.b, from: 16, of: digits)
        write(word: digest.c, from: 32, of: digits)
        write(word: digest.d, from: 48, of: digits)
    }

    @inline(__always)
    private mutating func write(word: UInt64, from first: Int, of digits: Int) {
        let n = min(16, digits - first)
        if n > 0 { write(hex: word.bigEndian >> UInt64(4 * (16 - n)), digits: n) }
    }
}
