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
        let parts = max(1, options.jobs)
        var keyed = [PrefixSort.Record](count: rows.count, parts: parts) { range, keyed in
            for i in range { keyed[i] = (prefix(inventory.value(row: Int(rows[i]), slot: slot)), rows[i]) }
        }
        PrefixSort.sort(&keyed, parts: parts) { a, b in
            inventory.value(row: Int(a.row), slot: slot).precedes(inventory.value(row: Int(b.row), slot: slot))
        }
        return keyed.withView { keyed in [Int32](count: keyed.count, parts: parts) { range, rows in for i in range { rows[i] = keyed[i].row } } }
    }
}
