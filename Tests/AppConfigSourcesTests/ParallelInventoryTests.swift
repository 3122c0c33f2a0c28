import AppConfigCore
@testable import AppConfigSources
import AppConfigSpec
import Testing

/// An inventory scanned in parts (as a large file is, one per core) reads as one scanner reads it:
/// parts that begin inside a quoted field across lines are found and scanned again, fields with
/// doubled quotes are unescaped once the parts are known, and keys repeated across parts, bad
/// rows and continuation rows come out with the same lines and messages.
@Suite("Inventory scanned in parts")
struct ParallelInventoryTests {
    /// 6,000 rows: quoted fields across lines every 7th row, doubled quotes in keys and values,
    /// keys repeated far apart (one differing in case), a short row, a bad quote, blank lines,
    /// continuation rows and invalid UTF-8.
    static let csv: String = {
        var text = "UDID,Serial Number,Email Address,Notes\r\n"
        for i in 0..<6_000 {
            let key = i % 1_000 == 999 ? "KEY-\(i - 500)" : i % 1_111 == 0 ? "key-\(i + 7)" : "KEY-\(i)"
            switch i % 7 {
            case 0: text += "\(key),S\(i),u\(i)@x,\"first line\nsecond, \"\"quoted\"\" line\n\"\n"
            case 1: text += "\"\(key)\"\"q\",S\(i),u\(i)@x,plain\n"
            case 2 where i % 500 == 2: text += "\(key),S\(i),short\n"
            case 3 where i % 900 == 3: text += "\(key),S\(i),u\(i)@x,\"bad\"quote\n"
            case 4 where i % 300 == 4: text += "\n,,,app row\n"
            case 5 where i % 2_000 == 5: text += "\(key),S\(i),u\(i)@x,caf\u{E9} \(String(decoding: [0xC3], as: UTF8.self))\n"
            default: text += "\(key),S\(i),u\(i)@x,n\(i)\r\n"
            }
        }
        return text
    }()

    func table(parts: Int?, strict: Bool = false, _ text: String = csv) throws -> InventoryTable {
        var options = InventoryOptions()
        options.scanParts = parts
        options.strict = strict
        var bytes = Array(text.utf8)
        if let at = bytes.firstIndex(of: 0xEF) { bytes[at] = 0xC3 }  // the replacement character's first byte alone: invalid
        return try InventoryTable(bytes: bytes, file: "inv.csv", options: options)
    }

    @Test("rows, values, lines and problems equal one scanner's", arguments: [2, 3, 7, 64])
    func partsMatchOneScanner(parts: Int) throws {
        let one = try table(parts: nil)
        let split = try table(parts: parts)
        #expect(split.rowCount == one.rowCount)
        #expect(split.dataRows == one.dataRows && split.continuationRows == one.continuationRows)
        #expect(split.problems == one.problems)
        for row in 0..<min(one.rowCount, split.rowCount) {
            for slot in 0..<one.keptColumns.count where split.string(row: row, slot: slot) != one.string(row: row, slot: slot) || split.line(of: row) != one.line(of: row) {
                Issue.record("row \(row), slot \(slot): \(split.string(row: row, slot: slot)) on line \(split.line(of: row)) against \(one.string(row: row, slot: slot)) on line \(one.line(of: row))")
                return
            }
        }
        // What the file holds, checked once against the scanner in one part.
        #expect(one.string(row: 0, slot: one.slot(ofColumn: "Notes")!) == "first line\nsecond, \"quoted\" line\n")
        #expect(one.deviceKey(1) == "KEY-1\"q")
        let codes: [SourceCode] = [.csvDuplicateDeviceKey, .csvFieldCount, .csvTextAfterQuote, .csvInvalidUTF8]
        #expect(Set(one.problems.map(\.code.rawValue)) == Set(codes.map(\.rawValue)))
        #expect(one.continuationRows > 0)
    }

    @Test("--strict stops at the same first problem in parts", arguments: [1, 3])
    func strictFirstProblem(parts: Int) throws {
        let expected = #expect(throws: Problem.self) { try table(parts: nil, strict: true) }
        let got = #expect(throws: Problem.self) { try table(parts: parts, strict: true) }
        #expect(got == expected)
        // The first bad row of the file: the short row on line 6.
        #expect(expected?.code.rawValue == SourceCode.csvFieldCount.rawValue && expected?.location.line == 6)
    }

    @Test("a quoted field that never closes, in a later part: the line it opened on")
    func unterminatedQuoteInLaterPart() throws {
        let text = "UDID,Notes\n" + (0..<2_000).map { "K\($0),n\n" }.joined() + "K-last,\"never closed\nK-x,y\n"
        let one = try table(parts: nil, text), split = try table(parts: 5, text)
        #expect(split.problems == one.problems)
        #expect(one.problems.map(\.message) == ["the quoted field opened on line 2002 is never closed"])
        #expect(split.rowCount == 2_000)
    }

    @Test("a clean first part taken whole: later rows repeating its keys name them and their lines", arguments: [nil, 2, 3] as [Int?])
    func repeatsOfTheFirstPart(parts: Int?) throws {
        // Rows 0..<4000 (lines 2...4001); rows 3500 and 3600 repeat rows 10 and 20, the second in
        // other case. With 2 or 3 parts the first part has no skipped row (its ranges are taken
        // whole); in one part the repeats are in it (its rows are copied from the first skip on).
        var text = "UDID,Serial Number\n"
        for i in 0..<4_000 { text += (i == 3_500 ? "KEY-10" : i == 3_600 ? "key-20" : "KEY-\(i)") + ",S\(i)\n" }
        let table = try table(parts: parts, text)
        #expect(table.problems.map(\.code.rawValue) == [SourceCode.csvDuplicateDeviceKey.rawValue, SourceCode.csvDuplicateDeviceKey.rawValue])
        #expect(table.problems.map(\.message) == [
            "device key \"KEY-10\" is also on line 12; this row is skipped",
            "device key \"key-20\" differs only in case from \"KEY-20\" on line 22 (one file on a case-insensitive filesystem); this row is skipped",
        ])
        #expect(table.problems.map(\.location.line) == [3_502, 3_602])
        #expect(table.rowCount == 3_998)
        #expect(table.deviceKey(3_499) == "KEY-3499" && table.deviceKey(3_500) == "KEY-3501" && table.line(of: 3_500) == 3_503)
        #expect(table.deviceKey(3_997) == "KEY-3999" && table.string(row: 3_997, slot: table.slot(ofColumn: "Serial Number")!) == "S3999")
    }
}
