import AppConfigCore
import TestSupport
import Testing

/// The one byte writer: what each of its writes puts down, byte for byte.
@Suite("byte writer")
struct ByteWriterTests {
    @Test("big-endian integers of each width, hex digits", arguments: [
        (0x0102_0304_0506_0708, 8, [1, 2, 3, 4, 5, 6, 7, 8]), (0x0102, 2, [1, 2]), (0x1FF, 1, [0xFF]), (0, 6, [0, 0, 0, 0, 0, 0]),
    ] as [(UInt64, Int, [UInt8])])
    func bigEndian(value: UInt64, width: Int, bytes: [UInt8]) {
        #expect([UInt8](room: 8) { $0.write(bigEndian: value, width: width) } == bytes)
    }

    @Test("hex: the low digits, lowercase, most significant first", arguments: [
        (0xABC, 3, "abc"), (0xFFF, 2, "ff"), (0x0123_4567_89AB_CDEF, 16, "0123456789abcdef"), (7, 4, "0007"),
    ] as [(UInt64, Int, String)])
    func hex(value: UInt64, digits: Int, text: String) {
        #expect(String(decoding: [UInt8](room: 16) { $0.write(hex: value, digits: digits) }, as: UTF8.self) == text)
    }

    @Test("hex: sixteen digits (a word at a time) as String(radix: 16) writes them, for seeded values and the edges")
    func hexWords() {
        var random = SplitMix64(seed: 16)
        let values: [UInt64] = [0, 1, 9, 10, 15, 16, .max, 0x8000_0000_0000_0000, 0x0123_4567_89AB_CDEF, 0xFEDC_BA98_7654_3210]
            + (0..<2000).map { _ in random.next() }
        for v in values {
            let text = String(decoding: [UInt8](room: 16) { $0.write(hex: v, digits: 16) }, as: UTF8.self)
            let expected = String(repeating: "0", count: 16 - String(v, radix: 16).count) + String(v, radix: 16)
            guard text == expected else {
                Issue.record("\(v): \(text), expected \(expected)")
                return
            }
        }
    }

    @Test("text, bytes short and long, appended after what the array held")
    func pieces() {
        var out: [UInt8] = [0xEE]
        let long = [UInt8](0..<40)
        out.append(room: 60) { w in
            w.write("ab")
            w.write(0x09)
            long.withUnsafeBufferPointer { w.write($0) }
            [UInt8](repeating: 7, count: 3).withUnsafeBufferPointer { w.write($0) }
            #expect(w.count == 2 + 1 + 40 + 3)
        }
        #expect(out == [0xEE] + Array("ab".utf8) + [0x09] + long + [7, 7, 7])
    }

    @Test("a growing byte storage takes exactly the bytes a writer reserves, across growth")
    func storageAppendCount() {
        var storage = GrowingStorage<UInt8>(capacity: 4)
        defer { storage.free() }
        storage.append("xy")
        storage.append(count: 10) { w in for i in 0..<10 { w.write(UInt8(i)) } }
        #expect(Array(storage.buffer) == Array("xy".utf8) + (0..<10).map(UInt8.init))
        storage.truncate(to: 1)
        #expect(Array(storage.buffer) == Array("x".utf8))
    }
}
