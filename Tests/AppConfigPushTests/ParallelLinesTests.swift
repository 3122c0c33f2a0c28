import AppConfigCore
@testable import AppConfigPush
import Synchronization
import Testing

/// `ParallelLines.map` makes each result in its place: every result in order, the first error
/// in order thrown, and what was made before an error undone (each object made is freed once).
@Suite("Push: work over numbered items on every core", .serialized)
struct ParallelLinesTests {
    struct Failure: Error, Equatable { let at: Int }

    /// Counts the objects alive: made in `init`, gone in `deinit`.
    final class Counted: Sendable {
        static let alive = Atomic<Int>(0)
        let value: Int
        init(_ value: Int) {
            self.value = value
            Self.alive.add(1, ordering: .relaxed)
        }
        deinit { Self.alive.subtract(1, ordering: .relaxed) }
    }

    @Test("results in order, at every count around a chunk's size; the first error in order thrown, nothing made left alive",
          arguments: [0, 1, 2047, 2048, 2049, 10_000])
    func mapInOrder(count: Int) throws {
        let results = ParallelLines.map(count) { i in Counted(i) }
        #expect(results.map(\.value) == Array(0..<count))
        #expect(Counted.alive.load(ordering: .relaxed) >= count)
        guard count > 2049 else { return }
        let before = Counted.alive.load(ordering: .relaxed)
        let error = #expect(throws: Failure.self) {
            _ = try ParallelLines.map(count) { i throws(Failure) -> Counted in
                if i == 2050 || i == count - 1 { throw Failure(at: i) }
                return Counted(i)
            }
        }
        #expect(error == Failure(at: 2050))
        #expect(Counted.alive.load(ordering: .relaxed) == before)
    }
}
