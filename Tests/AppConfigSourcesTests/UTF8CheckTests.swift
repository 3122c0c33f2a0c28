import AppConfigBytes
import Testing

/// `firstInvalidUTF8`, which every CSV field with a high byte, every LDIF value and DN goes through.
@Suite("UTF-8 check")
struct UTF8CheckTests {
    /// The check one scalar at a time, with no word steps: the oracle.
    static func byScalars(_ bytes: [UInt8]) -> Int? {
        bytes.withUnsafeBufferPointer { b in
            var i = 0
            while i < b.count {
                guard let (_, length) = decodeUTF8(b.baseAddress!, i, b.count) else { return i }
                i += length
            }
            return nil
        }
    }

    @Test("the first invalid byte's offset", arguments: [
        ("", nil), ("plain ASCII", nil), ("exactly8", nil), ("fifteen bytes!!", nil),
        ("Åsa Yılmaz", nil), ("日本語のテキスト", nil), ("emoji 😀 in the tail", nil),
        ("caf\u{E9} au lait", nil),
    ] as [(String, Int?)])
    func offsets(text: String, expected: Int?) {
        let bytes = Array(text.utf8)
        #expect(bytes.withUnsafeBufferPointer { firstInvalidUTF8($0) } == expected)
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
                    #expect(bytes.withUnsafeBufferPointer { firstInvalidUTF8($0) } == Self.byScalars(bytes), "\(bytes)")
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
            #expect(bytes.withUnsafeBufferPointer { firstInvalidUTF8($0) } == Self.byScalars(bytes), "\(bytes)")
        }
    }
}
