import AppConfigBytes
import TestSupport
import Testing

/// The readers' growing tables: what an array would hold, through growth, reserve and rollback.
@Suite("growing buffer")
struct GrowingBufferTests {
    @Test("seeded appends of runs and single values, across growth, against an array")
    func appendsLikeAnArray() {
        var random = SplitMix64(seed: 21)
        let buffer = GrowingBuffer<UInt8>(capacity: 1)
        var oracle: [UInt8] = []
        for _ in 0..<5000 {
            if Bool.random(using: &random) {
                let run = (0..<Int.random(in: 0...40, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
                let start = run.withUnsafeBufferPointer { buffer.append($0) }
                #expect(start == oracle.count)
                oracle += run
            } else {
                let byte = UInt8.random(in: 0...255, using: &random)
                buffer.append(byte)
                oracle.append(byte)
            }
        }
        #expect(buffer.count == oracle.count)
        #expect(Array(buffer.buffer) == oracle)
        #expect(buffer[oracle.count - 1] == oracle.last)
    }

    @Test("reserve makes room without moving what is written; truncate drops the end; wider elements")
    func reserveAndTruncate() {
        let buffer = GrowingBuffer<UInt32>(capacity: 2)
        [1, 2, 3].withUnsafeBufferPointer { _ = buffer.append($0) }
        buffer.reserve(100)
        #expect(buffer.capacity >= 103)
        let base = buffer.base
        for v in 4...100 as ClosedRange<UInt32> { buffer.append(v) }
        #expect(buffer.base == base)  // the room was there
        #expect(Array(buffer.buffer) == Array(1...100))
        buffer.truncate(to: 10)
        buffer.append(7)
        #expect(Array(buffer.buffer) == Array(1...10) + [7])
        let empty = UnsafeBufferPointer<UInt32>(start: nil, count: 0)
        #expect(buffer.append(empty) == 11)
        #expect(buffer.count == 11)
    }
}
