/// Records sorted by a 64-bit prefix of their key, ties broken by comparing the whole keys: how a
/// render puts a fleet's rows in device-key order (each key's first eight bytes as one big-endian
/// integer). A least-significant-digit radix sort, a byte a pass, a pass skipped when every
/// prefix has the same byte there: it costs a few passes over the records whatever the keys, where
/// a comparison sort of a million rows (twenty comparisons each, through a closure) was 5% of a
/// night's CPU. Written by hand: the standard library sorts only by comparison.
package enum PrefixSort {
    package typealias Record = (prefix: UInt64, row: Int32)

    /// Sorts `records` by prefix, then the records of equal prefix by `precedes` (their whole
    /// keys), and records whose keys are equal by row. Each pass in `parts` on as many cores (a
    /// fleet's million rows took one core 0.03-0.08 s, the other idle): each part counts its
    /// records' bytes, and writes them where the parts before it leave off, so the sort stays stable.
    package static func sort(_ records: inout [Record], parts: Int = Parallelism.threads, precedes: (Record, Record) -> Bool) {
        let n = records.count
        guard n > 1 else { return }
        let parts = n >= 1 << 15 ? max(1, min(parts, 16)) : 1
        // Every slot written by the first pass before any is read (none read when no byte varies).
        var other = [Record](unsafeUninitializedCapacity: n) { _, initialized in initialized = n }
        // Which bytes differ among the prefixes: a pass for each of those only.
        var all: UInt64 = ~0, any: UInt64 = 0
        for r in records {
            all &= r.prefix
            any |= r.prefix
        }
        let varying = all ^ any
        var inOther = false
        var counts = [Int](repeating: 0, count: 256 * parts)
        for byte in 0..<8 where (varying >> (8 * byte)) & 0xFF != 0 {
            let shift = UInt64(8 * byte)
            if inOther {
                pass(from: other, to: &records, shift: shift, parts: parts, counts: &counts)
            } else {
                pass(from: records, to: &other, shift: shift, parts: parts, counts: &counts)
            }
            inOther.toggle()
        }
        if inOther { swap(&records, &other) }
        breakTies(&records, precedes: precedes)
    }

    /// One stable counting pass on the byte at `shift`: per part, its records' counts, then each
    /// bucket's start for each part (the parts before it first), then the records written.
    private static func pass(from source: [Record], to target: inout [Record], shift: UInt64, parts: Int, counts: inout [Int]) {
        let n = source.count
        source.withView { source in
            counts.withWorkerSlots { counts in
                forEachRange(n, parts: parts) { part, range in
                    let own = counts[slots: (256 * part)..<(256 * part + 256)]
                    for b in 0..<256 { own[b] = 0 }
                    for i in range { own[Int((source[i].prefix >> shift) & 0xFF)] += 1 }
                }
                var start = 0
                for b in 0..<256 {
                    for part in 0..<parts {
                        let c = counts[256 * part + b]
                        counts[256 * part + b] = start
                        start += c
                    }
                }
                target.withWorkerSlots { target in
                    forEachRange(n, parts: parts) { part, range in
                        let next = counts[slots: (256 * part)..<(256 * part + 256)]
                        for i in range {
                            let r = source[i]
                            let b = Int((r.prefix >> shift) & 0xFF)
                            target[next[b]] = r
                            next[b] += 1
                        }
                    }
                }
            }
        }
    }

    /// Each run of equal prefixes sorted by the whole keys (rare: keys that share eight bytes).
    private static func breakTies(_ records: inout [Record], precedes: (Record, Record) -> Bool) {
        var start = 0
        while start < records.count {
            var end = start + 1
            while end < records.count && records[end].prefix == records[start].prefix { end += 1 }
            if end - start > 1 { records[start..<end].sort { a, b in precedes(a, b) || !precedes(b, a) && a.row < b.row } }
            start = end
        }
    }
}
