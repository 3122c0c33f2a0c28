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
public struct SHA256Digest: Hashable, Sendable, BitwiseCopyable {
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

    package init(of bytes: ByteView) { self = bytes.withUnsafeBytes { SHA256Digest(of: $0) } }

    package init(of bytes: [UInt8]) { self = bytes.withUnsafeBytes { SHA256Digest(of: $0) } }

    /// The digest's first 16 bytes as one number: a key for sets of many digests.
    package var firstHalf: UInt128 { UInt128(a) | UInt128(b) << 64 }

    /// The digest's 32 bytes, in order.
    package var bytes: [UInt8] { withUnsafeBytes(of: self) { Array($0) } }

    /// A digest from the 32 bytes a digest's memory holds (`withUnsafeBytes(of:)` wrote them).
    package init(storedBytes v: ByteView) {
        precondition(v.count == 32, "a digest is 32 bytes")
        (a, b, c, d) = (v.word(at: 0), v.word(at: 8), v.word(at: 16), v.word(at: 24))
    }

    /// Parses 64 hex digits (either case) from a buffer, eight at a time: every device line of a
    /// manifest has one, and a digit at a time it was the largest part of reading one. Nil for
    /// anything else.
    @inlinable
    package init?(hex: ByteView) {
        guard hex.count == 64 else { return nil }
        @inline(__always) func word(_ k: Int) -> UInt64? {
            guard let low = SHA256Digest.hexBytes(hex.word(at: 16 * k)), let high = SHA256Digest.hexBytes(hex.word(at: 16 * k + 8)) else { return nil }
            // Byte order as the digest's bytes: byte j of the word is digest byte 8k + j.
            return UInt64(low) | UInt64(high) << 32
        }
        guard let w0 = word(0), let w1 = word(1), let w2 = word(2), let w3 = word(3) else { return nil }
        (a, b, c, d) = (w0, w1, w2, w3)
    }

    /// Eight hex digits (loaded little-endian: the first digit in the low byte) as four bytes, the
    /// first pair's in the low byte; nil unless each is 0-9, A-F or a-f. SWAR: the range tests
    /// mark a byte in range with 0x80 (all bytes below 0x80: no carry crosses a byte); a digit's
    /// value is its low four bits, plus 9 for a letter (bit 6).
    @inlinable @inline(__always)
    package static func hexBytes(_ w: UInt64) -> UInt32? {
        let ones: UInt64 = 0x0101_0101_0101_0101, high: UInt64 = 0x8080_8080_8080_8080
        @inline(__always) func within(_ x: UInt64, _ low: UInt64, _ top: UInt64) -> UInt64 {
            let atLeast: UInt64 = x &+ (0x80 - low) &* ones
            let above: UInt64 = x &+ (0x7F - top) &* ones
            return atLeast & ~above
        }
        let folded: UInt64 = w | 0x2020_2020_2020_2020
        let digits: UInt64 = within(w, 0x30, 0x39)
        let letters: UInt64 = within(folded, 0x61, 0x66)
        guard w & high == 0, (digits | letters) & high == high else { return nil }
        let nibbleMask: UInt64 = 0x0F0F_0F0F_0F0F_0F0F
        let isLetter: UInt64 = (w >> 6) & ones
        let v: UInt64 = (w & nibbleMask) &+ isLetter &* 9
        // Each pair (high digit, low digit) into a 16-bit lane's low byte, then the lanes' bytes together.
        let laneMask: UInt64 = 0x000F_000F_000F_000F
        let highDigits: UInt64 = (v & laneMask) << 4
        let lowDigits: UInt64 = (v >> 8) & laneMask
        var u: UInt64 = highDigits | lowDigits
        u = (u | u >> 8) & 0x0000_FFFF_0000_FFFF
        u = (u | u >> 16) & 0xFFFF_FFFF
        return UInt32(truncatingIfNeeded: u)
    }

    /// Appends the first `digits` (default all 64) lowercase hex digits to `out`, made on the stack
    /// and appended at once (an append per digit showed in profiles: two files of a digest per device).
    /// Inlinable: called across modules, a DDM device's dozen digests each went through the writer's
    /// every case of `digits`.
    @inlinable @inline(__always)
    package func appendHex(digits: Int = 64, to out: inout [UInt8]) {
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

        package func update(_ bytes: ByteView) { bytes.withUnsafeBytes { update($0) } }

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
    @inlinable @inline(__always)
    package mutating func write(hex digest: SHA256Digest, digits: Int = 64) {
        // Each word holds 8 of the digest's bytes in memory order: big-endian reads them in order.
        write(word: digest.a, from: 0, of: digits)
        write(word: digest.b, from: 16, of: digits)
        write(word: digest.c, from: 32, of: digits)
        write(word: digest.d, from: 48, of: digits)
    }

    @inlinable @inline(__always)
    mutating func write(word: UInt64, from first: Int, of digits: Int) {
        let n = min(16, digits - first)
        if n > 0 { write(hex: word.bigEndian >> UInt64(4 * (16 - n)), digits: n) }
    }
}
