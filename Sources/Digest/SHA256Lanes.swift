import AppConfigCore
import CSHA256Lanes

extension SHA256 {
    /// The most messages `digests(of:ends:)` hashes in one call.
    public static let lanes = Int(APPCONFIG_SHA256_LANES)

    /// Whether this CPU hashes messages in lanes (AVX-512); where not, `digests(of:ends:)` hashes
    /// them one at a time with OpenSSL, to the same digests.
    public static let hasLanes = appconfig_sha256_lanes_available() != 0

    /// The SHA-256 of each of up to `lanes` messages laid one after another in `bytes`, message i
    /// ending at `ends[i]`: `body(i, digest)` for each, in order. Sixteen messages in one pass of
    /// the lanes cost about what one costs OpenSSL without SHA instructions (4.6x its rate: 1.4
    /// against 0.3 GB/s on this project's VM). `inLanes: false` hashes them one at a time (tests).
    package static func digests(of bytes: UnsafeRawBufferPointer, ends: UnsafeBufferPointer<Int>, inLanes: Bool = hasLanes,
                                _ body: (Int, SHA256Digest) -> Void) {
        precondition(ends.count <= lanes && (ends.last ?? 0) <= bytes.count, "at most sixteen messages, within the bytes")
        guard inLanes, ends.count > 1 else {
            var start = 0
            for (i, end) in ends.enumerated() {
                body(i, SHA256Digest(of: UnsafeRawBufferPointer(rebasing: bytes[start..<end])))
                start = end
            }
            return
        }
        let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self)
        withUnsafeTemporaryAllocation(of: UnsafePointer<UInt8>?.self, capacity: lanes) { messages in
            withUnsafeTemporaryAllocation(of: Int.self, capacity: lanes) { lengths in
                withUnsafeTemporaryAllocation(byteCount: 32 * lanes, alignment: 8) { out in
                    var start = 0
                    for (i, end) in ends.enumerated() {
                        messages[i] = base.map { UnsafePointer($0 + start) }
                        lengths[i] = end - start
                        start = end
                    }
                    appconfig_sha256_lanes(messages.baseAddress, lengths.baseAddress, Int32(ends.count),
                                           out.baseAddress!.assumingMemoryBound(to: UInt8.self))
                    for i in ends.indices { body(i, out.loadUnaligned(fromByteOffset: 32 * i, as: SHA256Digest.self)) }
                }
            }
        }
    }
}
