import AppConfigCore
import Testing

/// The arena's tables: filled by doubling copies, copied from arrays at once.
@Suite("buffer arena")
struct BufferArenaTests {
    struct Pair: BitwiseCopyable, Equatable { var a: UInt64, b: UInt8 }

    @Test("a table of copies holds the value in every slot and nothing past its count",
          arguments: [0, 1, 2, 3, 7, 8, 9, 1000, 65_537])
    func repeating(count: Int) {
        let arena = BufferArena()
        let bytes = arena.slots(count: count, repeating: UInt8(0xA5))
        let pairs = arena.slots(count: count, repeating: Pair(a: 0x0123_4567_89AB_CDEF, b: 7))
        #expect(bytes.count == count && pairs.count == count)
        #expect(Array(bytes.view) == [UInt8](repeating: 0xA5, count: count))
        #expect(Array(pairs.view) == [Pair](repeating: Pair(a: 0x0123_4567_89AB_CDEF, b: 7), count: count))
    }

    @Test("a table copied from an array holds its values", arguments: [0, 1, 5, 4099])
    func copying(count: Int) {
        let arena = BufferArena()
        let values = (0..<count).map { UInt32($0 &* 2_654_435_761 & 0xFFFF_FFFF) }
        #expect(Array(arena.slots(copying: values).view) == values)
        #expect(Array(arena.view(values)) == values)
    }
}
