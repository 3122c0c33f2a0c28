@testable import AppConfigCore
@testable import AppConfigSources
import Foundation
import TestSupport
import Testing

/// A user table saved as it was read (`UserTableImage`) loads back as the same table, and only
/// with the key it was saved with: anything else is nil, and the LDIF is parsed.
@Suite("Directory images: a saved user table")
struct DirectoryImageTests {
    /// The demo's directory with a repeated DN and a user key two users share: problems to save.
    static func directory(in dir: TemporaryDirectory) throws -> String {
        var ldif = try String(contentsOfFile: Paths.fixture("demo/directory.ldif"), encoding: .utf8)
        ldif += """

            dn: CN=Repeat,OU=Sales,DC=corp,DC=example
            objectClass: user
            mail: repeat@corp.example

            dn: CN=Repeat,OU=Sales,DC=corp,DC=example
            objectClass: user
            mail: repeat2@corp.example

            dn: CN=Twin,OU=Sales,DC=corp,DC=example
            objectClass: user
            mail: REPEAT@corp.example

            """
        return try dir.write(ldif, to: "directory.ldif")
    }

    /// `hashPiece`: small, to make the key hashes in several pieces.
    static func save(_ table: UserTable, key: String, to path: String, sourceState: String? = nil, hashPiece: Int = 1 << 16) throws {
        var saved = Data()
        let written: Void? = try UserTableImage.withPieces(of: table, key: key, sourceState: sourceState, hashPiece: hashPiece) { pieces in
            for piece in pieces { saved.append(contentsOf: Array(piece)) }
        }
        try #require(written)
        try saved.write(to: URL(fileURLWithPath: path))
    }

