import AppConfigCore

/// A small CSV file's records, read by the inventory's RFC 4180 scanner (quotes, doubled quotes,
/// CRLF, line breaks inside quotes; a UTF-8 byte order mark at the start dropped): one reader for
/// every CSV the tool takes, so a spreadsheet's file reads the same everywhere (a per-user secrets
/// file gave devices its quotes).
package enum CSVRecords {
    package struct Record {
        /// The line the record starts on (1-based).
        package var line: Int
        package var fields: [[UInt8]]
    }

    /// Every record but blank lines, or the first record's problem (an unterminated quote, text
    /// after a closing quote) at its line. The problem's message never shows a field.
    package static func read(_ bytes: [UInt8], file: String) throws(Problem) -> [Record] {
        let start = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        let arena = BufferArena()
        let buffer = arena.slots(copying: Array(bytes[start...]) + [0])
        let view = buffer[slots: 0..<(bytes.count - start)]
        defer { buffer.fill(with: 0) }
        var scanner = CSVScanner(bytes: view, delimiter: UInt8(ascii: ","))
        var fields = CSVFieldBuffer()
        var records: [Record] = []
        while let record = scanner.next(into: &fields) {
            if let error = record.error { throw Problem(error.0, at: Location(file: file, line: record.line), error.message(0)) }
            if fields.count == 1 && fields.length(0) == 0 { continue }
            records.append(Record(line: record.line, fields: (0..<fields.count).map { Array(view.buffer[fields.offset($0)..<(fields.offset($0) + fields.length($0))]) }))
        }
        return records
    }
}
