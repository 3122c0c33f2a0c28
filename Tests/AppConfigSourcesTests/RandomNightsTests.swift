@testable import AppConfigCore
@testable import AppConfigSources
import Foundation
import TestSupport
import Testing

/// Chains of nights, each tonight's file made from last night's by a few seeded random edits (the
/// kinds real exports see, and the kinds a reader refuses), each night read from an image as a
/// night reads it: last night's, or one kept from an earlier night (a night that changed little
/// keeps the image it read). Every read that answers incrementally must give the whole read's
/// table (the oracle, and the same checks as the hand-made cases: `expectSame`); a read that
/// cannot tell says nil and the file is read whole. The hand-made cases test one edit each; these
/// test edits together and nights after nights, where the last fault was found (a row given twice
/// out of step, 76ef607).
@Suite("Nights of seeded random edits: every incremental read is the whole read's")
struct RandomNightsTests {
    static let nights = 8

    /// The edits a night's file gets, one or more a night. `n` makes new names and values unique.
    enum DirectoryEdit: CaseIterable {
        case attributeChanged, userAdded, entryRemoved, blockMoved, entryGivenTwice, entriesSwapped, commentAdded,
             lineFolded, entryInCRLF, dnCaseChanged, dnTakenFromAnother, lineRefused, base64Value, joinKeyTaken, firstEntryChanged

        /// An edit after which every night reads whole while it stands (a DN given twice): made
        /// for one night, then mended, as an export that went wrong once is.
        var isOneNight: Bool { self == .entryGivenTwice || self == .dnTakenFromAnother }
    }

    static func apply(_ edit: DirectoryEdit, to e: inout [String], _ n: Int, _ random: inout SplitMix64) {
        func any() -> Int { Int.random(in: 0..<e.count, using: &random) }
        func user() -> Int { let u = IncrementalDirectoryTests.users(e); return u.isEmpty ? any() : u[Int.random(in: 0..<u.count, using: &random)] }
        func lines(_ i: Int) -> [String] { e[i].components(separatedBy: "\n") }
        switch edit {
        case .attributeChanged:
            let u = user()
            e[u] = e[u].contains("\nmail: ") ? e[u].replacingOccurrences(of: "\nmail: ", with: "\nmail: c\(n)") : e[u] + "\ndescription: \(n)"
        case .userAdded:
            e.insert("dn: CN=Random \(n),OU=Sales,DC=corp,DC=example\nobjectClass: user\nmail: random\(n)@corp.example\nsAMAccountName: r\(n)",
                     at: Int.random(in: 0...e.count, using: &random))
        case .entryRemoved:
            if e.count > 20 { e.remove(at: any()) }
        case .blockMoved:
            let start = any(), end = min(e.count, start + Int.random(in: 1...60, using: &random))
            let block = Array(e[start..<end])
            e.removeSubrange(start..<end)
            e.insert(contentsOf: block, at: Int.random(in: 0...e.count, using: &random))
        case .entryGivenTwice:
            e.insert(e[user()], at: Int.random(in: 0...e.count, using: &random))
        case .entriesSwapped:
            e.swapAt(any(), any())
        case .commentAdded:
            e.insert(Bool.random(using: &random) ? "# note \(n)\n# a second line" : "", at: Int.random(in: 0...e.count, using: &random))
        case .lineFolded:
            let u = user()
            e[u] = lines(u).map { $0.hasPrefix("mail: ") && $0.count > 10 ? String($0.prefix(9)) + "\n " + $0.dropFirst(9) : $0 }.joined(separator: "\n")
        case .entryInCRLF:
            let u = any()
            e[u] = e[u].replacingOccurrences(of: "\r\n", with: "\n").replacingOccurrences(of: "\n", with: "\r\n")
        case .dnCaseChanged:
            let u = user()
            e[u] = lines(u).map { $0.hasPrefix("dn: ") ? "dn: " + $0.dropFirst(4).uppercased() : $0 }.joined(separator: "\n")
        case .dnTakenFromAnother:
            let from = user(), u = user()
            guard let dn = lines(from).first(where: { $0.hasPrefix("dn: ") }) else { return }
            e[u] = lines(u).map { $0.hasPrefix("dn: ") ? dn : $0 }.joined(separator: "\n")
        case .lineRefused:
            e[user()] += "\na line without a colon \(n)"
        case .base64Value:
            let value = Bool.random(using: &random) ? Data("Ünïcode \(n)".utf8).base64EncodedString() : "!!not base64!!"
            e[user()] += "\ndisplayName:: \(value)"
        case .joinKeyTaken:
            let from = user(), u = user()
            guard let mail = lines(from).first(where: { $0.hasPrefix("mail: ") }) else { return }
            e[u] = lines(u).filter { !$0.hasPrefix("mail: ") }.joined(separator: "\n") + "\n" + mail
        case .firstEntryChanged:
            e[0] += "\ndescription: top \(n)"
        }
    }

