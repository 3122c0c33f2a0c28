import Dispatch
import Foundation

/// Bytes for `count` items made in contiguous ranges, one per core, each into its own buffer: the
/// buffers, in order, are the whole. For outputs made of a line per device (the index and manifest
/// of 1M devices are ~250 MB: made on one core, they were a quarter of the job's time).
public func bytesInParts(count: Int, parts: Int = ProcessInfo.processInfo.activeProcessorCount,
                         _ make: (Range<Int>) -> [UInt8]) -> [[UInt8]] {
    let n = max(1, min(parts, count))
    var results = [[UInt8]](repeating: [], count: n)
    // Called for disjoint ranges; what it reads is not written while the parts are made.
    nonisolated(unsafe) let make = make
    results.withUnsafeMutableBufferPointer { buffer in
        let slots = WorkerSlots(buffer)
        DispatchQueue.concurrentPerform(iterations: n) { i in
            slots.buffer[i] = make(count * i / n ..< count * (i + 1) / n)
        }
    }
    return results
}

/// Copies `source` to the start of `target` in one part per core (a copy of a few hundred MB into
/// fresh pages is mostly page faults, and they go in parallel).
public func copyInParallel(_ source: UnsafeBufferPointer<UInt8>, to target: UnsafeMutableBufferPointer<UInt8>,
                           parts: Int = ProcessInfo.processInfo.activeProcessorCount) {
    precondition(target.count >= source.count, "the target holds the source")
    guard let from = source.baseAddress, let to = target.baseAddress else { return }
    let (count, n) = (source.count, source.count >= 8 << 20 ? max(1, parts) : 1)
    let (s, t) = (WorkerSlots(UnsafeMutableBufferPointer(mutating: UnsafeBufferPointer(start: from, count: source.count))), WorkerSlots(UnsafeMutableBufferPointer(start: to, count: target.count)))
    DispatchQueue.concurrentPerform(iterations: n) { i in
        let range = (count * i / n)..<(count * (i + 1) / n)
        (t.buffer.baseAddress! + range.lowerBound).update(from: s.buffer.baseAddress! + range.lowerBound, count: range.count)
    }
}
