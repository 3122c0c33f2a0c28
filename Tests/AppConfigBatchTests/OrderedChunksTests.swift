@testable import AppConfigBatch
import AppConfigCore
import AppConfigSpec
import Dispatch
import Foundation
import Synchronization
import Testing

/// The writer thread behind the tar and DDM sinks: chunks finished in any order are handled in
/// chunk order, a write error reaches the workers and the caller, and a failed worker releases
/// the others.
@Suite("Ordered chunks: the writer thread")
struct OrderedChunksTests {
    @Test("chunks finished out of order by many workers are handled in order, each once")
    func inOrder() throws {
        let handled = Mutex<[UInt8]>([])
        let order = OrderedChunks(()) { _, chunk throws(Problem) in handled.withLock { $0 += chunk } }
        let next = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            var chunk: [UInt8] = []
            while true {
                let i = next.add(1, ordering: .relaxed).oldValue
                guard i < 200 else { break }
                chunk.append(UInt8(i))
                if i % 7 == 0 { usleep(200) }  // finish out of order
                try? order.finish(i, &chunk)
                #expect(chunk.isEmpty)
            }
        }
        try order.close()
        #expect(handled.withLock { $0 } == (0..<200).map(UInt8.init))
    }

    @Test("a write error is thrown to the next worker that finishes a chunk, and by close")
    func writeError() throws {
        let failure = Problem(.outputWrite, "disk full")
        let order = OrderedChunks(()) { _, chunk throws(Problem) in if chunk == [3] { throw failure } }
        var chunk: [UInt8] = []
        for i in 0..<4 {
            chunk = [UInt8(i)]
            try order.finish(i, &chunk)
        }
        #expect(throws: failure) { try order.close() }
        chunk = [9]
        #expect(throws: failure) { try order.finish(4, &chunk) }
    }

    @Test("a worker waiting for room returns when another abandons the run")
    func abandonReleasesWaiters() throws {
        // Chunk 0 never comes: chunks 1...3 fill the room (limit 2) and the third waits.
        let order = OrderedChunks((), limit: 2) { _, _ throws(Problem) in }
        let released = Atomic<Bool>(false)
        let group = DispatchGroup()
        // A thread of its own: on the global queue, with the suite's other tests holding every
        // worker of the pool, the block could start only after the wait below had timed out.
        group.enter()
        Thread.detachNewThread {
            var chunk: [UInt8] = []
            for i in 1...3 {
                chunk = [UInt8(i)]
                do throws(Problem) { try order.finish(i, &chunk) } catch { break }
            }
            released.store(true, ordering: .relaxed)
            group.leave()
        }
        usleep(100_000)
        let waiting = !released.load(ordering: .relaxed)
        #expect(waiting)
        order.abandon()
        #expect(group.wait(timeout: .now() + 5) == .success)
        let returned = released.load(ordering: .relaxed)
        #expect(returned)
    }

    @Test("once closed, nothing holds the chunks or their buffers: the writer thread does not keep them alive")
    func releasedAfterClose() throws {
        weak var released: OrderedChunks<Void>?
        do {
            let order = OrderedChunks(()) { _, _ throws(Problem) in }
            released = order
            var chunk: [UInt8] = Array(repeating: 1, count: 1 << 20)
            for i in 0..<4 { try order.finish(i, &chunk) }
            try order.close()
        }
        // The thread lets go of it when its loop has returned, just after `close` does.
        for _ in 0..<200 where released != nil { usleep(10_000) }
        #expect(released == nil, "an OrderedChunks and its spare buffers outlived their run (valgrind found 1 MB per run)")
    }
}