    /// The key hashes' oracle: the case-folded hash of a key is the plain hash of its ASCII-lowered bytes.
    static func foldedHash(_ key: [UInt8]?) -> UInt64 {
        (key ?? []).map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }.withView { wordHash($0, foldingASCIICase: false) }
    }

    @Test("saved and loaded: every user's values, lines, the reader's problems and the join's, the join itself")
    func roundTrip() throws {
        try withTemporaryDirectory { dir in
            let path = try Self.directory(in: dir)
            var map = AttributeMap()
            map.keptVariables = [.displayName, .ou, .emailAddressDomain]
            let table = try LDIFReader.load(path, map: map)
            #expect(table.problems.map(\.code.rawValue) == ["ldif.duplicate-dn", "user.duplicate-key"])
            let key = UserTableImage.key(fingerprint: "123 xxh3-128:abc", map: map)
            // The key hashes made 100 users at a time: every piece in its place.
            try Self.save(table, key: key, to: dir.path("image"), hashPiece: 100)
            // Loaded under tonight's name of the same file: the messages name it.
            let link = dir.path("tonight.ldif")
            try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: path)
            let loaded = try #require(UserTableImage.load(dir.path("image"), key: key, source: link, columns: map.columns))
            #expect(loaded.count == table.count && loaded.count > 900)
            #expect(loaded.lines == table.lines)
            #expect(loaded.joinAttribute == table.joinAttribute && loaded.attributeCounts == table.attributeCounts)
            for u in 0..<table.count {
                for column in 0..<table.columns.stride {
                    #expect(loaded.value(user: u, index: column).map(Array.init) == table.value(user: u, index: column).map(Array.init))
                }
            }
            #expect(loaded.problems.map(\.code) == table.problems.map(\.code))
            #expect(loaded.problems.map(\.location.line) == table.problems.map(\.location.line))
            #expect(loaded.problems.map(\.location.dn) == table.problems.map(\.location.dn))
            #expect(loaded.problems.map { $0.message.replacingOccurrences(of: link, with: path) } == table.problems.map(\.message))
            #expect(loaded.problems.allSatisfy { $0.location.file == link })
            #expect(loaded.user(forKey: "repeat@CORP.example") == table.user(forKey: "repeat@corp.example"))
            #expect(loaded.user(forKey: "nobody@corp.example") == nil)
            // Each user's DN and join key hashes kept (the join index filed by them): each user
            // found by its key, upper-cased, as the table read finds it.
            let hashes = try #require(loaded.keyHashes)
            var wrong = 0
            for u in 0..<table.count {
                let (dn, join) = (table.value(user: u, index: UserColumns.dn).map(Array.init), table.value(user: u, index: table.columns.joinKey).map(Array.init))
                if hashes.dn(u) != Self.foldedHash(dn) || hashes.join(u) != Self.foldedHash(join) { wrong += 1 }
                if let join, loaded.user(forKey: String(decoding: join, as: UTF8.self).uppercased()) != table.user(forKey: String(decoding: join, as: UTF8.self)) { wrong += 1 }
            }
            #expect(wrong == 0)
            // Saved with its directory file's state: the fingerprint read back for that state only.
            try Self.save(table, key: key, to: dir.path("image"), sourceState: "7 8 9")
            #expect(UserTableImage.sourceFingerprint(dir.path("image"), state: "7 8 9") == "123 xxh3-128:abc")
            #expect(UserTableImage.sourceFingerprint(dir.path("image"), state: "7 8 10") == nil)
            try Self.save(table, key: key, to: dir.path("image"))
            #expect(UserTableImage.sourceFingerprint(dir.path("image"), state: "7 8 9") == nil)
            // The key asked for once the image is read: the same table, or none for another key.
            let late = try #require(UserTableImage.load(dir.path("image"), keyOnceRead: { key }, source: link, columns: map.columns))
            #expect(late.count == table.count && late.user(forKey: "repeat@corp.example") == table.user(forKey: "repeat@corp.example"))
            #expect(UserTableImage.load(dir.path("image"), keyOnceRead: { key + "x" }, source: link, columns: map.columns) == nil)
        }
    }

    @Test("a loaded image is mapped: cut shorter or written to in place afterwards, the table says it changed", arguments: ["cut shorter", "written in place"])
    func changedAfterLoading(_ change: String) throws {
        try withTemporaryDirectory { dir in
            let path = try Self.directory(in: dir)
            let map = AttributeMap()
            let key = UserTableImage.key(fingerprint: "123 xxh3-128:abc", map: map)
            try Self.save(try LDIFReader.load(path, map: map), key: key, to: dir.path("image"))
            let loaded = try #require(UserTableImage.load(dir.path("image"), key: key, source: path, columns: map.columns))
            #expect(loaded.change() == nil)
            let handle = try #require(FileHandle(forUpdatingAtPath: dir.path("image")))
            if change == "cut shorter" {
                try handle.truncate(atOffset: 100)
            } else {
                try handle.seek(toOffset: 0)
                try handle.write(contentsOf: Array("appconfig-users 2 ".utf8))
            }
            try handle.close()
            let problem = try #require(loaded.change())
            #expect(problem.code == InputCode.changed)
            #expect(problem.message.hasPrefix("\(dir.path("image")) is not used: it changed while it was read"))
        }
    }

    @Test("nil for another key, a damaged or short image, and no image of a table with groups", arguments: [
        "another fingerprint", "another map", "cut short", "a value out of bounds", "a header edited", "groups",
        "format 1", "ranges not aligned", "key hashes of another hash", "more users than ids",
    ])
    func refused(_ damage: String) throws {
        try withTemporaryDirectory { dir in
            let path = try Self.directory(in: dir)
            var map = AttributeMap()
            map.readsGroups = damage == "groups"
            let table = try LDIFReader.load(path, map: map)
            let key = UserTableImage.key(fingerprint: "123 xxh3-128:abc", map: map)
            if damage == "groups" {
                #expect(try UserTableImage.withPieces(of: table, key: key) { _ in 1 } == nil)
                return
            }
            try Self.save(table, key: key, to: dir.path("image"))
            var bytes = try Array(Data(contentsOf: URL(fileURLWithPath: dir.path("image"))))
            var tonight = key
            var other = map
            switch damage {
            case "another fingerprint": tonight = UserTableImage.key(fingerprint: "123 xxh3-128:abd", map: map)
            case "another map":
                other.set(.displayName, to: "cn")
                tonight = UserTableImage.key(fingerprint: "123 xxh3-128:abc", map: other)
            case "cut short": bytes.removeLast(4)
            case "a value out of bounds":
                // The last range pair before the key hashes, the lines and the masks (no segments: a table read
                // without them): the join key's offset, far past the values.
                #expect(table.segments == nil && table.attributeMasks?.count == table.count)
                let at = bytes.count - 8 * table.count - 16 * table.count - 8
                bytes.replaceSubrange(at..<(at + 4), with: [0xFF, 0xFF, 0xFF, 0x7F])
            case "format 1":
                // The layout before images were mapped (no padding): never read as this one.
                #expect(bytes.starts(with: Array("appconfig-users 5 ".utf8)))
                bytes[16] = UInt8(ascii: "1")
            case "ranges not aligned":
                // One byte less of the header's padding (or one more, where it has none), its
                // length told: the sizes add up, the ranges are off by one.
                let firstLine = UserTableImage.file.firstLine
                let length = try #require(Int(String(decoding: bytes[18..<(firstLine - 1)], as: UTF8.self)))
                #expect((firstLine + length) % 8 == 0 && bytes[firstLine + length - 1] == 0x0A)
                let told: Int
                if bytes[firstLine + length - 2] == 0x20 {
                    bytes.remove(at: firstLine + length - 2)
                    told = length - 1
                } else {
                    bytes.insert(0x20, at: firstLine + length - 1)
                    told = length + 1
                }
                bytes.replaceSubrange(18..<(firstLine - 1), with: Array(String(format: "%010d", told).utf8))
            case "key hashes of another hash":
                // The probe's hash another: the kept hashes are not what this program's lookups make.
                let probe = Array("\"keyHash\":\"".utf8)
                let at = try #require((0..<(bytes.count - probe.count)).first { Array(bytes[$0..<($0 + probe.count)]) == probe }) + probe.count
                bytes[at] = bytes[at] == UInt8(ascii: "1") ? UInt8(ascii: "2") : UInt8(ascii: "1")
            case "more users than ids":
                // `live` past `users` (its digits all nines, the header's length kept).
                let field = Array("\"live\":".utf8)
                var at = try #require((0..<(bytes.count - field.count)).first { Array(bytes[$0..<($0 + field.count)]) == field }) + field.count
                #expect(String(decoding: bytes[at..<(at + 4)], as: UTF8.self).hasPrefix("\(table.count)"))
                while (0x30...0x39).contains(bytes[at]) { bytes[at] = UInt8(ascii: "9"); at += 1 }
            default:
                let header = try #require(bytes.firstIndex(of: UInt8(ascii: "{")))
                bytes[header + 2] ^= 0x20
            }
            try Data(bytes).write(to: URL(fileURLWithPath: dir.path("image")))
            #expect(UserTableImage.load(dir.path("image"), key: tonight, source: path, columns: other.columns) == nil)
        }
    }
}
