@testable import AppConfigCore
@testable import AppConfigSources
import Foundation
import TestSupport
import Testing

/// A night whose LDIF changed: the table read from last night's image and tonight's changed
/// segments (`IncrementalDirectory`) against the table a whole read of tonight's file gives (the
/// oracle: `LDIFReader.load`), user by user, value by value, line by line, problem by problem;
/// and nil wherever the two could differ.
@Suite("Directory: a night that reads only what changed")
struct IncrementalDirectoryTests {
    /// The demo directory as entries (each without its blank line), with a few a reader refuses.
    static func baseEntries() throws -> [String] {
        let text = try String(contentsOfFile: Paths.fixture("demo/directory.ldif"), encoding: .utf8)
        var entries = text.components(separatedBy: "\n\n").filter { !$0.isEmpty }
        entries.append("dn: CN=Bad Line,OU=Sales,DC=corp,DC=example\nobjectClass: user\nthis line has no colon\nmail: bad@corp.example")
        entries.append("dn: CN=Bad Base64,OU=Sales,DC=corp,DC=example\nobjectClass: user\nmail:: !!!!")
        entries.append("# a comment between entries")
        entries.append("dn: CN=Folded,OU=Sales,DC=corp,DC=example\nobjectClass: user\nmail: fol\n ded@corp.example\ndisplayName:: RsO2bGRlZA==")
        return entries
    }

    static func text(_ entries: [String]) -> String { entries.joined(separator: "\n\n") + "\n" }

    /// Indices of the entries that are users (a `mail:` line), for edits that pick one.
    static func users(_ entries: [String]) -> [Int] { entries.indices.filter { entries[$0].contains("\nmail: ") && entries[$0].contains("objectClass: user") || entries[$0].contains("inetOrgPerson") } }

    /// Each case: tonight's entries from last night's; whether an incremental read may answer.
    static let cases: [(name: String, edit: @Sendable ([String]) -> [String], incremental: Bool)] = [
        ("a user's attribute changed", { e in var e = e; let u = users(e)[40]; e[u] = e[u].replacingOccurrences(of: "\nmail: ", with: "\nmail: x"); return e }, true),
        ("a user added in the middle", { e in var e = e; e.insert("dn: CN=New Person,OU=Sales,DC=corp,DC=example\nobjectClass: user\nmail: new.person@corp.example\nsAMAccountName: newp", at: 300); return e }, true),
        ("a user removed", { e in var e = e; e.remove(at: users(e)[10]); return e }, true),
        ("a user moved to another OU", { e in var e = e; let u = users(e)[77]; e[u] = e[u].replacingOccurrences(of: "OU=", with: "OU=Moved,OU=", options: [], range: e[u].range(of: "OU=")); return e }, true),
        ("a line refused in a changed entry, one fixed", { e in
            var e = e
            let u = users(e)[5]
            e[u] += "\nanother line without a colon"
            e[e.firstIndex { $0.contains("Bad Line") }!] = "dn: CN=Bad Line,OU=Sales,DC=corp,DC=example\nobjectClass: user\nmail: fixed@corp.example"
            return e
        }, true),
        ("comments and blank lines added before entries (lines shift)", { e in var e = e; e.insert("# added\n# twice", at: 2); e.insert("", at: 500); return e }, true),
        ("a new user's join key is a kept user's (the join's duplicate key)", { e in
            var e = e
            let taken = e[users(e)[20]].components(separatedBy: "\n").first { $0.hasPrefix("mail: ") }!
            e.insert("dn: CN=Same Mail,OU=Sales,DC=corp,DC=example\nobjectClass: user\n\(taken)", at: 5)
            return e
        }, true),
        ("an OU made a person", { e in var e = e; let ou = e.firstIndex { $0.contains("objectClass: organizationalUnit") }!; e[ou] += "\nobjectClass: person\nmail: ou.person@corp.example"; return e }, true),
        ("every third entry changed (out of step: the look-ahead)", { e in e.enumerated().map { $0.offset % 3 == 1 && $0.element.contains("\nmail: ") ? $0.element + "\ndescription: changed" : $0.element } }, true),
        ("a block of entries moved to the end (out of step: the table)", { e in Array(e[0..<100]) + Array(e[400...]) + Array(e[100..<400]) }, true),
        ("a block moved and an entry given twice (one of last night's segments matched twice): read whole, a DN twice", { e in
            // Not last: the last segment has no blank line after it, its bytes another segment's.
            Array(e[0..<100]) + Array(e[400...]) + Array(e[100..<400]) + [e[users(e).first { $0 >= 200 }!], "# the end"]
        }, false),
        ("the version line's entry changed (the head read again)", { e in var e = e; e[0] += "\ndescription: top"; return e }, true),
        ("a changed entry takes a kept user's DN: the order decides, read whole", { e in
            var e = e
            let kept = e[users(e)[30]].components(separatedBy: "\n")[0]
            let u = users(e)[60]
            e[u] = ([kept] + e[u].components(separatedBy: "\n").dropFirst()).joined(separator: "\n")
            return e
        }, false),
        ("the first entry, with the version line, moved into the middle (read again, as the matcher steps over a move: its version line refused there)", { e in
            var e = e
            e.insert(e.removeFirst(), at: 300)
            return e
        }, true),
        ("an entry moved before the version line's entry, which is kept (its version line refused where it now stands): read whole", { e in
            var e = e
            e.insert(e.remove(at: users(e)[9]), at: 0)
            return e
        }, false),
        ("a comment added before the version line, in its entry and as an entry of its own (the head read again)", { e in
            var e = e
            e[0] = "# exported tonight\n" + e[0]
            e.insert("# exported at 02:00", at: 0)
            return e
        }, true),
        ("nothing but the order of two entries", { e in var e = e; e.swapAt(users(e)[3], users(e)[4]); return e }, true),
        ("most entries new (another export): read whole, on every core", { e in e.map { $0 + "\ndescription: another" } }, false),
    ]

