import AppConfigCore

extension BatchRenderer {
    /// The rows in device-key order (byte order). Sorted on each key's first eight bytes as one
    /// big-endian integer, the whole keys compared only on a tie (far cheaper than comparing keys
    /// throughout). One run per core is sorted on its core, then the runs
    /// are merged.
    func rowsInKeyOrder() -> [Int32] {
        let inventory = fleet.inventory
        let slot = inventory.deviceKeySlot
        typealias Keyed = (prefix: UInt64, row: Int32)
        func prefix(_ key: ByteView) -> UInt64 {
            var p: UInt64 = 0
            for i in 0..<8 { p = p << 8 | UInt64(i < key.count ? key[i] : 0) }
            return p
        }
        func precedes(_ a: Keyed, _ b: Keyed) -> Bool {
            if a.prefix != b.prefix { return a.prefix < b.prefix }
            return inventory.value(row: Int(a.row), slot: slot).precedes(inventory.value(row: Int(b.row), slot: slot))
        }
        let n = rows.count
        let runs = n >= 65_536 ? max(1, options.jobs) : 1
        var keyed = [Keyed](repeating: (0, 0), count: n)
        keyed.withWorkerSlots { keyed in
            forEachRange(n, parts: runs) { _, range in
                for i in range { keyed[i] = (prefix(inventory.value(row: Int(rows[i]), slot: slot)), rows[i]) }
                keyed.sort(range, by: precedes)
            }
        }
        // Runs merged in pairs, one pass per round, until one is left.
        var bounds = (0...runs).map { n * $0 / runs }
        while bounds.count > 2 {
            let source = keyed
            var next = [0]
            keyed = [Keyed](unsafeUninitializedCapacity: n) { out, count in
                for pair in stride(from: 0, to: bounds.count - 1, by: 2) {
                    let middle = bounds[pair + 1], end = pair + 2 < bounds.count ? bounds[pair + 2] : middle
                    var i = bounds[pair], j = middle
                    while i < middle || j < end {
                        if j >= end || (i < middle && !precedes(source[j], source[i])) { out[count] = source[i]; i += 1 } else { out[count] = source[j]; j += 1 }
                        count += 1
                    }
                    next.append(end)
                }
            }
            bounds = next
        }
        return keyed.map(\.row)
    }
}
