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

    /// The digest as xxHash writes it (`xxhsum -H2`): 32 lowercase hex digits, the high half first.
    public func finish() -> String {
        let hash = XXH3_128bits_digest(state)
        var out: [UInt8] = []
        out.append(room: 32) { w in
            w.write(hex: hash.high64, digits: 16)
            w.write(hex: hash.low64, digits: 16)
        }
        return String(decoding: out, as: UTF8.self)
    }
}
