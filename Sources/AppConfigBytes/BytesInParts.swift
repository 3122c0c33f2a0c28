import Dispatch
import Foundation

/// Runs `body(part, range)` for `count` items cut into contiguous ranges, one per core (one range
/// when there are fewer than `parallelFrom` items), the ranges at once on their own threads. Each
/// call may write only its own range's (or part's) slots; what it reads must not change meanwhile.
public func forEachRange(_ count: Int, parts: Int = ProcessInfo.processInfo.activeProcessorCount, parallelFrom: Int = 1,
                         _ body: (_ part: Int, _ range: Range<Int>) -> Void) {
    let n = count >= parallelFrom ? max(1, min(parts, count)) : 1
    // Each call touches its own slots (the caller's promise above): no lock, no copy.
    nonisolated(unsafe) let body = body
    DispatchQueue.concurrentPerform(iterations: n) { i in body(i, (count * i / n)..<(count * (i + 1) / n)) }
}

/// Bytes for `count` items made in contiguous ranges, one per core, each into its own buffer: the
/// buffers, in order, are the whole. For outputs made of a line per device (the index and manifest
/// of 1M devices are ~250 MB: made on one core, they were a quarter of the job's time).
public func bytesInParts(count: Int, parts: Int = ProcessInfo.processInfo.activeProcessorCount,
                         _ make: (Range<Int>) -> [UInt8]) -> [[UInt8]] {
    var results = [[UInt8]](repeating: [], count: max(1, min(parts, count)))
    results.withUnsafeMutableBufferPointer { results in
        forEachRange(count, parts: parts) { part, range in results[part] = make(range) }
    }
    return results
}
