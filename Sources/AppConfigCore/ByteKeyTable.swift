/// A set of byte-string keys by content: open addressing with linear probing over `wordHash` hashes.
/// The table stores only each key's hash and the caller's id for it (a row, a user, a constant
/// class); the caller keeps the bytes and hands them back through `keyOf` when hashes collide, so
/// nothing is allocated per key. One table serves the program image (constant strings), the
/// inventory (device keys) and the user table (join keys).
/// Sendable: the slots are written only through a table that owns them alone (`makeUnique`).
package struct ByteKeyTable: @unchecked Sendable {
    /// A slot: the key's hash and the caller's id (-1 when empty), side by side so that a probe is
    /// one cache line (separate arrays were two cache misses per key).
    @usableFromInline struct Slot: Sendable, BitwiseCopyable {
        @usableFromInline var hash: UInt64
        @usableFromInline var id: Int32
        @usableFromInline static let empty = Slot(hash: 0, id: -1)
        @usableFromInline init(hash: UInt64, id: Int32) { (self.hash, self.id) = (hash, id) }
    }

    /// The slots, in a buffer its `SlotStorage` owns. Lookups read them through these trivial
    /// slots: slots in an array were retained and released around each lookup's `keyOf` call, and
    /// cores looking keys up in one table at once contended for the array's count.
    @usableFromInline var slots: WorkerSlots<Slot>
    private var storage: SlotStorage
    @usableFromInline var mask: Int
    package private(set) var count = 0
    /// Keys it holds before it grows: half its slots, or three quarters for one made for a known
    /// number of keys (`init(filling:)`).
    private var limit: Int
    /// Slots the table has (it grows by doubling them).
    package var slotCount: Int { mask + 1 }
    /// A-Z and a-z are the same key (directory join keys).
    package let foldsASCIICase: Bool

    /// Owns the slots' buffer; a table copied shares it until one of the copies changes.
    private final class SlotStorage {
        private let owner = BufferArena()
        let slots: WorkerSlots<Slot>
        init(count: Int) { slots = owner.slots(count: count, repeating: .empty) }
        init(copying other: WorkerSlots<Slot>) {
            slots = owner.slots(uninitialized: other.count, of: Slot.self)
            slots.copy(other.view, to: 0)  // every slot
        }
    }

    /// Room for `capacity` keys before the first growth.
    package init(capacity: Int = 512, foldingASCIICase: Bool = false) {
        var size = 16
        while size < capacity * 2 { size <<= 1 }
        storage = SlotStorage(count: size)
        slots = storage.slots
        mask = size - 1
        limit = size / 2
        foldsASCIICase = foldingASCIICase
    }

    /// Room for about `keys` keys, filled to at most three quarters of its slots before it grows:
    /// for a table whose keys are counted beforehand and that is filled once (a join index of
    /// millions of keys). At half, the next power of two above twice the keys made the slots up to
    /// four times the keys (10M users: 512 MB of slots, each page zeroed once by the kernel); a
    /// probe of linear probing at three quarters still reads one or two cache lines.
    package init(filling keys: Int, foldingASCIICase: Bool = false) {
        var size = 16
        while size * 3 < keys * 4 { size <<= 1 }
        self.init(capacity: size / 2, foldingASCIICase: foldingASCIICase)
        limit = size * 3 / 4
    }

    /// Before a change: the slots become this table's own (value semantics).
    private mutating func makeUnique() {
        if !isKnownUniquelyReferenced(&storage) {
            storage = SlotStorage(copying: slots)
            slots = storage.slots
        }
    }

    /// The hash this table files `key` under.
    @inlinable @inline(__always)
    package func hash(_ key: ByteView) -> UInt64 { Self.hash(key, foldingASCIICase: foldsASCIICase) }

    /// The hash a table files `key` under: `wordHash`, eight bytes at a time (the tables of a run's
    /// users, join keys and DNs, a million keys each; the renderer's constant strings, which it
    /// looks each device's strings up in by the same hash).
    @inlinable @inline(__always)
    package static func hash(_ key: ByteView, foldingASCIICase: Bool) -> UInt64 {
        foldingASCIICase ? foldedWordHash(key) : wordHash(key, foldingASCIICase: false)
    }

    /// The id of the key equal to `key` (whose hash is `hash`), or nil.
    @inlinable @inline(__always)
    package func find(_ key: ByteView, hash: UInt64, keyOf: (Int32) -> ByteView) -> Int32? { reader.find(key, hash: hash, keyOf: keyOf) }

    /// `find` on a table's trivial parts: a caller that holds tables in an array reads these
    /// fields of one without copying it (a copy retains its storage around `keyOf`).
    @inlinable @inline(__always)
    static func find(_ key: ByteView, hash: UInt64, in slots: WorkerSlots<Slot>, mask: Int, foldingASCIICase: Bool,
                     keyOf: (Int32) -> ByteView) -> Int32? {
        var i = Int(truncatingIfNeeded: hash) & mask
        while true {
            let slot = slots[i]
            if slot.id < 0 { return nil }
            if slot.hash == hash && keyOf(slot.id).equals(key, foldingASCIICase: foldingASCIICase) { return slot.id }
            i = (i + 1) & mask
        }
    }

    @inlinable
    package func find(_ key: ByteView, keyOf: (Int32) -> ByteView) -> Int32? {
        find(key, hash: hash(key), keyOf: keyOf)
    }

    /// The table to look keys up in, as trivial values (no reference: copying one retains
    /// nothing), valid while the table is neither changed nor gone: readers on every core.
    package struct Reader: @unchecked Sendable {
        @usableFromInline let slots: WorkerSlots<Slot>
        @usableFromInline let mask: Int
        @usableFromInline let foldsASCIICase: Bool

        @inlinable @inline(__always)
        package func find(_ key: ByteView, hash: UInt64, keyOf: (Int32) -> ByteView) -> Int32? {
            ByteKeyTable.find(key, hash: hash, in: slots, mask: mask, foldingASCIICase: foldsASCIICase, keyOf: keyOf)
        }

        @inlinable @inline(__always)
        package func prefetch(hash: UInt64) { slots.view.prefetch(at: Int(truncatingIfNeeded: hash) & mask) }
    }

    @inlinable package var reader: Reader { Reader(slots: slots, mask: mask, foldsASCIICase: foldsASCIICase) }

    /// Adds `key` under `id`, unless an equal key is there: then returns that key's id and adds nothing.
    package mutating func insert(_ key: ByteView, id: Int32, keyOf: (Int32) -> ByteView) -> Int32? {
        insert(key, hash: hash(key), id: id, keyOf: keyOf)
    }

    /// `insert` with the key's hash made beforehand (`hash(key)`: by a parallel scan, say).
    package mutating func insert(_ key: ByteView, hash h: UInt64, id: Int32, keyOf: (Int32) -> ByteView) -> Int32? {
        precondition(id >= 0, "ids are not negative")
        makeUnique()
        if count + 1 > limit { grow() }
        var i = Int(truncatingIfNeeded: h) & mask
        while slots[i].id >= 0 {
            if slots[i].hash == h && keyOf(slots[i].id).equals(key, foldingASCIICase: foldsASCIICase) { return slots[i].id }
            i = (i + 1) & mask
        }
        slots[i] = Slot(hash: h, id: id)
        count += 1
        return nil
    }

    /// Starts reading the slot where the probe for `hash` starts into the cache: a hint, given well
    /// before the look-up.
    @inlinable @inline(__always)
    package func prefetch(hash: UInt64) { reader.prefetch(hash: hash) }

    /// Room for `keys` keys in all without growing: the table moved once now instead of at each
    /// doubling (a reader that can tell how many keys are coming; each move reinserted every key,
    /// a cache miss each). The slots are made anew, so a copy sharing the old ones keeps them.
    package mutating func reserve(_ keys: Int) {
        guard (keys + 1) * 2 > slots.count else { return }
        var size = slots.count
        while (keys + 1) * 2 > size { size <<= 1 }
        grow(to: size)
    }

    /// Doubles the slots (or more); hashes are kept, so no key is read again.
    private mutating func grow(to size: Int? = nil) {
        let old = storage
        storage = SlotStorage(count: size ?? old.slots.count * 2)
        slots = storage.slots
        mask = slots.count - 1
        limit = slots.count / 2
        for slot in old.slots.view where slot.id >= 0 {
            var i = Int(truncatingIfNeeded: slot.hash) & mask
            while slots[i].id >= 0 { i = (i + 1) & mask }
            slots[i] = slot
        }
    }
}
