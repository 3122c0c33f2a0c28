import AppConfigCore
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

    @Test("extend counts room written from every core after what was there; appends go after it",
          arguments: [(0, 0), (1, 1), (3, 1000), (100, 100_003)])
    func extendFilledInParallel(before: Int, added: Int) {
        let buffer = GrowingBuffer<UInt32>(capacity: 1)
        for v in 0..<UInt32(before) { buffer.append(v) }
        let into = buffer.extend(by: added)
        forEachRange(added) { _, r in for i in r { into[i] = UInt32(before + i) } }
        buffer.append(UInt32.max)
        #expect(buffer.count == before + added + 1)
        #expect(Array(buffer.buffer) == Array(0..<UInt32(before + added)) + [UInt32.max])
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

/// Files of a line per item made in rounds on every core: the bytes of one pass, in order.
@Suite("bytes in rounds")
struct BytesInRoundsTests {
    @Test("rounds and parts of every size give one pass's bytes, in order, in pieces no larger than a round", arguments: [
        (0, 7, 2), (1, 7, 2), (5, 7, 3), (7, 7, 2), (100, 7, 2), (100, 1, 3), (100, 100, 1), (1000, 64, 4),
    ])
    func onePass(_ count: Int, _ round: Int, _ parts: Int) {
        func line(_ i: Int, into out: inout [UInt8]) { out += Array("line \(i)\n".utf8) }
        var expected: [UInt8] = []
        for i in 0..<count { line(i, into: &expected) }
        var got: [UInt8] = []
        var largest = 0
        bytesInRounds(count: count, round: round, parts: parts, make: { range, out in
            for i in range { line(i, into: &out) }
        }, emit: { (piece: ByteView) in
            got.append(piece)
            largest = max(largest, piece.count)
        })
        #expect(got == expected)
        #expect(largest <= round * Array("line \(count)\n".utf8).count)
    }

    @Test("the first error emit throws ends it: nothing more is emitted, nor made past the round made beside")
    func emitError() {
        struct Stop: Error {}
        var rounds = 0, emittedAfterStop = false, stopped = false
        #expect(throws: Stop.self) {
            try bytesInRounds(count: 100, round: 10, parts: 2, make: { range, out in
                if range.lowerBound % 10 == 0 { rounds += 1 }
                for i in range { out.append(UInt8(i / 10)) }  // each item's byte: its round
            }, emit: { (piece: ByteView) throws(Stop) in
                if stopped { emittedAfterStop = true }
                // The first piece of round 1 throws.
                if piece[0] == 1 {
                    stopped = true
                    throw Stop()
                }
            })
        }
        #expect(stopped && !emittedAfterStop)
        // Round 1 was emitted (its first piece threw) while round 2 was made; none after.
        #expect(rounds == 3)
    }

    @Test("pages given back read as zeros, only pages wholly inside the range; every other byte and the count kept",
          arguments: [(100, 5 * 4096 + 7), (0, 40_000), (10, 4000), (4096, 4096)])
    func discardedPages(from: Int, to: Int) {
        let buffer = GrowingBuffer<UInt8>(capacity: 1)
        let count = 48_000
        for i in 0..<count { buffer.append(UInt8(i % 251 + 1)) }  // never zero
        buffer.discardPages(from..<to)
        #expect(buffer.count == count)
        let bytes = Array(buffer.view)
        for i in 0..<count where !(from..<to).contains(i) && bytes[i] != UInt8(i % 251 + 1) {
            Issue.record("byte \(i) outside the range changed")
            return
        }
        // Inside: the original bytes, or zeros in one run of whole pages.
        let zeros = (from..<to).filter { bytes[$0] == 0 }
        #expect((from..<to).allSatisfy { bytes[$0] == 0 || bytes[$0] == UInt8($0 % 251 + 1) })
        #expect(zeros.count % 4096 == 0)
        if let first = zeros.first { #expect(zeros.last! - first + 1 == zeros.count) }
        #expect(zeros.count >= (to - from >= 2 * 4096 ? 4096 : 0))
    }
}
