@testable import Digest
import TestSupport
import Testing

/// SHA-256 of sixteen messages at once (the hand-written AVX-512 lanes): every digest must be
/// OpenSSL's, whatever the lengths that share a pass.
@Suite("SHA-256 in lanes")
struct SHA256LanesTests {
    /// Messages laid one after another, as `SHA256.digests(of:ends:)` takes them.
    private static func digests(_ messages: [[UInt8]], inLanes: Bool) -> [String] {
        var bytes: [UInt8] = [], ends: [Int] = []
        for m in messages {
            bytes += m
            ends.append(bytes.count)
        }
        var out: [String] = []
        bytes.withUnsafeBytes { b in ends.withUnsafeBufferPointer { e in SHA256.digests(of: b, ends: e, inLanes: inLanes) { i, d in
            #expect(i == out.count)
            out.append(d.hex)
        } } }
        return out
    }

    @Test("FIPS 180-4's examples, each lane holding one, beside messages of other lengths", .enabled(if: SHA256.hasLanes),
          arguments: [
              ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
              ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
              ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
              (String(repeating: "a", count: 1000), "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3"),
          ])
    func knownAnswers(message: String, digest: String) {
        for lane in 0..<SHA256.lanes {
            var messages = (0..<SHA256.lanes).map { [UInt8](repeating: UInt8($0), count: 37 * $0) }
            messages[lane] = Array(message.utf8)
            #expect(Self.digests(messages, inLanes: true)[lane] == digest)
        }
    }

    @Test("every length from 0 to 300 (the padding's edges at 55, 56, 63, 64 and 119), sixteen a pass", .enabled(if: SHA256.hasLanes))
    func everyLength() {
        let source = (0..<300).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 7) }
        let messages = (0...300).map { Array(source.prefix($0)) }
        for start in stride(from: 0, to: messages.count, by: SHA256.lanes) {
            let group = Array(messages[start..<min(start + SHA256.lanes, messages.count)])
            #expect(Self.digests(group, inLanes: true) == group.map { SHA256Digest(of: $0).hex })
        }
    }

    @Test("2,000 seeded messages of 0-3,000 bytes in passes of 1-16: OpenSSL's digests, in lanes or not")
    func seededPasses() {
        var random = SplitMix64(seed: 0x5EED_256)
        var made = 0
        while made < 2_000 {
            let count = Int.random(in: 1...SHA256.lanes, using: &random)
            // Eight random bytes a draw (a draw per byte made this test take minutes in a debug build).
            let messages = (0..<count).map { _ in
                let n = Int.random(in: 0...3_000, using: &random)
                return (0..<(n + 7) / 8).flatMap { _ in withUnsafeBytes(of: random.next()) { Array($0) } }.prefix(n).map { $0 }
            }
            let expected = messages.map { SHA256Digest(of: $0).hex }
            #expect(Self.digests(messages, inLanes: true) == expected)
            #expect(Self.digests(messages, inLanes: false) == expected)
            made += count
        }
    }
}
