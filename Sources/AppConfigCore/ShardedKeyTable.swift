import Dispatch
import Foundation

/// A `ByteKeyTable` cut into shares by hash, each filled on a core of its own: equal keys have
/// equal hashes, so they meet in one share, and each share files its keys in the order given (id
/// order, unless `ids` says otherwise), so the first of equal keys wins as in one table (one table
/// filled with every key was a cache miss per key on one core while the others waited).
package struct ShardedKeyTable: Sendable {
    @usableFromInline var shares: [ByteKeyTable]
    package let foldsASCIICase: Bool

    /// A key's share: by the hash's high half (each share's table files keys by the low bits).
    @inlinable @inline(__always)
    static func share(_ hash: UInt64, of count: Int) -> Int { Int(hash >> 32) % count }

    /// Files ids `0..<count` by `key(id)` (an empty key is not filed); `hash(id)`, when given, is
    /// each key's hash made beforehand: `ByteKeyTable.hash`, folded as the table folds, for a table that is
    /// searched (`find` hashes so); any hash equal for keys the table takes as equal, for one that
    /// only reports `duplicates`: every id whose key an earlier id has, with that id.
    /// `ids`: the ids filed, in this order (the first of equal keys wins: earlier in `ids`), where
    /// they are not `0..<count` (a user table whose ids are not in file order, `UserTable.order`).
    package init(count: Int, ids: [Int32]? = nil, foldingASCIICase: Bool, shares requested: Int = Parallelism.threads,
                key: (Int32) -> ByteView, hash: ((Int32) -> UInt64)? = nil) {
        precondition(ids == nil || ids!.count == count, "an id for each of count")
        foldsASCIICase = foldingASCIICase
        let shareCount = max(1, min(requested, count / 4096 + 1))
        // By position: the id filed there.
        @inline(__always) func id(_ at: Int) -> Int32 { ids?[at] ?? Int32(at) }
        var hashes = [UInt64](repeating: 0, count: count)
        hashes.withWorkerSlots { hashes in
            forEachRange(count, parts: shareCount) { _, range in
                for at in range { hashes[at] = hash?(id(at)) ?? ByteKeyTable.hash(key(id(at)), foldingASCIICase: foldingASCIICase) }
            }
        }
        // Read from every core, written by none while they read.
        nonisolated(unsafe) let key = key
        var tables = [ByteKeyTable](repeating: ByteKeyTable(capacity: 0), count: shareCount)
        // Per share, each duplicate's position and the id its key was filed under first.
        var found = [[(at: Int, first: Int32)]](repeating: [], count: shareCount)
        hashes.withView { hashes in
            tables.withWorkerSlots { tables in
                found.withWorkerSlots { found in
                    Parallelism.concurrentPerform(iterations: shareCount) { share in
                        // A share's keys vary around the mean by about its square root: 1/64 more is room enough.
                        let mean = count / shareCount
                        var table = ByteKeyTable(filling: mean + mean / 64 + 16, foldingASCIICase: foldingASCIICase)
                        for at in 0..<count {
                            // The slot of a key some ids ahead read into the cache now: each key's
                            // slot is a random one of millions, a cache miss per insert.
                            let ahead = at + Self.insertAhead
                            if ahead < count && Self.share(hashes[ahead], of: shareCount) == share { table.prefetch(hash: hashes[ahead]) }
                            guard Self.share(hashes[at], of: shareCount) == share else { continue }
                            let k = key(id(at))
                            guard !k.isEmpty else { continue }
                            if let first = table.insert(k, hash: hashes[at], id: id(at), keyOf: key) { found[share].append((at, first)) }
                        }
                        tables[share] = table
                    }
                }
            }
        }
        shares = tables
        duplicates = found.joined().sorted { $0.at < $1.at }.map { (id($0.at), $0.first) }
    }

    /// How many ids ahead an insert's slot is fetched into the cache.
    static let insertAhead = 16

    /// Every id whose key an earlier id has, with that id, in the order filed (not filed).
    package let duplicates: [(id: Int32, first: Int32)]

    /// The id of the key equal to `key`, or nil.
    @inlinable @inline(__always)
    package func find(_ key: ByteView, keyOf: (Int32) -> ByteView) -> Int32? {
        find(key, hash: hash(key), keyOf: keyOf)
    }

    /// The hash `find` looks `key` up by.
    @inlinable @inline(__always)
    package func hash(_ key: ByteView) -> UInt64 { ByteKeyTable.hash(key, foldingASCIICase: foldsASCIICase) }

    /// `find` with the key's hash made beforehand (`hash(_:)`).
    @inlinable @inline(__always)
    package func find(_ key: ByteView, hash h: UInt64, keyOf: (Int32) -> ByteView) -> Int32? {
        // The share's trivial fields only: a copy of it retained its storage around `keyOf`, and
        // the cores looking keys up at once contended for its count.
        let s = Self.share(h, of: shares.count)
        return ByteKeyTable.find(key, hash: h, in: shares[s].slots, mask: shares[s].mask, foldingASCIICase: foldsASCIICase, keyOf: keyOf)
    }

    /// Starts reading the slot a look-up of `hash` reads first into the cache.
    @inlinable @inline(__always)
    package func prefetch(hash h: UInt64) {
        let s = Self.share(h, of: shares.count)
        shares[s].slots.view.prefetch(at: Int(truncatingIfNeeded: h) & shares[s].mask)
    }

    /// The id in the slot a look-up of `hash` reads first (its key compared first), or -1: read
    /// after `prefetch(hash:)`, to start reading that key.
    @inlinable @inline(__always)
    package func firstCandidate(hash h: UInt64) -> Int32 {
        let s = Self.share(h, of: shares.count)
        return shares[s].slots[Int(truncatingIfNeeded: h) & shares[s].mask].id
    }
}
