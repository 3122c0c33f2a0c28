import AppConfigCore

/// RFC 4180 records from a byte buffer: quoted fields, doubled quotes, CRLF or LF, newlines inside
/// quotes. A quoted field is unescaped in place (its bytes only ever shrink), so every field is a
/// plain range of the buffer and nothing is copied. A scanner that does not unescape (a part of the
/// file scanned from a place that is not yet known to start a record) writes nothing: a field
/// with doubled quotes comes with its length negative (`-rawLength - 1`), for `unescape` later.
struct CSVScanner {
    struct Record {
        /// The line the record starts on.
        var line: Int
        /// A problem that makes the whole record unusable; its message, given how many lines
        /// precede the scanner's line 1 (a part of a file counts its lines from its own start).
        var error: (SourceCode, message: (_ lineOffset: Int) -> String)?
    }

    let bytes: MutableByteView
    let delimiter: UInt8
    let unescapes: Bool
    var position = 0
    var line = 1

    init(bytes: MutableByteView, delimiter: UInt8, unescapes: Bool = true) {
        self.bytes = bytes
        self.delimiter = delimiter
        self.unescapes = unescapes
    }

    /// The next record's fields as (offset, length), or nil at the end of the input.
    /// Performance-critical: every byte of the inventory passes through here once.
    mutating func next(into fields: inout CSVFieldBuffer) -> Record? {
        fields.count = 0
        let n = bytes.count
        guard position < n else { return nil }
        let b = bytes
        let start = position
        var record = Record(line: line)
        var p = position
        // Nonzero when a byte of the record is 0x80 or above: only then is it checked as UTF-8.
        var high: UInt64 = 0
        while true {
            if p < n && b[p] == UInt8(ascii: "\"") {
                let quoteLine = line
                guard let (end, fieldStart, length) = scanQuoted(from: p + 1, high: &high) else {
                    position = n
                    record.error = (.csvUnterminatedQuote, { "the quoted field opened on line \(quoteLine + $0) is never closed" })
                    return record
                }
                p = end
                fields.append(fieldStart, length)
                if p < n && b[p] != delimiter && b[p] != 0x0A && b[p] != 0x0D {
                    let field = fields.count
                    record.error = (.csvTextAfterQuote, { _ in "text after the closing quote of field \(field)" })
                    while p < n && b[p] != 0x0A { p += 1 }
                }
            } else {
                let fieldStart = p
                p = scanPlain(from: p, high: &high)
                fields.append(fieldStart, p - fieldStart)
            }
            if p >= n { break }
            let c = b[p]
            p += 1
            if c == delimiter { continue }
            if c == 0x0D && p < n && b[p] == 0x0A { p += 1 }
            line += 1
            break
        }
        position = p
        if record.error == nil, high != 0, let bad = firstInvalidUTF8(bytes.view[view: start..<p]) {
            var badLine = record.line
            for i in start..<(start + bad) where b[i] == 0x0A { badLine += 1 }
            let byte = String(b[start + bad], radix: 16, uppercase: true), recordLine = record.line
            record.error = (.csvInvalidUTF8, { "invalid UTF-8 (byte 0x\(byte))" + (badLine != recordLine ? " on line \(badLine + $0)" : "") })
        }
        return record
    }

    /// The next record when it is well formed, through `appconfig_csv_record` (C: the one loop
    /// every byte goes through); nil when it needs `next` (a quote problem, more fields than `fields`
    /// holds, text that is not UTF-8) or at the end. Only for a scanner that does not unescape
    /// (fields with doubled quotes come with their length negative, as from `next`).
    mutating func nextWellFormed(into fields: inout CSVFieldBuffer) -> Record? {
        precondition(!unescapes, "the C scanner writes nothing")
        guard position < bytes.count else { return nil }
        var lines = 0
        var high: Int32 = 0
        let end = bytes.csvRecord(at: position, delimiter: delimiter, into: &fields, lines: &lines, high: &high)
        guard end >= 0 else { return nil }
        if high != 0 && firstInvalidUTF8(bytes.view[view: position..<end]) != nil { return nil }  // `next` says where
        let record = Record(line: line)
        line += lines
        position = end
        return record
    }

    /// A quoted field whose text starts at `start` (past the opening quote), unescaped in place:
    /// copied down over every doubled quote. Returns the position past the closing quote and the
    /// field's offset and length, or nil when the quote is never closed.
    @inline(__always)
    private mutating func scanQuoted(from start: Int, high: inout UInt64) -> (end: Int, offset: Int, length: Int)? {
        let b = bytes
        let n = bytes.count
        let quote = UInt8(ascii: "\"")
        var p = start
        var out = p
        while p < n {
            let c = b[p]
            if c == quote {
                if p + 1 < n && b[p + 1] == quote {
                    if unescapes { b[out] = quote }
                    out += 1
                    p += 2
                    continue
                }
                return (p + 1, start, unescapes || out == p ? out - start : -(p - start) - 1)
            }
            if c == 0x0A { line += 1 }
            high |= UInt64(c & 0x80)
            if unescapes { b[out] = c }
            out += 1
            p += 1
        }
        return nil
    }

    /// A quoted field's text as written (`rawLength` bytes from `offset`) unescaped in place;
    /// returns its length.
    static func unescape(_ bytes: MutableByteView, offset: Int, rawLength: Int) -> Int {
        let quote = UInt8(ascii: "\"")
        var p = offset, out = offset
        while p < offset + rawLength {
            bytes[out] = bytes[p]
            p += bytes[p] == quote ? 2 : 1
            out += 1
        }
        return out - offset
    }

    /// An unquoted field from `start`: the position of the delimiter, LF or CR that ends it (or the
    /// end). Sixteen bytes at a time (`appconfig_csv_stops16`: SSE2 compares and a movemask), the
    /// file's last fifteen one by one (eight at a time, SWAR, this was most of the scan).
    @inline(__always)
    private func scanPlain(from start: Int, high: inout UInt64) -> Int {
        let b = bytes
        let n = bytes.count
        var p = start
        while p + 16 <= n {
            let bits = b.csvStops16(at: p, delimiter: delimiter)
            let stops = bits & 0xFFFF
            if stops != 0 {
                let k = stops.trailingZeroBitCount
                high |= UInt64(bits >> 16 & (1 << k - 1))  // the field's bytes only
                return p + k
            }
            high |= UInt64(bits >> 16)
            p += 16
        }
        while p < n {
            let c = b[p]
            if c == delimiter || c == 0x0A || c == 0x0D { break }
            high |= UInt64(c & 0x80)
            p += 1
        }
        return p
    }
}
