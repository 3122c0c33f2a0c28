import CByteScan

// The C byte scanners (`CByteScan`), called with views: the one place their addresses are taken.

extension WorkerSlots where T == UInt8 {
    /// `appconfig_csv_stops16` of the sixteen bytes at `offset` (which must all be in the view):
    /// bit i set when byte i ends an unquoted field (the delimiter, LF, CR), bit 16 + i when it
    /// is 0x80 or above.
    @inlinable @inline(__always)
    package func csvStops16(at offset: Int, delimiter: UInt8) -> UInt32 {
        assert(offset >= 0 && offset + 16 <= count, "a read outside the view")
        return appconfig_csv_stops16(buffer.baseAddress.unsafelyUnwrapped + offset, delimiter)
    }

    /// `appconfig_csv_record`: the well-formed record at `position` into `fields`, its lines into
    /// `lines` and whether a byte is 0x80 or above into `high`; where the next record starts, or -1
    /// when the record needs the careful scanner.
    @inlinable
    package func csvRecord(at position: Int, delimiter: UInt8, into fields: inout CSVFieldBuffer, lines: inout Int, high: inout Int32) -> Int {
        var count = 0
        let end = appconfig_csv_record(buffer.baseAddress, buffer.count, position, delimiter, fields.storage, fields.capacity, &count, &lines, &high)
        if end >= 0 { fields.count = count }
        return end
    }

    /// `appconfig_csv_records`: from `position` (a record's start), up to `ends.count` records:
    /// where each ends into `ends`, the lines each ends into `lines`. Returns how many.
    @inlinable
    package func csvRecordEnds(from position: Int, delimiter: UInt8, ends: inout [Int], lines: inout [UInt32]) -> Int {
        let cap = min(ends.count, lines.count)
        return ends.withUnsafeMutableBufferPointer { e in
            lines.withUnsafeMutableBufferPointer { l in
                appconfig_csv_records(buffer.baseAddress, buffer.count, position, delimiter, e.baseAddress, l.baseAddress, cap)
            }
        }
    }

    /// `appconfig_base64_decode_blocks`: whole blocks of 32 letters decoded in place from letter
    /// `input` to byte `output` (output <= input); both moved past what was decoded.
    @inlinable
    package func decodeBase64Blocks(input: inout Int, output: inout Int) {
        guard let base = buffer.baseAddress else { return }
        appconfig_base64_decode_blocks(base, buffer.count, &input, &output)
    }
}

extension UnsafeBufferPointer where Element == UInt8 {
    /// `appconfig_json_string_stop` from `offset`: where the first quote, backslash or byte
    /// below 0x20 is, or the end.
    @inlinable @inline(__always)
    package func jsonStringStop(from offset: Int) -> Int {
        guard let base = baseAddress, offset < count else { return count }
        return offset + appconfig_json_string_stop(base + offset, count - offset)
    }
}

extension BufferView where Element == UInt8 {
    /// `appconfig_dn_counts_plain`: whether a DN already read as plain type=value pairs has one `=`
    /// per RDN and no `"`, `#`, `<` or `>`.
    @inlinable
    package var dnCountsPlain: Bool { appconfig_dn_counts_plain(elements.baseAddress, elements.count) != 0 }
}

extension BufferView {
    /// Starts reading element `i` into the cache (a hint: nothing is read now), for a loop that
    /// will read it some iterations later.
    @inlinable @inline(__always)
    package func prefetch(at i: Int) { if let base = elements.baseAddress { appconfig_prefetch(base + i) } }
}

/// A CSV record's fields, (offset, length) pairs in memory owned here and reused record after
/// record, where `appconfig_csv_record` writes them.
@usableFromInline package struct CSVFieldBuffer: ~Copyable {
    @usableFromInline var storage: UnsafeMutablePointer<Int>
    @usableFromInline var capacity: Int
    @usableFromInline package var count = 0

    package init(capacity: Int = 64) {
        self.capacity = capacity
        storage = .allocate(capacity: 2 * capacity)
    }

    deinit { storage.deallocate() }

    @inlinable @inline(__always)
    package mutating func append(_ offset: Int, _ length: Int) {
        if count == capacity {
            let bigger = UnsafeMutablePointer<Int>.allocate(capacity: 4 * capacity)
            bigger.update(from: storage, count: 2 * count)
            storage.deallocate()
            storage = bigger
            capacity *= 2
        }
        storage[2 * count] = offset
        storage[2 * count + 1] = length
        count += 1
    }

    @inlinable @inline(__always) package func offset(_ i: Int) -> Int { storage[2 * i] }
    @inlinable @inline(__always) package func length(_ i: Int) -> Int { storage[2 * i + 1] }
}
