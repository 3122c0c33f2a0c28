import AppConfigCore

/// Work over numbered items on every core the job allows (`Parallelism`), results in order; the
/// first error (in order) thrown.
package enum ParallelLines {
    /// Each result is made in its place in the array returned: chunks' arrays joined after (a
    /// copy of every result, a retain of everything each holds) were a second of a status run
    /// at 1M devices.
    package static func map<T: Sendable, E: Error>(_ count: Int, chunk: Int = 2048, _ body: @Sendable (Int) throws(E) -> T) throws(E) -> [T] {
        let chunks = (count + chunk - 1) / chunk
        var failures = [E?](repeating: nil, count: chunks)
        var made = [Int](repeating: 0, count: chunks)
        let results = [T](unsafeUninitializedCapacity: count) { buffer, initialized in
            failures.withUnsafeMutableBufferPointer { f in
                made.withUnsafeMutableBufferPointer { m in
                    nonisolated(unsafe) let (b, f, m) = (buffer, f, m)
                    Parallelism.concurrentPerform(iterations: chunks) { c in
                        let start = c * chunk, end = min(count, start + chunk)
                        var i = start
                        do throws(E) {
                            while i < end {
                                (b.baseAddress! + i).initialize(to: try body(i))
                                i += 1
                            }
                        } catch {
                            f[c] = error
                        }
                        m[c] = i - start
                    }
                }
            }
            if failures.contains(where: { $0 != nil }) {
                // Nothing is returned: what was made is undone.
                for c in 0..<chunks where made[c] > 0 { (buffer.baseAddress! + c * chunk).deinitialize(count: made[c]) }
                initialized = 0
            } else {
                initialized = count
            }
        }
        if let first = failures.first(where: { $0 != nil }) { throw first! }
        return results
    }
}
