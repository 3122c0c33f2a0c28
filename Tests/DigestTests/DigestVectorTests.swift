import Digest
import Foundation
import TestSupport
import Testing

/// The digests the engine names and compares files by, against the commands an admin would check
/// them with: `sha256sum` (coreutils) and `xxhsum -H2` (xxHash's own), on the same bytes.
@Suite("Digests against coreutils and xxHash")
struct DigestVectorTests {
    /// Byte strings whose lengths cross the block edges of both hashes.
    static let messages: [[UInt8]] = [[], Array("abc".utf8), Array(repeating: 0x61, count: 55), Array(repeating: 0x61, count: 64),
                                      (0..<240).map { UInt8($0) }, (0..<1_000_003).map { UInt8(truncatingIfNeeded: $0 &* 7919) }]

    /// What a command prints for each message, written to a file of its own.
    static func command(_ tool: String, _ arguments: [String]) throws -> [String] {
        try withTemporaryDirectory { dir in
            let files = try messages.enumerated().map { i, m in
                let path = dir.path("m\(i)")
                try Data(m).write(to: URL(fileURLWithPath: path))
                return path
            }
            let r = try runProcess(try #require(which(tool)), arguments + files)
            #expect(r.status == 0, "\(r.stderr)")
            return r.stdout.split(separator: "\n").map { String($0.prefix { $0 != " " }) }
        }
    }

    @Test("SHA-256, one message at a time and sixteen at once: sha256sum's", .enabled(if: which("sha256sum") != nil))
    func sha256() throws {
        let expected = try Self.command("sha256sum", [])
        #expect(expected.count == Self.messages.count)
        #expect(Self.messages.map { SHA256Digest(of: $0).hex } == expected)
        var bytes: [UInt8] = [], ends: [Int] = []
        for m in Self.messages { bytes += m; ends.append(bytes.count) }
        var lanes = [String](repeating: "", count: Self.messages.count)
        bytes.withUnsafeBytes { b in ends.withUnsafeBufferPointer { e in SHA256.digests(of: b, ends: e, inLanes: SHA256.hasLanes) { i, d in lanes[i] = d.hex } } }
        #expect(lanes == expected)
    }

    @Test("XXH3-128 (the inputs' fingerprints), whole and fed in pieces: xxhsum -H2's", .enabled(if: which("xxhsum") != nil))
    func xxh3() throws {
        let expected = try Self.command("xxhsum", ["-H2"])
        #expect(expected.count == Self.messages.count)
        for (m, hex) in zip(Self.messages, expected) {
            let whole = XXH3Hasher()
            m.withUnsafeBytes { whole.update($0) }
            #expect(whole.finish() == hex)
            // In uneven pieces, as a file is read in windows.
            let pieces = XXH3Hasher()
            var at = 0, size = 1
            while at < m.count {
                let n = min(size, m.count - at)
                m[at..<(at + n)].withUnsafeBytes { pieces.update($0) }
                at += n
                size = size * 3 + 1
            }
            #expect(pieces.finish() == hex)
        }
    }
}
