import AppConfigCore

/// Work over numbered items on every core the job allows (`Parallelism`), results in order; the
/// first error (in order) thrown.
package enum ParallelLines {
    package static func map<T: Sendable, E: Error>(_ count: Int, chunk: Int = 2048, _ body: @Sendable (Int) throws(E) -> T) throws(E) -> [T] {
        let chunks = (count + chunk - 1) / chunk
        var results = [[T]](repeating: [], count: chunks)
        var failures = [E?](repeating: nil, count: chunks)
        results.withUnsafeMutableBufferPointer { r in
            failures.withUnsafeMutableBufferPointer { f in
                nonisolated(unsafe) let (r, f) = (r, f)
                Parallelism.concurrentPerform(iterations: chunks) { c in
                    var out: [T] = []
                    out.reserveCapacity(chunk)
                    do throws(E) {
                        for i in (c * chunk)..<min(count, (c + 1) * chunk) { out.append(try body(i)) }
                    } catch {
                        f[c] = error
                    }
                    r[c] = out
                }
            }
        }
        if let first = failures.first(where: { $0 != nil }) { throw first! }
        return results.flatMap { $0 }
    }
}
