@testable import AppConfigCore
@testable import AppConfigSources
import Foundation
import TestSupport
import Testing

/// A night whose inventory changed: the table read from last night's image and tonight's changed
/// records (`IncrementalInventory`) against the table a whole read of tonight's file gives (the
/// oracle: `InventoryTable.load` without an image), row by row, value by value, line by line,
/// problem by problem; and a whole read wherever the two could differ.
@Suite("Inventory: a night that parses only the records that changed")
struct IncrementalInventoryTests {
    /// The demo inventory's header and rows, with a field across lines, doubled quotes and a blank line among them.
    static func base() throws -> (header: String, rows: [String]) {
        let text = try String(contentsOfFile: Paths.fixture("demo/inventory.csv"), encoding: .utf8)
        var lines = text.replacingOccurrences(of: "\r\n", with: "\n").components(separatedBy: "\n").filter { !$0.isEmpty }
        let header = lines.removeFirst()
        lines[10] = "\"Two\nlines, \"\"quoted\"\"\"" + lines[10].drop { $0 != "," }
        lines[20] = "\"He said \"\"hi\"\"\"" + lines[20].drop { $0 != "," }
        lines.insert("", at: 30)
        return (header, lines)
    }

    static func text(_ header: String, _ rows: [String]) -> String { ([header] + rows).joined(separator: "\n") + "\n" }

    /// The rows that are devices (not the blank line), for edits that pick one.
    static func devices(_ rows: [String]) -> [Int] { rows.indices.filter { !rows[$0].isEmpty } }

    /// A row's UDID (the device key): quoted fields hold commas, so it is found by its shape.
    static func udid(_ row: String) -> String {
        String(row[row.range(of: "[0-9A-F]{8}-[0-9A-F]{16}", options: .regularExpression)!])
    }

    static func replacingKey(_ row: String, with key: String) -> String { row.replacingOccurrences(of: udid(row), with: key) }

    /// Each case: tonight's rows from last night's; whether tonight's rows are read incrementally.
    static let cases: [(name: String, edit: @Sendable ([String]) -> [String], incremental: Bool)] = [
        ("a row's email changed", { r in var r = r; let d = devices(r)[40]; r[d] = r[d].replacingOccurrences(of: "@corp", with: "x@corp"); return r }, true),
        ("a row added in the middle", { r in var r = r; r.insert(replacingKey(r[devices(r)[300]], with: "NEW-DEVICE-0000000001"), at: 300); return r }, true),
        ("a row removed", { r in var r = r; r.remove(at: devices(r)[100]); return r }, true),
        ("blank lines added (every line after shifts)", { r in var r = r; r.insert("", at: 2); r.insert("", at: 500); return r }, true),
        ("a changed row with a field across lines and doubled quotes", { r in
            var r = r
            let d = devices(r)[60]
            r[d] = "\"Three\nlines\n\"\"here\"\"\"" + r[d].drop { $0 != "," }
            return r
        }, true),
        ("the row with a field across lines changed elsewhere", { r in var r = r; r[10] = r[10].replacingOccurrences(of: "@corp", with: "y@corp"); return r }, true),
        ("a changed row ends in CRLF", { r in var r = r; let d = devices(r)[70]; r[d] = r[d].replacingOccurrences(of: "Technician", with: "Manager") + "\r"; return r }, true),
        ("every third row changed (out of step: the look-ahead)", { r in r.enumerated().map { $0.offset % 3 == 1 && !$0.element.isEmpty ? $0.element.replacingOccurrences(of: "Technician", with: "Lead") : $0.element } }, true),
        ("a block of rows moved to the end (out of step: the table)", { r in Array(r[0..<100]) + Array(r[400...]) + Array(r[100..<400]) }, true),
        ("a kept row given twice, out of step (the table matches both copies to one row; the whole read refuses the second)", { r in
            Array(r[0..<100]) + Array(r[400...]) + Array(r[100..<400]) + [r[devices(r)[250]]]
        }, false),
        ("a kept row given twice in a row (the second read tonight: its key is a kept row's)", { r in var r = r; r.insert(r[devices(r)[250]], at: devices(r)[250]); return r }, false),
        ("two rows swapped", { r in var r = r; r.swapAt(devices(r)[3], devices(r)[4]); return r }, true),
        ("the last row without its line break", { r in var r = r; r[r.count - 1] = r[r.count - 1].replacingOccurrences(of: "Technician", with: "Manager"); return r }, true),
        ("a changed row takes a kept row's device key (the whole read refuses it)", { r in
            var r = r
            let d = devices(r)[90]
            r[d] = replacingKey(r[d], with: udid(r[devices(r)[30]]).lowercased())
            return r
        }, false),
        ("a changed row has a field too few", { r in var r = r; let d = devices(r)[50]; r[d] = String(r[d][..<r[d].lastIndex(of: ",")!]); return r }, false),
        ("a changed row names no device (a continuation row)", { r in var r = r; r.insert(String(repeating: ",", count: 18), at: 200); return r }, false),
        ("most rows new (another export)", { r in r.map { $0.isEmpty ? $0 : $0.replacingOccurrences(of: "Technician", with: "Engineer").replacingOccurrences(of: "Manager", with: "Engineer") + "x" } }, false),
    ]

