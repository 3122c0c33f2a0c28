import AppConfigCore
import TestSupport
import Testing

/// `firstInvalidUTF8`, which every CSV field with a high byte, every LDIF value and DN goes through.
@Suite("UTF-8 check")
struct UTF8CheckTests {
    /// The check one scalar at a time, with no word steps: the oracle.
    static func byScalars(_ bytes: [UInt8]) -> Int? {
        bytes.withView { b in
            var i = 0
            while i < b.count {
                guard let (_, length) = decodeUTF8(b, i) else { return i }
                i += length
            }
            return nil
        }
    }

    @Test("the first invalid byte's offset", arguments: [
        (Array("".utf8), nil), (Array("plain ASCII".utf8), nil), (Array("exactly8".utf8), nil), (Array("fifteen bytes!!".utf8), nil),
        (Array("Åsa Yılmaz".utf8), nil), (Array("日本語のテキスト".utf8), nil), (Array("emoji 😀 in the tail".utf8), nil),
        (Array("ab".utf8) + [0x80], 2),                               // a lone continuation byte, in the tail of a short value
        (Array("nine byte".utf8) + [0xFF] + Array("tail".utf8), 9),   // after a whole ASCII word, before an ASCII tail
        (Array("sixteen bytes!!!".utf8) + [0xC0, 0xAF], 16),          // an overlong '/', last
        (Array("Åsa".utf8) + [0xC3], 4),                              // a lead byte cut short by the end
        (Array("x".utf8) + [0xED, 0xA0, 0x80] + Array("more ASCII text".utf8), 1),  // a surrogate
    ] as [([UInt8], Int?)])
    func offsets(bytes: [UInt8], expected: Int?) {
        #expect(bytes.withView { firstInvalidUTF8($0) } == expected)
    }

    /// Bad bytes at every place of values of 0 to 40 bytes (in the words, in the tail, the last):
    /// a lone continuation byte, a lead byte cut short, an overlong form, a surrogate, 0xFF; and
    /// 20,000 seeded mixes of ASCII, valid sequences and bad bytes: the offset the oracle gives.
    @Test func agreesWithTheScalarLoop() {
        let bad: [[UInt8]] = [[0x80], [0xC3], [0xC0, 0xAF], [0xED, 0xA0, 0x80], [0xFF], [0xE2, 0x82]]
        for length in 0...40 {
            for position in 0...length {
                for b in bad {
                    var bytes = [UInt8](repeating: UInt8(ascii: "a"), count: length)
                    bytes.insert(contentsOf: b, at: position)
                    #expect(bytes.withView { firstInvalidUTF8($0) } == Self.byScalars(bytes), "\(bytes)")
                }
            }
        }
        var random = SplitMix64(seed: 8)
        let pieces: [[UInt8]] = [Array("a".utf8), Array("Zz0".utf8), Array("é".utf8), Array("ı".utf8), Array("語".utf8), Array("😀".utf8)] + bad
        for _ in 0..<20_000 {
            var bytes: [UInt8] = []
            for _ in 0..<Int.random(in: 0...16, using: &random) {
                let piece = Int.random(in: 0..<20, using: &random) == 0 ? bad.randomElement(using: &random)! : pieces[Int.random(in: 0..<6, using: &random)]
                bytes += piece
            }
            #expect(bytes.withView { firstInvalidUTF8($0) } == Self.byScalars(bytes), "\(bytes)")
        }
    }
}
