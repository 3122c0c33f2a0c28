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

    static func save(_ table: UserTable, key: String, to path: String) throws {
        let saved = try UserTableImage.withPieces(of: table, key: key) { pieces in
            Data(pieces.flatMap { Array($0) })
        }
        try #require(saved).write(to: URL(fileURLWithPath: path))
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
            try Self.save(table, key: key, to: dir.path("image"))
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
        }
    }

    @Test("nil for another key, a damaged or short image, and no image of a table with groups", arguments: [
        "another fingerprint", "another map", "cut short", "a value out of bounds", "a header edited", "groups",
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
                // The last range pair before the lines: the join key's offset, far past the values.
                let at = bytes.count - 4 * table.count - 8
                bytes.replaceSubrange(at..<(at + 4), with: [0xFF, 0xFF, 0xFF, 0x7F])
            default:
                let header = try #require(bytes.firstIndex(of: UInt8(ascii: "{")))
                bytes[header + 2] ^= 0x20
            }
            try Data(bytes).write(to: URL(fileURLWithPath: dir.path("image")))
            #expect(UserTableImage.load(dir.path("image"), key: tonight, source: path, columns: other.columns) == nil)
        }
    }
}
