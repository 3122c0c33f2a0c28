import AppConfigCore

/// Tonight's pieces of an export (an LDIF file's segments, an inventory's records) matched with
/// last night's by the hashes of their bytes: what a night need not read again; and the pieces of
/// a file scanned in parts, joined.
enum RecordMatch {
    /// Per piece tonight, the piece of last night with its bytes, or -1. In order, as
    /// exports are: runs of equal hashes matched in step, a change (a piece replaced, added or
    /// gone) stepped over by looking a few pieces ahead on either side; what is not matched is
    /// read again, which costs time, never correctness (a match means the same bytes). Each of
    /// last night's pieces is matched at most once: a piece given twice tonight is one piece
    /// kept and one read again, as a whole read meets both (two users of one DN, two rows of one
    /// device key, which the night then finds and reads whole).
    /// `old` where it is (an image's mapped hashes are matched there, not copied first).
    static func match<Old: RandomAccessCollection<UInt64>>(_ old: Old, _ new: [UInt64]) -> [Int] where Old.Index == Int {
        var out = [Int](repeating: -1, count: new.count)
        var (i, k) = (0, 0)
        let ahead = 16
        while i < old.count && k < new.count {
            if old[i] == new[k] {
                out[k] = i
                i += 1
                k += 1
                continue
            }
            // The nearest resumption: new[k + a] == old[i + b], smallest a + b.
            var best: (a: Int, b: Int)?
            search: for d in 1...(2 * ahead) {
                for a in max(0, d - ahead)...min(d, ahead) {
                    let b = d - a
                    if k + a < new.count && i + b < old.count && new[k + a] == old[i + b] {
                        best = (a, b)
                        break search
                    }
                }
            }
            guard let best else {
                // Out of step by more than the look-ahead: the rest by a table of last night's.
                var index: [UInt64: Int] = [:]
                index.reserveCapacity(old.count - i)
                for j in i..<old.count where index[old[j]] == nil { index[old[j]] = j }
                for kk in k..<new.count { out[kk] = index.removeValue(forKey: new[kk]) ?? -1 }
                return out
            }
            i += best.b
            k += best.a
        }
        return out
    }

    /// Pieces of a file scanned in parts (each: where its pieces end, the newlines each holds,
    /// their hashes), in order, joined: the line each piece starts on, counted from `firstLine`.
    /// Each part copied on a core of its own, from where the parts before it end (one core copying
    /// 10M pieces into fresh pages, the other idle, was a quarter second of a 10M night's
    /// directory phase).
    static func joined(_ parts: [(ends: [Int], lines: [UInt32], hashes: [UInt64])], firstLine: UInt32)
        -> (startLines: [UInt32], ends: [Int], hashes: [UInt64]) {
        // Each part's first piece and first line, and where the last part ends.
        var firstOf: [(piece: Int, line: UInt32)] = []
        var end = (piece: 0, line: firstLine)
        for part in parts {
            firstOf.append(end)
            end = (end.piece + part.ends.count, part.lines.reduce(end.line, &+))
        }
        let count = end.piece
        func filled<T>(_ body: (_ part: Int, _ into: WorkerSlots<T>) -> Void) -> [T] {
            [T](unsafeUninitializedCapacity: count) { out, initialized in
                let out = WorkerSlots(out)
                Parallelism.concurrentPerform(iterations: parts.count) { p in body(p, out[slots: firstOf[p].piece..<(firstOf[p].piece + parts[p].ends.count)]) }
                initialized = count
            }
        }
        let startLines: [UInt32] = filled { p, into in
            var line = firstOf[p].line
            for (k, newlines) in parts[p].lines.enumerated() {
                into[k] = line
                line &+= newlines
            }
        }
        let ends: [Int] = filled { p, into in parts[p].ends.withView { into.copy($0, to: 0) } }
        let hashes: [UInt64] = filled { p, into in parts[p].hashes.withView { into.copy($0, to: 0) } }
        return (startLines, ends, hashes)
    }
}