    @Test("directory: eight nights of random edits, each incremental read the whole read's table", arguments: 0..<16)
    func directory(seed: Int) throws {
        var random = SplitMix64(seed: 0xD17E_C700 + UInt64(seed))
        var map = AttributeMap()
        map.keptVariables = [.displayName, .ou, .emailAddressDomain, .sAMAccountName]
        try withTemporaryDirectory { dir in
            var entries = try IncrementalDirectoryTests.baseEntries()
            let first = try dir.write(IncrementalDirectoryTests.text(entries), to: "night0.ldif")
            try DirectoryImageTests.save(try LDIFReader.load(first, map: map, parts: 1, keepingSegments: true),
                                         key: UserTableImage.key(fingerprint: "0 xxh3-128:0", map: map), to: dir.path("image"))
            var answered = 0
            for night in 1...Self.nights {
                let (tonightEntries, edits) = Self.night(&entries, DirectoryEdit.allCases, \.isOneNight, night, &random) { Self.apply($0, to: &$1, $2, &$3) }
                var text = IncrementalDirectoryTests.text(tonightEntries)
                if random.next() % 8 == 0 { text.removeLast() }  // the last entry without its line break
                let name = "seed \(seed), night \(night): \(edits)"
                let path = try dir.write(text, to: "night\(night).ldif")
                let image = try #require(try UserTableImage.contents(dir.path("image"), source: path, columns: map.columns, writable: true), "\(name)")
                let read = Result { () throws(Problem) in try IncrementalDirectory.load(image, file: path, map: map, parts: 2) }
                let oracle = Result { () throws(Problem) in try LDIFReader.load(path, map: map, parts: 1, keepingSegments: true) }
                let tonight: UserTable
                switch (read, oracle) {
                case (.success(let read?), .success(let whole)):
                    IncrementalDirectoryTests.expectSame(read.table, whole, name)
                    answered += 1
                    tonight = read.table
                case (.success(nil), .success(let whole)):
                    tonight = whole
                case (.success(nil), .failure):
                    continue  // read whole, which refuses the file: no image from it
                case (.failure(let problem), .failure(let refusal)):
                    #expect(problem.code == refusal.code && problem.location == refusal.location && problem.message == refusal.message, "\(name)")
                    continue
                case (.success(.some), .failure(let refusal)):
                    Issue.record("\(name): read incrementally, where a whole read refuses the file: \(refusal.message)")
                    continue
                case (.failure(let problem), .success):
                    Issue.record("\(name): refused incrementally, where a whole read takes the file: \(problem.message)")
                    continue
                }
                // Two nights in three the image is tonight's; else last night's stays (a night that changed little).
                if random.next() % 3 != 0 {
                    try DirectoryImageTests.save(tonight, key: UserTableImage.key(fingerprint: "\(night) xxh3-128:\(night)", map: map), to: dir.path("image"))
                }
            }
            // Not a chain of nights read whole: most nights must have answered incrementally.
            #expect(answered >= 3, "seed \(seed): \(answered) of \(Self.nights) nights read incrementally")
        }
    }

    enum InventoryEdit: CaseIterable {
        case fieldChanged, rowAdded, rowRemoved, blockMoved, rowGivenTwice, rowsSwapped, blankLineAdded, fieldAcrossLines,
             rowInCRLF, keyTakenFromAnother, fieldTooFew, continuationRow, doubledQuotes, keyCaseChanged

        /// An edit a whole read refuses a row for (no image is made from such a read): made for one
        /// night, then mended.
        var isOneNight: Bool { [.rowGivenTwice, .keyTakenFromAnother, .fieldTooFew, .continuationRow].contains(self) }
    }

    /// Tonight's file from the edits that stand and, one night in four, one that is mended the night after.
    static func night<Edit>(_ standing: inout [String], _ all: [Edit], _ isOneNight: (Edit) -> Bool, _ night: Int, _ random: inout SplitMix64,
                            apply: (Edit, inout [String], Int, inout SplitMix64) -> Void) -> (tonight: [String], edits: [Edit]) {
        var edits: [Edit] = []
        let lasting = all.filter { !isOneNight($0) }, once = all.filter(isOneNight)
        for _ in 0..<Int.random(in: 1...4, using: &random) {
            let edit = lasting.randomElement(using: &random)!
            apply(edit, &standing, night * 100 + edits.count, &random)
            edits.append(edit)
        }
        var tonight = standing
        if random.next() % 4 == 0 {
            let edit = once.randomElement(using: &random)!
            apply(edit, &tonight, night * 100 + edits.count, &random)
            edits.append(edit)
        }
        return (tonight, edits)
    }

    /// A row's device key (a UDID's shape, in either case), and the row with another.
    static func key(_ row: String) -> String? { row.range(of: "[0-9A-Fa-f]{8}-[0-9A-Fa-f]{16}", options: .regularExpression).map { String(row[$0]) } }
    static func row(_ row: String, withKey new: String) -> String { key(row).map { row.replacingOccurrences(of: $0, with: new) } ?? row }

