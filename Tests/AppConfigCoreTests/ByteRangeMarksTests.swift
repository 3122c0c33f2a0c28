import AppConfigCore
import TestSupport
import Testing

/// `ByteRangeMarks`: eight bytes' range tests at once, against a comparison per byte.
@Suite("byte ranges eight bytes at a time")
struct ByteRangeMarksTests {
    @Test("every ASCII byte in every lane, for ranges with and without case folding, empty ones too", arguments: [
        (UInt8(0x30), UInt8(0x39), false), (0x61, 0x7A, true), (0x61, 0x66, true), (0x2D, 0x2D, false),
        (0x20, 0x20, false), (0x00, 0x7F, false), (0x00, 0x00, false), (0x7F, 0x7F, false), (0x01, 0x00, false), (0x80, 0x7F, false),
    ] as [(UInt8, UInt8, Bool)])
    func everyByteInEveryLane(low: UInt8, high: UInt8, folding: Bool) {
        let range = ByteRangeMarks(low, high, foldingCase: folding)
        func expected(_ b: UInt8) -> Bool { let x = folding ? b | 0x20 : b; return x >= low && x <= high }
        // A byte in one lane, the others a fixed filler that is in or out of the range.
        for filler in [UInt8(0x00), 0x41, 0x7F, 0x30] {
            for b in UInt8(0)..<0x80 {
                #expect(range.contains(b) == expected(b))
                for lane in 0..<8 {
                    var word: UInt64 = 0
                    for k in 0..<8 { word |= UInt64(k == lane ? b : filler) << (8 * k) }
                    var want: UInt64 = 0
                    for k in 0..<8 where expected(k == lane ? b : filler) { want |= 0x80 << (8 * k) }
                    if range.marks(word) != want { Issue.record("\(low)...\(high) byte \(b) lane \(lane) filler \(filler)") }
                }
            }
        }
    }

    @Test("10,000 seeded words of ASCII bytes: each byte's mark its own comparison")
    func seededWords() {
        var random = SplitMix64(seed: 0xB17E)
        let ranges = [(UInt8(0x30), UInt8(0x39), false), (0x61, 0x7A, true), (0x20, 0x2F, false)]
        for _ in 0..<10_000 {
            let word = random.next() & 0x7F7F_7F7F_7F7F_7F7F
            for (low, high, folding) in ranges {
                var want: UInt64 = 0
                for k in 0..<8 {
                    let b = UInt8(truncatingIfNeeded: word >> (8 * k))
                    let x = folding ? b | 0x20 : b
                    if x >= low && x <= high { want |= 0x80 << (8 * k) }
                }
                #expect(ByteRangeMarks(low, high, foldingCase: folding).marks(word) == want)
            }
        }
    }
}
