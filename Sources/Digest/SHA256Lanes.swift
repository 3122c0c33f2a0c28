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
    /// `digests(of:ends:)` of borrowed bytes, the ends in an array (the callers' pending files).
    package static func digests(of bytes: ByteView, ends: [Int], inLanes: Bool = hasLanes, _ body: (Int, SHA256Digest) -> Void) {
        bytes.withUnsafeBytes { b in ends.withUnsafeBufferPointer { e in digests(of: b, ends: e, inLanes: inLanes, body) } }
    }

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

/// Messages gathered to be digested together, sixteen at a time in lanes where the CPU has them
/// (`SHA256.digests(of:ends:)`), for work whose many short messages would each cost a pass of
/// OpenSSL's (a DDM device's names and tokens: fourteen blocks, one at a time). The buffers are
/// kept from use to use; nothing secret goes in (they are not cleared).
package struct SHA256Messages {
    private var bytes: [UInt8] = []
    private var ends: [Int] = []

    package init() {}

    /// Adds the message `write` appends.
    @inline(__always)
    package mutating func add(_ write: (inout [UInt8]) -> Void) {
        write(&bytes)
        ends.append(bytes.count)
    }

    /// The digest of each message, in the order they were added; the messages are emptied.
    package mutating func digests(inLanes: Bool = SHA256.hasLanes) -> [SHA256Digest] {
        var out: [SHA256Digest] = []
        out.reserveCapacity(ends.count)
        bytes.withUnsafeBytes { b in
            var first = 0
            while first < ends.count {
                let last = min(first + SHA256.lanes, ends.count)
                let base = first == 0 ? 0 : ends[first - 1]
                withUnsafeTemporaryAllocation(of: Int.self, capacity: last - first) { group in
                    for k in first..<last { group[k - first] = ends[k] - base }
                    SHA256.digests(of: UnsafeRawBufferPointer(rebasing: b[base..<ends[last - 1]]), ends: UnsafeBufferPointer(group),
                                   inLanes: inLanes) { _, d in out.append(d) }
                }
                first = last
            }
        }
        bytes.removeAll(keepingCapacity: true)
        ends.removeAll(keepingCapacity: true)
        return out
    }
}
