import AppConfigCore
import CXXHash

/// XXH3-128 by Debian's libxxhash, streamed: the fingerprint of an input file. Not a cryptographic
/// hash, and not used as one: it tells last night's export from tonight's, where a collision could
/// at worst keep last night's outputs for an input someone built to collide (who can write the
/// export can write anything). SHA-256 took most of a night's CPU on a machine without SHA
/// instructions; this runs at memory speed.
public final class XXH3Hasher {
    private let state: OpaquePointer

    public init() {
        // The state is 64-byte aligned and large (576 bytes): the library allocates it.
        state = XXH3_createState()
        XXH3_128bits_reset(state)
    }

    deinit { XXH3_freeState(state) }

    public func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress else { return }
        XXH3_128bits_update(state, base, bytes.count)
    }

    package func update(_ bytes: ByteView) { bytes.withUnsafeBytes { update($0) } }

    /// The digest of `bytes` (`finish`'s text).
    package static func hex(of bytes: ByteView) -> String {
        let hasher = XXH3Hasher()
        hasher.update(bytes)
        return hasher.finish()
    }

    /// The digest as xxHash writes it (`xxhsum -H2`): 32 hex digits of the canonical big-endian bytes.
    public func finish() -> String {
        var canonical = XXH128_canonical_t()
        XXH128_canonicalFromHash(&canonical, XXH3_128bits_digest(state))
        return withUnsafeBytes(of: canonical.digest) { bytes in
            var out: [UInt8] = []
            out.reserveCapacity(32)
            for b in bytes {
                out.append(hexDigit(b >> 4))
                out.append(hexDigit(b & 0xF))
            }
            return String(decoding: out, as: UTF8.self)
        }
    }

    private func hexDigit(_ v: UInt8) -> UInt8 { v < 10 ? 0x30 + v : 0x57 + v }
}