    /// Last night's whole read saved as an image, tonight's read from it, and the oracle.
    static func night(_ last: String, _ tonight: String, map: AttributeMap, in dir: TemporaryDirectory) throws -> (IncrementalDirectory.Read?, UserTable) {
        let lastPath = try dir.write(last, to: "last.ldif")
        let tonightPath = try dir.write(tonight, to: "tonight.ldif")
        let lastTable = try LDIFReader.load(lastPath, map: map, parts: 1, keepingSegments: true)
        #expect(lastTable.segments != nil && lastTable.attributeMasks?.count == lastTable.count)
        try DirectoryImageTests.save(lastTable, key: UserTableImage.key(fingerprint: "1 xxh3-128:1", map: map), to: dir.path("image"))
        let image = try #require(try UserTableImage.contents(dir.path("image"), source: tonightPath, columns: map.columns, writable: true))
        let read = try IncrementalDirectory.load(image, file: tonightPath, map: map, parts: 2)
        return (read, try LDIFReader.load(tonightPath, map: map, parts: 1, keepingSegments: true))
    }

    /// The same users in the same file order, each with the oracle's values, line, attributes and
    /// join, and the same segments and problems. Users are compared by their place in the file: a
    /// night that read only what changed keeps last night's ids (`UserTable.order`).
    static func expectSame(_ table: UserTable, _ oracle: UserTable, _ name: String) {
        #expect(table.count == oracle.count, "\(name)")
        #expect(oracle.order == nil && oracle.slots == oracle.count, "\(name): the oracle is a whole read")
        let ids = (0..<table.count).map { table.user(at: $0) }
        #expect(Set(ids).count == ids.count && ids.allSatisfy { (0..<table.slots).contains($0) }, "\(name): each user an id of its own")
        #expect(ids.map { table.lines[$0] } == oracle.lines, "\(name)")
        #expect(table.attributeCounts == oracle.attributeCounts, "\(name)")
        #expect(table.attributeMasks.map { masks in ids.map { masks[$0] } } == oracle.attributeMasks, "\(name)")
        for (p, u) in ids.enumerated() where p < oracle.count {
            for column in 0..<table.columns.stride where table.value(user: u, index: column).map(Array.init) != oracle.value(user: p, index: column).map(Array.init) {
                Issue.record("\(name): user \(p) (id \(u)), column \(column)")
            }
        }
        // The join index, filed by the image's hashes of the kept users' keys: each user's key,
        // upper-cased, finds whom the whole read's finds (the first of a duplicate key).
        var wrong = 0
        for p in 0..<min(table.count, oracle.count) {
            guard let join = oracle.value(user: p, index: oracle.columns.joinKey).map({ String(decoding: Array($0), as: UTF8.self) }) else { continue }
            if table.user(forKey: join.uppercased()) != oracle.user(forKey: join).map({ ids[$0] }) { wrong += 1 }
        }
        #expect(wrong == 0, "\(name): \(wrong) users' join")
        #expect(table.problems.map(\.code) == oracle.problems.map(\.code), "\(name)")
        #expect(table.problems.map(\.location) == oracle.problems.map(\.location), "\(name)")
        #expect(table.problems.map(\.message) == oracle.problems.map(\.message), "\(name)")
        // Tonight's segments as the oracle's: the night after compares with them.
        #expect(table.segments?.segments.hashes == oracle.segments?.segments.hashes, "\(name)")
        #expect(table.segments?.segments.startLines == oracle.segments?.segments.startLines, "\(name)")
        let position = Dictionary(uniqueKeysWithValues: ids.enumerated().map { (Int32($1), Int32($0)) })
        #expect(table.segments?.users.map { $0 < 0 ? $0 : position[$0] ?? -9 } == oracle.segments?.users, "\(name)")
    }

