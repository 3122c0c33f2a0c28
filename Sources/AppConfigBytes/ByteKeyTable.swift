/// A set of byte-string keys by content: open addressing with linear probing over FNV-1a hashes.
/// The table stores only each key's hash and the caller's id for it (a row, a user, a constant
/// class); the caller keeps the bytes and hands them back through `keyOf` when hashes collide, so
/// nothing is allocated per key. One table serves the program image (constant strings), the
/// inventory (device keys) and the user table (join keys).
public struct ByteKeyTable: Sendable {
    /// Per slot: the id, or -1 when empty.
    @usableFromInline var ids: [Int32]
    @usableFromInline var hashes: [UInt64]
    @usableFromInline var mask: Int
    public private(set) var count = 0
    /// A-Z and a-z are the same key (directory join keys).
    public let foldsASCIICase: Bool

    /// Room for `capacity` keys before the first growth.
    public init(capacity: Int = 512, foldingASCIICase: Bool = false) {
        var size = 16
        while size < capacity * 2 { size <<= 1 }
        ids = [Int32](repeating: -1, count: size)
        hashes = [UInt64](repeating: 0, count: size)
        mask = size - 1
        foldsASCIICase = foldingASCIICase
    }

    /// The hash this table files `key` under.
    @inlinable @inline(__always)
    public func hash(_ key: UnsafeBufferPointer<UInt8>) -> UInt64 { fnv1a(key, foldingASCIICase: foldsASCIICase) }

    /// The id of the key equal to `key` (whose hash is `hash`), or nil.
    @inlinable @inline(__always)
    public func find(_ key: UnsafeBufferPointer<UInt8>, hash: UInt64, keyOf: (Int32) -> UnsafeBufferPointer<UInt8>) -> Int32? {
        var i = Int(truncatingIfNeeded: hash) & mask
        while true {
            let id = ids[i]
            if id < 0 { return nil }
            if hashes[i] == hash && bytesEqual(keyOf(id), key, foldingASCIICase: foldsASCIICase) { return id }
            i = (i + 1) & mask
        }
    }

    @inlinable
    public func find(_ key: UnsafeBufferPointer<UInt8>, keyOf: (Int32) -> UnsafeBufferPointer<UInt8>) -> Int32? {
        find(key, hash: hash(key), keyOf: keyOf)
    }

    /// Adds `key` under `id`, unless an equal key is there: then returns that key's id and adds nothing.
    public mutating func insert(_ key: UnsafeBufferPointer<UInt8>, id: Int32, keyOf: (Int32) -> UnsafeBufferPointer<UInt8>) -> Int32? {
        precondition(id >= 0, "ids are not negative")
        if (count + 1) * 2 > ids.count { grow() }
        let h = hash(key)
        var i = Int(truncatingIfNeeded: h) & mask
        while ids[i] >= 0 {
            if hashes[i] == h && bytesEqual(keyOf(ids[i]), key, foldingASCIICase: foldsASCIICase) { return ids[i] }
            i = (i + 1) & mask
        }
        ids[i] = id
        hashes[i] = h
        count += 1
        return nil
    }

    /// Doubles the slots; hashes are kept, so no key is read again.
    private mutating func grow() {
        let oldIDs = ids, oldHashes = hashes
        ids = [Int32](repeating: -1, count: oldIDs.count * 2)
        hashes = [UInt64](repeating: 0, count: oldIDs.count * 2)
        mask = ids.count - 1
        for (j, id) in oldIDs.enumerated() where id >= 0 {
            var i = Int(truncatingIfNeeded: oldHashes[j]) & mask
            while ids[i] >= 0 { i = (i + 1) & mask }
            ids[i] = id
            hashes[i] = oldHashes[j]
        }
    }
}
