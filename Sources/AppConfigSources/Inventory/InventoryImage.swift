import AppConfigCore

/// An inventory table saved with its file's records (`InventoryRecords`), so that the night after
/// parses only the records whose bytes are new (`IncrementalInventory`): an export changes every
/// night, and read whole it was a fifth of a night whose rows changed by 1%. Only a shortcut to
/// what parsing those bytes gives: any mismatch (another header, reading or format, a damaged or
/// short file) and the file is read whole.
///
/// ```
/// appconfig-inventory 2 <the header's bytes, 10 digits>
/// {"key": ..., "rows": R, "width": W, "pool": BYTES, "records": S, "poolAtFullRead": N}<spaces to a multiple of 8>
/// <the kept values' bytes, zeros to a multiple of 8><R UInt64s: each row's device key hash, ASCII case folded>
/// <S UInt64s: per record, the XXH3-64 of its bytes><the pairs, UInt32 each, 2 a row and kept column>
/// <S Int32s: per record, the row it became or -1>
/// ```
/// No lines: a record's line is tonight's, where the night finds it.
/// The numbers in the machine's byte order: an image is read where it was written, mapped.
package enum InventoryImage {
    /// Bump when the inventory's reader would read the same bytes into another table, or the layout changes.
    static let file = ImageFile(kind: "appconfig-inventory", format: 2)

    /// The image of `table`, in pieces to write one after another, given to `write` a few at a
    /// time (each valid during its call); nil when the table keeps no records (see
    /// `InventoryTable.recordHashes`).
    package static func withPieces(of table: InventoryTable, _ write: ([ByteView]) throws(Problem) -> Void) throws(Problem) -> Void? {
        guard let hashes = table.recordHashes, let pool = table.ownPool else { return nil }
        let header: [String: Any] = [
            "key": table.readingKey, "rows": table.rowCount, "width": table.keptColumns.count,
            "pool": pool.count + ImageFile.padding(pool.count), "records": hashes.count, "poolAtFullRead": table.poolAtFullRead,
        ]
        guard let head = file.head(header) else { return nil }
        let zeros = [UInt8](repeating: 0, count: ImageFile.padding(pool.count))
        try head.withView { head throws(Problem) in try zeros.withView { zeros throws(Problem) in try write([head, pool, zeros]) } }
        // The device keys' hashes made a part at a time, as they are written.
        for first in Swift.stride(from: 0, to: table.rowCount, by: 1 << 16) {
            try table.deviceKeyHashes(first..<min(first + 1 << 16, table.rowCount)).withView { keys throws(Problem) in try write([keys.bytes]) }
        }
        try hashes.withView { hashes throws(Problem) in try write([hashes.bytes, table.pairBytes]) }
        // Each record's row, made a part at a time.
        for first in Swift.stride(from: 0, to: hashes.count, by: 1 << 16) {
            try table.recordRows(first..<min(first + 1 << 16, hashes.count)).withView { rows throws(Problem) in try write([rows.bytes]) }
        }
        return ()
    }

    /// What an image holds, read where it lies in its mapping (valid while `mapping` is).
    package struct Contents {
        package let key: String
        package let mapping: MappedFile
        let pool: ByteView
        let width: Int
        let rows: Int
        /// Per row, `width` pairs into `pool`.
        let pairs: BufferView<UInt32>
        let keyHashes: BufferView<UInt64>
        /// Per record, the XXH3-64 of its bytes (last night's records, to match tonight's with).
        let recordHashes: BufferView<UInt64>
        /// Per record, the row it became or -1.
        let recordRows: BufferView<Int32>
        let poolAtFullRead: Int

        var mappedPool: MappedPool { MappedPool(mapping: mapping, pool: pool) }
    }

    /// The image at `path`, read (nil when it is not one this program wrote whole), mapped so that
    /// its bytes after the pool may be written over (privately: the file does not change), for
    /// the values read tonight appended to the pool in place.
    package static func contents(_ path: String) throws(FileReadError) -> Contents? {
        guard let mapped = try MappedFile(path, limit: .max, readOnly: false) else { return nil }
        mapped.populateForReading()
        let bytes = mapped.view
        guard let (header, start) = file.header(bytes), let key = header["key"] as? String,
              let rows = header["rows"] as? Int, let width = header["width"] as? Int, let pool = header["pool"] as? Int,
              let count = header["records"] as? Int, let poolAtFullRead = header["poolAtFullRead"] as? Int,
              rows >= 0, width > 0, pool >= 0, count >= rows, pool % ImageFile.alignment == 0,
              bytes.count == start + pool + 8 * rows + 8 * count + 8 * rows * width + 4 * count
        else { return nil }
        var at = start + pool
        guard let keys = BufferView<UInt64>(bytes, at: at, count: rows),
              let hashes = BufferView<UInt64>(bytes, at: at + 8 * rows, count: count) else { return nil }
        at += 8 * rows + 8 * count
        guard let pairs = BufferView<UInt32>(bytes, at: at, count: 2 * rows * width) else { return nil }
        at += 8 * rows * width
        guard let owners = BufferView<Int32>(bytes, at: at, count: count) else { return nil }
        // Every offset within the values and every row a record names one of the table's, each
        // once and in order: a damaged image is refused here, not read out of bounds.
        for i in Swift.stride(from: 0, to: pairs.count, by: 2) where Int(pairs[i]) + Int(pairs[i + 1]) > pool { return nil }
        var next: Int32 = 0
        for r in owners where r >= 0 {
            guard r == next else { return nil }
            next += 1
        }
        guard Int(next) == rows else { return nil }
        return Contents(key: key, mapping: mapped, pool: bytes[view: start..<(start + pool)], width: width, rows: rows, pairs: pairs,
                        keyHashes: keys, recordHashes: hashes, recordRows: owners,
                        poolAtFullRead: poolAtFullRead)
    }
}