    static var options: InventoryOptions {
        var o = InventoryOptions()
        o.keepRecords = true
        o.scanParts = 2
        return o
    }

    /// Last night's whole read saved as an image, tonight's read with it, and the oracle.
    static func night(_ last: String, _ tonight: String, lastName: String = "last.csv", in dir: TemporaryDirectory) throws -> (InventoryTable, InventoryTable) {
        let lastTable = try InventoryTable.load(try dir.write(last, to: lastName), options: options)
        let image = dir.path("image")
        try save(lastTable, to: image)
        let path = try dir.write(tonight, to: "tonight.csv")
        return (try InventoryTable.load(path, options: options, previous: image), try InventoryTable.load(path, options: options))
    }

    static func save(_ table: InventoryTable, to path: String) throws {
        var data = Data()
        let saved: Void? = try InventoryImage.withPieces(of: table) { pieces in pieces.forEach { $0.withUnsafeBytes { data.append(contentsOf: $0) } } }
        _ = try #require(saved, "the table keeps its records")
        try data.write(to: URL(fileURLWithPath: path))
    }

    static func expectSame(_ table: InventoryTable, _ oracle: InventoryTable, _ name: String) {
        #expect(table.rowCount == oracle.rowCount && table.dataRows == oracle.dataRows && table.continuationRows == oracle.continuationRows, "\(name)")
        #expect(table.header == oracle.header && table.keptColumns == oracle.keptColumns, "\(name)")
        for row in 0..<min(table.rowCount, oracle.rowCount) {
            if table.line(of: row) != oracle.line(of: row) { Issue.record("\(name): row \(row)'s line \(table.line(of: row)), not \(oracle.line(of: row))") }
            for slot in table.keptColumns.indices where Array(table.value(row: row, slot: slot)) != Array(oracle.value(row: row, slot: slot)) {
                Issue.record("\(name): row \(row), slot \(slot): \(table.string(row: row, slot: slot)), not \(oracle.string(row: row, slot: slot))")
            }
        }
        #expect(table.problems.map(\.code) == oracle.problems.map(\.code), "\(name)")
        #expect(table.problems.map(\.location) == oracle.problems.map(\.location), "\(name)")
        #expect(table.problems.map(\.message) == oracle.problems.map(\.message), "\(name)")
        #expect(table.exportChecks.map(\.message) == oracle.exportChecks.map(\.message), "\(name)")
        // Tonight's records as the oracle's: the night after compares with them.
        #expect(table.recordSegments?.records == oracle.recordSegments?.records, "\(name)")
        #expect(table.recordSegments?.rows == oracle.recordSegments?.rows, "\(name)")
        #expect(table.deviceKeyHashes(0..<table.rowCount) == oracle.deviceKeyHashes(0..<oracle.rowCount), "\(name)")
    }

    @Test("tonight's table as a whole read gives it; read whole where they could differ", arguments: cases.indices)
    func night(_ i: Int) throws {
        let (name, edit, incremental) = Self.cases[i]
        try withTemporaryDirectory { dir in
            let (header, rows) = try Self.base()
            var tonight = Self.text(header, edit(rows))
            if name.contains("without its line break") { tonight.removeLast() }
            let (table, oracle) = try Self.night(Self.text(header, rows), tonight, in: dir)
            Self.expectSame(table, oracle, name)
            if incremental {
                let read = try #require(table.incremental, "\(name): read whole")
                #expect(read.image == dir.path("image") && read.records == oracle.recordSegments?.records.count, "\(name)")
                #expect(read.recordsRead < read.records / 2 || name.contains("every third"), "\(name): \(read.recordsRead) read")
                // A row removed or a block moved has nothing new to read (two rows swapped: one of them
                // read again, as the matcher steps over a change in order).
                #expect((read.recordsRead == 0) == (name.contains("removed") || name.contains("moved")), "\(name): \(read.recordsRead) read")
            } else {
                #expect(table.incremental == nil, "\(name): read incrementally")
            }
        }
    }

    @Test("the counts of what was read: one row changed, one added, one removed")
    func counts() throws {
        try withTemporaryDirectory { dir in
            let (header, rows) = try Self.base()
            var tonight = rows
            tonight[Self.devices(rows)[5]] = tonight[Self.devices(rows)[5]].replacingOccurrences(of: "Technician", with: "Manager")
            tonight.remove(at: Self.devices(rows)[7])
            tonight.insert(Self.replacingKey(rows[Self.devices(rows)[9]], with: "NEW-DEVICE-0000000002"), at: 8)
            let (table, oracle) = try Self.night(Self.text(header, rows), Self.text(header, tonight), in: dir)
            Self.expectSame(table, oracle, "counts")
            let read = try #require(table.incremental)
            #expect(read.recordsRead == 2 && read.rowsRead == 2 && read.records == rows.count)
        }
    }

