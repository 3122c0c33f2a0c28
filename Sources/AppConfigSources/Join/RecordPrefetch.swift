import CByteScan

/// Prefetch hints for the tables that keep each record's fields as (offset, length) pairs of
/// `UInt32`, `width` pairs a record, over one buffer of bytes (the inventory's rows, the users):
/// first the record's pairs, a few records later a field's bytes (its pair then in the cache).
enum RecordPrefetch {
    @inline(__always)
    static func ranges(_ ranges: [UInt32], record: Int, width: Int) {
        ranges.withUnsafeBufferPointer { Self.ranges($0, record: record, width: width) }
    }

    @inline(__always)
    static func ranges(_ ranges: UnsafeBufferPointer<UInt32>, record: Int, width: Int) {
        let first = record * width * 2
        appconfig_prefetch(ranges.baseAddress! + first)
        appconfig_prefetch(ranges.baseAddress! + first + width * 2 - 1)
    }

    /// A field whose length is `UInt32.max` is missing: nothing to fetch.
    @inline(__always)
    static func bytes(_ ranges: [UInt32], in bytes: UnsafePointer<UInt8>, record: Int, width: Int, field: Int) {
        ranges.withUnsafeBufferPointer { Self.bytes($0, in: bytes, record: record, width: width, field: field) }
    }

    @inline(__always)
    static func bytes(_ ranges: UnsafeBufferPointer<UInt32>, in bytes: UnsafePointer<UInt8>, record: Int, width: Int, field: Int) {
        let i = (record * width + field) * 2
        if ranges[i + 1] != .max { appconfig_prefetch(bytes + Int(ranges[i])) }
    }
}
