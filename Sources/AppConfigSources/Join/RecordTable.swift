import AppConfigCore

/// Records of `width` fields over one buffer of bytes, each field an (offset, length) pair of
/// `UInt32`: the inventory's rows (their kept columns) and the directory's users (their variables
/// and join key). A length of `absent` is a field the record lacks (a user without the
/// attribute; inventory fields are never absent, only empty). A view with no reference counting:
/// the table that owns the pairs and the bytes keeps them alive.
public struct RecordTable: @unchecked Sendable {
    public static let absent = UInt32.max
    let pairs: BufferView<UInt32>
    /// Every record's bytes (empty for a table of no bytes).
    let bytes: ByteView
    let width: Int

    init(pairs: BufferView<UInt32>, bytes: ByteView, width: Int) {
        self.pairs = pairs
        self.bytes = bytes
        self.width = width
    }

    /// A field's bytes, nil when the record lacks it.
    @inline(__always)
    func field(_ record: Int, _ field: Int) -> ByteView? {
        let i = (record * width + field) * 2
        guard pairs[i + 1] != Self.absent else { return nil }
        let start = Int(pairs[i])
        return bytes[view: start..<(start + Int(pairs[i + 1]))]
    }

    /// A field's bytes, empty when the record lacks it.
    @inline(__always)
    func value(_ record: Int, _ field: Int) -> ByteView { self.field(record, field) ?? .empty }

    /// Starts reading a record's pairs into the cache (`prefetchValue` a few records later finds them there).
    @inline(__always)
    func prefetchPairs(_ record: Int) {
        let first = record * width * 2
        pairs.prefetch(at: first)
        pairs.prefetch(at: first + width * 2 - 1)
    }

    /// Starts reading one field's pair into the cache.
    @inline(__always)
    func prefetchPair(_ record: Int, _ field: Int) { pairs.prefetch(at: (record * width + field) * 2) }

    /// Starts reading a field's first bytes into the cache (its pair is read now: see `prefetchPairs`).
    @inline(__always)
    func prefetchValue(_ record: Int, _ field: Int) {
        let i = (record * width + field) * 2
        if pairs[i + 1] != Self.absent { bytes.prefetch(at: Int(pairs[i])) }
    }

    /// The same records with their bytes copied back to back into `arena`, in record order: a
    /// table that no longer reads the buffer it was read from (the inventory lets its mapped file
    /// go: most of an export's bytes are columns no program reads). One part per core.
    func compacted(in arena: BufferArena) -> RecordTable {
        let records = pairs.count / 2
        let parts = records >= 65_536 ? Parallelism.threads : 1
        // Each part's bytes, then where each part starts.
        var starts = [Int](repeating: 0, count: parts + 1)
        starts.withWorkerSlots { slots in
            forEachRange(records, parts: parts) { part, range in
                var sum = 0
                for i in range where pairs[2 * i + 1] != Self.absent { sum += Int(pairs[2 * i + 1]) }
                slots[part + 1] = sum
            }
        }
        for p in 0..<parts { starts[p + 1] += starts[p] }
        // Every byte and pair written below, each part's on its own core: zeroed first, the
        // pairs' fresh pages were faulted in and written on one core, then written again.
        let pool = arena.slots(uninitialized: starts[parts], of: UInt8.self)
        let moved = arena.slots(uninitialized: pairs.count, of: UInt32.self)
        forEachRange(records, parts: parts) { part, range in
            var at = starts[part]
            for i in range {
                let length = pairs[2 * i + 1]
                moved[2 * i + 1] = length
                guard length != Self.absent, length > 0 else { moved[2 * i] = 0; continue }
                moved[2 * i] = UInt32(at)
                pool.copy(bytes[view: Int(pairs[2 * i])..<(Int(pairs[2 * i]) + Int(length))], to: at)
                at += Int(length)
            }
        }
        return RecordTable(pairs: moved.view(prefix: moved.count), bytes: pool.view(prefix: pool.count), width: width)
    }
}