    @Test("tonight's table as a whole read gives it, or nil where they could differ", arguments: cases.indices)
    func night(_ i: Int) throws {
        let (name, edit, incremental) = Self.cases[i]
        try withTemporaryDirectory { dir in
            var map = AttributeMap()
            map.keptVariables = [.displayName, .ou, .emailAddressDomain, .sAMAccountName]
            let base = try Self.baseEntries()
            let (read, oracle) = try Self.night(Self.text(base), Self.text(edit(base)), map: map, in: dir)
            guard incremental else {
                #expect(read == nil, "\(name): read incrementally")
                return
            }
            let table = try #require(read?.table, "\(name)")
            Self.expectSame(table, oracle, name)
            #expect(read!.segmentsRead < oracle.segments!.segments.count / 2 || name.contains("every third"), "\(name): \(read!.segmentsRead) read")
        }
    }

    @Test("a night after an incremental night: read incrementally again from its image, still the whole read's table")
    func twoNights() throws {
        try withTemporaryDirectory { dir in
            let map = AttributeMap()
            let base = try Self.baseEntries()
            var second = Self.cases[1].edit(base)
            let (first, _) = try Self.night(Self.text(base), Self.text(second), map: map, in: dir)
            let table = try #require(first?.table)
            try DirectoryImageTests.save(table, key: UserTableImage.key(fingerprint: "2 xxh3-128:2", map: map), to: dir.path("image2"))
            second[Self.users(second)[50]] += "\ndescription: the third night"
            let path = try dir.write(Self.text(second), to: "third.ldif")
            let image = try #require(try UserTableImage.contents(dir.path("image2"), source: path, columns: map.columns, writable: true))
            let again = try #require(try IncrementalDirectory.load(image, file: path, map: map))
            #expect(again.segmentsRead == 1 && again.usersRead == 1)
            let oracle = try LDIFReader.load(path, map: map, parts: 1, keepingSegments: true)
            Self.expectSame(again.table, oracle, "third night")
            // Its ids are not its users (one user re-read each night): saved, the image says which are,
            // and loaded whole (a night whose export did not change) it is still the whole read's table.
            #expect(again.table.slots == table.slots + again.usersRead && again.table.slots > oracle.count && again.table.order?.count == oracle.count,
                    "\(table.slots) + \(again.usersRead) ids, \(oracle.count) users")
            try DirectoryImageTests.save(again.table, key: UserTableImage.key(fingerprint: "3 xxh3-128:3", map: map), to: dir.path("image3"))
            let loaded = try #require(UserTableImage.load(dir.path("image3"), key: UserTableImage.key(fingerprint: "3 xxh3-128:3", map: map),
                                                          source: path, columns: map.columns))
            #expect(loaded.order == again.table.order)
            Self.expectSame(loaded, oracle, "the third night's image")
        }
    }

    @Test("a comment entry before the version line's changed: whether that entry was first last night is not known, read whole; the same comment, read incrementally")
    func commentBeforeVersion() throws {
        try withTemporaryDirectory { dir in
            let base = try Self.baseEntries()
            var tonight = base
            tonight[Self.users(tonight)[12]] += "\ndescription: x"
            let last = Self.text(["# exported at 01:00"] + base)
            let (changed, _) = try Self.night(last, Self.text(["# exported at 02:00"] + tonight), map: AttributeMap(), in: dir)
            #expect(changed == nil)
            let (same, oracle) = try Self.night(last, Self.text(["# exported at 01:00"] + tonight), map: AttributeMap(), in: dir)
            Self.expectSame(try #require(same?.table), oracle, "the same comment")
            #expect(same?.segmentsRead == 1)
        }
    }

    @Test("a segment's first line is a version line: after blank lines and comments, folded, in any case; not a later line, not another attribute",
          arguments: [("version: 1\ndn: a", true), ("# c\n  continued\n\nVERSION: 1\n", true), ("\r\nver\n sion: 1\r\n", true), ("Version:: MQ==", true),
                      ("dn: a\nversion: 1", false), ("versions: 1", false), ("version : 1", false), ("# version: 1", false), ("versio", false), ("", false)])
    func versionLine(_ text: String, _ expected: Bool) {
        #expect(Array(text.utf8).withView { IncrementalDirectory.startsWithVersionLine($0) } == expected, "\(text)")
    }

    @Test("last night's read found a DN given twice: tonight is read whole")
    func duplicateLastNight() throws {
        try withTemporaryDirectory { dir in
            var base = try Self.baseEntries()
            base.append(base[Self.users(base)[7]])
            var tonight = base
            tonight[Self.users(tonight)[2]] += "\ndescription: x"
            let (read, oracle) = try Self.night(Self.text(base), Self.text(tonight), map: AttributeMap(), in: dir)
            #expect(read == nil)
            #expect(oracle.problems.contains { $0.code.rawValue == "ldif.duplicate-dn" })
        }
    }

    @Test("segments: ends after blank lines that no continued line follows, LF or CRLF; the same in parts or whole, from a file or bytes", arguments: [1, 2, 3])
    func segments(parts: Int) throws {
        let text = "version: 1\ndn: a\nx: 1\n\ndn: b\r\ny: 2\r\n\r\n\n\ndn: c\nz: folded\n \n continued\n\n# end\n"
        let bytes = Array(text.utf8)
        let whole = bytes.withView { LDIFSegments.scan($0, parts: 1) }
        #expect(whole.startLines == [1, 5, 8, 9, 10, 15])
        #expect(whole.ends == [23, 38, 39, 40, 70, 76])
        #expect(bytes.withView { LDIFSegments.scan($0, parts: parts) } == whole)
        try withTemporaryDirectory { dir in
            let file = try dir.write(text, to: "s.ldif")
            // Mapped and read, in windows from smaller than a segment (grown to hold one) to the whole file.
            for mapped in [true, false] {
                for window in [1, 7, 16, 40, 4 << 20] {
                    let fromFile = try LDIFSegments.scan(file: file, parts: parts, window: window, mapped: mapped)
                    #expect(fromFile.hashes == whole.hashes && fromFile.startLines == whole.startLines && fromFile.ends == whole.ends,
                            "mapped \(mapped), window \(window)")
                }
            }
        }
    }

    @Test("segments of a file mapped: the same as read, on the rule's random text cut in small windows")
    func segmentsMappedWindows() throws {
        var random = SplitMix64(seed: 11)
        let alphabet: [UInt8] = [0x0A, 0x0A, 0x0A, 0x0D, 0x20, 0x61, 0x61, 0x23]
        let bytes = (0..<20_000).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &random)] }
        let expected = Self.referenceSegments(bytes)
        try withTemporaryDirectory { dir in
            let file = try dir.write(String(decoding: bytes, as: UTF8.self), to: "r.ldif")
            for window in [3, 64, 1000] {
                let mapped = try LDIFSegments.scan(file: file, parts: 1, window: window)
                #expect(mapped.ends == expected.ends && mapped.startLines == expected.startLines, "window \(window)")
                let read = try LDIFSegments.scan(file: file, parts: 1, window: window, mapped: false)
                #expect(mapped == read && mapped.ends == read.ends, "window \(window)")
            }
        }
    }

    /// The rule, a byte at a time: a segment ends after a newline that ends a blank line (nothing,
    /// or only a CR, since the segment's start or the newline before) when a byte follows that is
    /// not a space.
    static func referenceSegments(_ b: [UInt8]) -> (ends: [Int], startLines: [UInt32]) {
        var ends: [Int] = [], starts: [UInt32] = [], start = 0, line: UInt32 = 1
        var startLine: UInt32 = 1
        for j in b.indices where b[j] == 0x0A {
            line += 1
            let blank = j == start || b[j - 1] == 0x0A || (b[j - 1] == 0x0D && (j - 1 == start || b[j - 2] == 0x0A))
            if blank && j + 1 < b.count && b[j + 1] != 0x20 {
                ends.append(j + 1)
                starts.append(startLine)
                start = j + 1
                startLine = line
            }
        }
        if start < b.count {
            ends.append(b.count)
            starts.append(startLine)
        }
        return (ends, starts)
    }

    @Test("segments sixteen bytes at a time: the rule's ends and lines on seeded random text (LF, CR, spaces) and past a call's room", arguments: 0..<6)
    func segmentsRandom(seed: Int) throws {
        var random = SplitMix64(seed: UInt64(seed))
        let alphabet: [UInt8] = [0x0A, 0x0A, 0x0A, 0x0D, 0x20, 0x61, 0x61, 0x23]
        for length in [0, 1, 2, 3, 15, 16, 17, 18, 31, 33, 64, 100, 257, 1000] {
            let bytes = (0..<length).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &random)] }
            let found = bytes.withView { LDIFSegments.scan($0, parts: 1) }
            let expected = Self.referenceSegments(bytes)
            #expect(found.ends == expected.ends, "seed \(seed), length \(length): \(bytes)")
            #expect(found.startLines == expected.startLines, "seed \(seed), length \(length)")
            #expect(bytes.withView { LDIFSegments.scan($0, parts: 3) }.ends == expected.ends, "in parts: seed \(seed), length \(length)")
        }
        // More segments than one call of the scanner has room for (4096).
        let many = Array(String(repeating: "dn: x\r\n\r\n", count: 9000 + seed).utf8)
        let expected = Self.referenceSegments(many)
        #expect(expected.ends.count == 9000 + seed)
        #expect(many.withView { LDIFSegments.scan($0, parts: 1) }.ends == expected.ends)
        #expect(many.withView { LDIFSegments.scan($0, parts: 1) }.startLines == expected.startLines)
    }
}
