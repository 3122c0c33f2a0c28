@testable import AppConfigCore
import Foundation
import Synchronization
import Testing

/// A job's thread limit is its own: bound for its run, seen by the threads its passes fan out to,
/// and not by another job running beside it in the same process.
@Suite("Parallelism")
struct ParallelismTests {
    @Test("the limit holds inside the job, in the threads it fans out to, and not outside it")
    func boundPerJob() throws {
        let machine = Parallelism.machine
        #expect(Parallelism.threads == machine)
        let seen = Mutex<Set<Int>>([])
        let beside: Int = Parallelism.limited(to: 1) {
            Parallelism.concurrentPerform(iterations: 8) { _ in
                let n = Parallelism.threads
                seen.withLock { _ = $0.insert(n) }
            }
            return (try? WorkBeside { () throws(Problem) -> Int in Parallelism.threads }.value()) ?? -1
        }
        #expect(seen.withLock { $0 } == [1])
        #expect(beside == 1)
        #expect(Parallelism.threads == machine)
    }

    @Test("two jobs at once, each with its own limit")
    func twoJobs() {
        let results = Mutex<[Int: Set<Int>]>([:])
        let group = DispatchGroup()
        for limit in [1, 3] {
            group.enter()
            Thread.detachNewThread {
                Parallelism.limited(to: limit) {
                    for _ in 0..<50 {
                        Parallelism.concurrentPerform(iterations: 4) { _ in
                            let n = Parallelism.threads
                            results.withLock { _ = $0[limit, default: []].insert(n) }
                        }
                    }
                }
                group.leave()
            }
        }
        group.wait()
        #expect(results.withLock { $0 } == [1: [1], 3: [3]])
    }
}