    @Test("a night after an incremental night: read incrementally again from its image, still the whole read's table")
    func twoNights() throws {
        try withTemporaryDirectory { dir in
            let (header, rows) = try Self.base()
            var second = Self.cases[1].edit(rows)
            let (first, _) = try Self.night(Self.text(header, rows), Self.text(header, second), in: dir)
            #expect(first.incremental?.recordsRead == 1)
            try Self.save(first, to: dir.path("image2"))
            second[Self.devices(second)[50]] = second[Self.devices(second)[50]].replacingOccurrences(of: "Technician", with: "Director")
            let path = try dir.write(Self.text(header, second), to: "third.csv")
            let again = try InventoryTable.load(path, options: Self.options, previous: dir.path("image2"))
            #expect(again.incremental?.recordsRead == 1 && again.incremental?.rowsRead == 1)
            Self.expectSame(again, try InventoryTable.load(path, options: Self.options), "third night")
        }
    }

    @Test("the values grown by half since the last whole read: read whole, and counted from there again")
    func poolGrowth() throws {
        try withTemporaryDirectory { dir in
            let (header, rows) = try Self.base()
            // Two rows in five changed each night: all their values appended to the image's.
            func changed(_ rows: [String], _ residues: Set<Int>) -> [String] {
                rows.enumerated().map { residues.contains($0.offset % 5) && !$0.element.isEmpty ? $0.element.replacingOccurrences(of: "@corp", with: "z@corp") : $0.element }
            }
            let first = changed(rows, [0, 1])
            let (one, _) = try Self.night(Self.text(header, rows), Self.text(header, first), in: dir)
            let read = try #require(one.incremental)
            #expect(read.recordsRead == rows.indices.filter { $0 % 5 < 2 && !rows[$0].isEmpty }.count)
            #expect(one.poolAtFullRead < one.ownPool!.count)
            try Self.save(one, to: dir.path("image2"))
            let path = try dir.write(Self.text(header, changed(first, [2, 3])), to: "second.csv")
            let two = try InventoryTable.load(path, options: Self.options, previous: dir.path("image2"))
            #expect(two.incremental == nil)
            Self.expectSame(two, try InventoryTable.load(path, options: Self.options), "grown by half")
            #expect(two.poolAtFullRead == two.ownPool!.count)
        }
    }

    @Test("no image from a read that refused a row; another header, or a damaged image, is read whole")
    func wholeReads() throws {
        try withTemporaryDirectory { dir in
            let (header, rows) = try Self.base()
            var refused = rows
            refused.insert("not,enough,fields", at: 3)
            let refusing = try InventoryTable.load(try dir.write(Self.text(header, refused), to: "refused.csv"), options: Self.options)
            #expect(refusing.problems.map(\.code.rawValue) == [SourceCode.csvFieldCount.rawValue] && refusing.recordSegments == nil)
            #expect(try InventoryImage.withPieces(of: refusing) { _ in } == nil)

            let renamed = header.replacingOccurrences(of: "Department", with: "Dept")
            let (other, oracle) = try Self.night(Self.text(header, rows), Self.text(renamed, rows), in: dir)
            #expect(other.incremental == nil)
            Self.expectSame(other, oracle, "another header")

            var bytes = try Data(contentsOf: URL(fileURLWithPath: dir.path("image")))
            bytes.removeLast(4)
            try bytes.write(to: URL(fileURLWithPath: dir.path("image")))
            #expect(try InventoryImage.contents(dir.path("image")) == nil)
            let path = try dir.write(Self.text(header, Self.cases[0].edit(rows)), to: "damaged.csv")
            let whole = try InventoryTable.load(path, options: Self.options, previous: dir.path("image"))
            #expect(whole.incremental == nil)
            Self.expectSame(whole, try InventoryTable.load(path, options: Self.options), "a damaged image")
        }
    }

    @Test("records sixteen bytes at a time: the scanner's ends and lines on seeded random text (quotes, delimiters, LF, CR), in parts or not", arguments: 0..<8)
    func recordsRandom(seed: Int) throws {
        var random = SplitMix64(seed: UInt64(seed))
        let alphabet: [UInt8] = Array("aa,,\"\"\n\r b".utf8)
        for length in [0, 1, 2, 3, 15, 16, 17, 18, 31, 33, 64, 100, 257, 1000, 5000] {
            let bytes = (0..<length).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &random)] }
            for parts in [1, 3] {
                let split = InventoryRecords.splitBothWays(bytes, delimiter: UInt8(ascii: ","), parts: parts)
                #expect(split.found == split.scanner, "seed \(seed), length \(length), parts \(parts): \(String(decoding: bytes, as: UTF8.self).debugDescription)")
                #expect(split.foundLines == split.scannerLines, "seed \(seed), length \(length), parts \(parts)")
            }
        }
        // More records than one call of the scanner has room for (4096).
        let many = InventoryRecords.splitBothWays(Array(String(repeating: "a,\"b\r\nc\"\r\n", count: 9000 + seed).utf8), delimiter: UInt8(ascii: ","), parts: 1)
        #expect(many.scanner.count == 9000 + seed)
        #expect(many.found == many.scanner && many.foundLines == many.scannerLines)
    }
}
