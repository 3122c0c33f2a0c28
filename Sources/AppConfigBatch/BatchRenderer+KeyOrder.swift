import AppConfigCore

extension BatchRenderer {
    /// The rows in device-key order (byte order; rows of equal keys in row order). Sorted on each
    /// key's first eight bytes as one big-endian integer (`PrefixSort`), the whole keys compared
    /// only on a tie.
    func rowsInKeyOrder() -> [Int32] {
        let inventory = fleet.inventory
        let slot = inventory.deviceKeySlot
        func prefix(_ key: ByteView) -> UInt64 {
            var p: UInt64 = 0
            for i in 0..<8 { p = p << 8 | UInt64(i < key.count ? key[i] : 0) }
            return p
        }
        let n = rows.count
        var keyed = [PrefixSort.Record](repeating: (0, 0), count: n)
        keyed.withWorkerSlots { keyed in
            forEachRange(n, parts: n >= 65_536 ? max(1, options.jobs) : 1) { _, range in
                for i in range { keyed[i] = (prefix(inventory.value(row: Int(rows[i]), slot: slot)), rows[i]) }
            }
        }
        PrefixSort.sort(&keyed) { a, b in
            inventory.value(row: Int(a.row), slot: slot).precedes(inventory.value(row: Int(b.row), slot: slot))
        }
        return keyed.map(\.row)
    }
}
