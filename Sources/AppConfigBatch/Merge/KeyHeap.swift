import AppConfigCore
import Digest
import Foundation

/// A min-heap of shards by their current key (a copy of it): the k-way merge of the shards'
/// key-ordered lines.
struct KeyHeap {
    private var items: [(shard: Int, item: Int, key: [UInt8])] = []

    private func less(_ a: Int, _ b: Int) -> Bool {
        let (x, y) = (items[a], items[b])
        if x.key == y.key { return x.shard < y.shard }
        return x.key.lexicographicallyPrecedes(y.key)
    }

    mutating func push(_ shard: Int, _ item: Int, _ key: [UInt8]) {
        items.append((shard, item, key))
        var i = items.count - 1
        while i > 0, less(i, (i - 1) / 2) {
            items.swapAt(i, (i - 1) / 2)
            i = (i - 1) / 2
        }
    }

    mutating func pop() -> (shard: Int, item: Int, key: [UInt8])? {
        guard !items.isEmpty else { return nil }
        items.swapAt(0, items.count - 1)
        let top = items.removeLast()
        var i = 0
        while true {
            let (l, r) = (2 * i + 1, 2 * i + 2)
            var m = i
            if l < items.count, less(l, m) { m = l }
            if r < items.count, less(r, m) { m = r }
            if m == i { break }
            items.swapAt(i, m)
            i = m
        }
        return top
    }
}
