import AppConfigCore
import Testing

/// The arena's tables: filled by doubling copies, copied from arrays at once.
@Suite("buffer arena")
struct BufferArenaTests {
    struct Pair: BitwiseCopyable, Equatable { var a: UInt64, b: UInt8 }

    @Test("a table of copies holds the value in every slot and nothing past its count",
          arguments: [0, 1, 2, 3, 7, 8, 9, 1000, 65_535, 65_536, 65_537, 200_003])
    func repeating(count: Int) {
        let arena = BufferArena()
        let bytes = arena.slots(count: count, repeating: UInt8(0xA5))
        let pairs = arena.slots(count: count, repeating: Pair(a: 0x0123_4567_89AB_CDEF, b: 7))
        #expect(bytes.count == count && pairs.count == count)
        #expect(bytes.view.allSatisfy { $0 == 0xA5 })
        #expect(pairs.view.allSatisfy { $0 == Pair(a: 0x0123_4567_89AB_CDEF, b: 7) })
    }

    @Test("a table copied from an array holds its values", arguments: [0, 1, 5, 4099])
    func copying(count: Int) {
        let arena = BufferArena()
        let values = (0..<count).map { UInt32($0 &* 2_654_435_761 & 0xFFFF_FFFF) }
        #expect(Array(arena.slots(copying: values).view) == values)
        #expect(Array(arena.view(values)) == values)
    }

    @Test("an array made in parts (each part its range) is the array made whole, in any number of parts",
          arguments: [0, 1, 2, 5, 65_537, 200_003])
    func inParts(count: Int) {
        // The first slot that differs, not the arrays: a failure prints an index, not 200k values.
        func firstDifference<T: Equatable>(_ a: [T], _ b: [T]) -> Int? { a.count != b.count ? -1 : a.indices.first { a[$0] != b[$0] } }
        for parts in 1...5 {
            let pairs = [Pair](repeating: Pair(a: 9, b: 1), count: count, parts: parts)
            #expect(firstDifference(pairs, [Pair](repeating: Pair(a: 9, b: 1), count: count)) == nil, "\(parts) parts")
            let squares = [UInt64](count: count, parts: parts, parallelFrom: 1) { range, slots in for i in range { slots[i] = UInt64(i * i) } }
            #expect(firstDifference(squares, (0..<count).map { UInt64($0 * $0) }) == nil, "\(parts) parts")
        }
    }
}