    static func apply(_ edit: InventoryEdit, to r: inout [String], _ n: Int, _ random: inout SplitMix64) {
        func row() -> Int { let d = IncrementalInventoryTests.devices(r); return d[Int.random(in: 0..<d.count, using: &random)] }
        func at() -> Int { Int.random(in: 0...r.count, using: &random) }
        /// The row without its first field (quoted fields may hold commas: the first is never quoted here but by these edits).
        func rest(_ row: String) -> Substring {
            guard row.hasPrefix("\"") else { return row.drop { $0 != "," } }
            var inQuotes = false
            let i = row.firstIndex { c in
                if c == "\"" { inQuotes.toggle() }
                return c == "," && !inQuotes
            } ?? row.endIndex
            return row[i...]
        }
        switch edit {
        case .fieldChanged:
            let d = row()
            r[d] = String(r[d][..<r[d].lastIndex(of: ",")!]) + ",2026-12-01 00:\(n % 60):00"
        case .rowAdded:
            r.insert(Self.row(r[row()], withKey: String(format: "FEED%04X-%016X", n, random.next())), at: at())
        case .rowRemoved:
            if r.count > 20 { r.remove(at: row()) }
        case .blockMoved:
            let start = Int.random(in: 0..<r.count, using: &random), end = min(r.count, start + Int.random(in: 1...60, using: &random))
            let block = Array(r[start..<end])
            r.removeSubrange(start..<end)
            r.insert(contentsOf: block, at: at())
        case .rowGivenTwice:
            r.insert(r[row()], at: at())
        case .rowsSwapped:
            let (a, b) = (row(), row())
            r.swapAt(a, b)
        case .blankLineAdded:
            r.insert("", at: at())
        case .fieldAcrossLines:
            let d = row()
            r[d] = "\"Across\nlines \(n)\"" + rest(r[d])
        case .rowInCRLF:
            let d = row()
            if !r[d].hasSuffix("\r") { r[d] += "\r" }
        case .keyTakenFromAnother:
            let (from, d) = (row(), row())
            if let taken = key(r[from]) { r[d] = Self.row(r[d], withKey: taken.lowercased()) }
        case .fieldTooFew:
            let d = row()
            r[d] = String(r[d][..<r[d].lastIndex(of: ",")!])
        case .continuationRow:
            r.insert(String(repeating: ",", count: 18), at: at())
        case .doubledQuotes:
            let d = row()
            r[d] = "\"Said \"\"\(n)\"\"\"" + rest(r[d])
        case .keyCaseChanged:
            let d = row()
            if let own = key(r[d]) { r[d] = Self.row(r[d], withKey: Bool.random(using: &random) ? own.lowercased() : own.uppercased()) }
        }
    }

    @Test("inventory: eight nights of random edits, each incremental read the whole read's table", arguments: 0..<16)
    func inventory(seed: Int) throws {
        var random = SplitMix64(seed: 0x1A7E_7000 + UInt64(seed))
        try withTemporaryDirectory { dir in
            let (header, base) = try IncrementalInventoryTests.base()
            var rows = base
            try IncrementalInventoryTests.save(try InventoryTable.load(try dir.write(IncrementalInventoryTests.text(header, rows), to: "night0.csv"),
                                                                       options: IncrementalInventoryTests.options), to: dir.path("image"))
            var answered = 0
            for night in 1...Self.nights {
                let (tonightRows, edits) = Self.night(&rows, InventoryEdit.allCases, \.isOneNight, night, &random) { Self.apply($0, to: &$1, $2, &$3) }
                var text = IncrementalInventoryTests.text(header, tonightRows)
                if random.next() % 8 == 0 { text.removeLast() }  // the last row without its line break
                let name = "seed \(seed), night \(night): \(edits)"
                let path = try dir.write(text, to: "night\(night).csv")
                let table = Result { try InventoryTable.load(path, options: IncrementalInventoryTests.options, previous: dir.path("image")) }
                let oracle = Result { try InventoryTable.load(path, options: IncrementalInventoryTests.options) }
                let tonight: InventoryTable
                switch (table, oracle) {
                case (.success(let table), .success(let whole)):
                    IncrementalInventoryTests.expectSame(table, whole, name)
                    if table.incremental != nil { answered += 1 }
                    tonight = table
                case (.failure(let problem), .failure(let refusal)):
                    #expect("\(problem)" == "\(refusal)", "\(name)")
                    continue
                case (.success, .failure(let refusal)):
                    Issue.record("\(name): read with last night's image, where a whole read refuses the file: \(refusal)")
                    continue
                case (.failure(let problem), .success):
                    Issue.record("\(name): refused with last night's image, where a whole read takes the file: \(problem)")
                    continue
                }
                // A table whose read refused a row keeps no records: no image from it (as a night writes none).
                if random.next() % 3 != 0, tonight.recordSegments != nil, (try? InventoryImage.withPieces(of: tonight) { _ in }) != nil {
                    try IncrementalInventoryTests.save(tonight, to: dir.path("image"))
                }
            }
            #expect(answered >= 3, "seed \(seed): \(answered) of \(Self.nights) nights read incrementally")
        }
    }
}
