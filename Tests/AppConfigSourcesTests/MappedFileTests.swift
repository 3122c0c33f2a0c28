import AppConfigCore
import AppConfigSources
import AppConfigSpec
import Foundation
import TestSupport
import Testing

/// Files mapped into memory (`MappedFile`): the inventory's bytes without a copy, and what happens
/// when the file changes under the mapping (cut shorter: no SIGBUS, zeros, and a refusal).
@Suite("mapped files")
struct MappedFileTests {
    static func file(_ bytes: [UInt8]) throws -> (dir: URL, path: String) {
        let dir = try Paths.temporaryDirectory()
        let path = dir.appendingPathComponent("input").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return (dir, path)
    }

    /// `bytes` written to a file of a new folder and mapped; `body` gets the path and the mapping.
    static func withMapped(_ bytes: [UInt8], _ body: (String, MappedFile) throws -> Void) throws {
        let (dir, path) = try file(bytes)
        defer { try? FileManager.default.removeItem(at: dir) }
        try body(path, try #require(try MappedFile(path, limit: 1 << 30)))
    }

    static func randomBytes(_ count: Int) -> [UInt8] {
        var random = SplitMix64(seed: UInt64(count))
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
    }

    @Test("the mapping holds the file's bytes, whatever its size against the page's", arguments: [1, 4095, 4096, 4097, 100_003])
    func bytesAreTheFile(size: Int) throws {
        let bytes = Self.randomBytes(size)
        try Self.withMapped(bytes) { _, mapped throws in
            #expect(Array(mapped.view) == bytes)
            #expect(mapped.change() == nil)
        }
    }

    @Test("a page written is the process's own: the file keeps its bytes")
    func writesStayPrivate() throws {
        let bytes = Self.randomBytes(10_000)
        try Self.withMapped(bytes) { path, mapped throws in
            mapped.bytes[5000] = bytes[5000] &+ 1
            #expect(mapped.bytes[5000] == bytes[5000] &+ 1)
            #expect(try [UInt8](Data(contentsOf: URL(fileURLWithPath: path))) == bytes)
            #expect(mapped.change() == nil)
        }
    }

    @Test("what cannot be mapped is left to a read (empty file), what cannot be read throws as a read does")
    func notMapped() throws {
        let (dir, path) = try Self.file([])
        defer { try? FileManager.default.removeItem(at: dir) }
        #expect(try MappedFile(path, limit: 1 << 30) == nil)
        let missing = #expect(throws: FileReadError.self) { _ = try MappedFile("/nonexistent/input", limit: 1 << 30) }
        #expect(missing?.description == "cannot read /nonexistent/input: No such file or directory")
        let folder = #expect(throws: FileReadError.self) { _ = try MappedFile(dir.path, limit: 1 << 30) }
        #expect(folder?.description == "cannot read \(dir.path): is a directory")
        let large = try Self.file(Self.randomBytes(100))
        defer { try? FileManager.default.removeItem(at: large.dir) }
        let tooLarge = #expect(throws: FileReadError.self) { _ = try MappedFile(large.path, limit: 99) }
        #expect(tooLarge?.tooLarge == true)
        #expect(tooLarge?.description == "cannot read \(large.path): it is 100 bytes; this kind of file is read up to 99 bytes")
    }

    @Test("a file cut shorter under the mapping: its lost pages read as zeros (no SIGBUS), and the change is told")
    func truncatedUnderTheMapping() throws {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let bytes = [UInt8](repeating: 0x41, count: 3 * page)
        try Self.withMapped(bytes) { path, mapped throws in
            #expect(truncate(path, off_t(page)) == 0)
            #expect(mapped.bytes[page - 1] == 0x41)
            #expect(mapped.bytes[2 * page + 7] == 0)  // a lost page: SIGBUS without the guard
            #expect(mapped.bytes[page + 1] == 0)
            let change = try #require(mapped.change())
            #expect(change.changed)
            #expect(change.description == "cannot read \(path): it changed while it was read (\(3 * page) bytes, then \(page))")
            #expect(change.problem.code == InputCode.changed)
            #expect(change.problem.message == "\(path) is not used: it changed while it was read (\(3 * page) bytes, then \(page))")
        }
    }

    @Test("unmapped once its values are copied out: the pages go, the file is still watched")
    func unmappedStillWatched() throws {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        try Self.withMapped([UInt8](repeating: 0x41, count: 3 * page)) { path, mapped throws in
            #expect(mapped.bytes[2 * page] == 0x41)
            mapped.unmap()
            mapped.unmap()  // once is enough; twice is harmless
            #expect(mapped.change() == nil)
            #expect(truncate(path, off_t(page)) == 0)
            #expect(mapped.change()?.description == "cannot read \(path): it changed while it was read (\(3 * page) bytes, then \(page))")
        }
    }

    @Test("a file written to in place (same size, a new modification time): the change is told")
    func writtenInPlace() throws {
        try Self.withMapped(Self.randomBytes(5000)) { path, mapped throws in
            let handle = try #require(FileHandle(forWritingAtPath: path))
            try handle.write(contentsOf: [1, 2, 3])
            try handle.close()
            var times = [timespec(tv_sec: 1_000_000_000, tv_nsec: 0), timespec(tv_sec: 1_000_000_000, tv_nsec: 0)]
            #expect(utimensat(AT_FDCWD, path, &times, 0) == 0)  // a new time, whatever the clock's resolution
            #expect(mapped.change()?.description == "cannot read \(path): it changed while it was read (written to in place)")
        }
    }

    @Test("a file rewritten in place with its size and modification time put back (rsync --inplace -t): the change is told")
    func writtenInPlaceTimeRestored() throws {
        try Self.withMapped(Self.randomBytes(5000)) { path, mapped throws in
            var before = stat()
            #expect(stat(path, &before) == 0)
            usleep(20_000)  // past the filesystem's time resolution
            let handle = try #require(FileHandle(forWritingAtPath: path))
            try handle.write(contentsOf: [1, 2, 3])
            try handle.close()
            var times = [before.st_atim, before.st_mtim]
            #expect(utimensat(AT_FDCWD, path, &times, 0) == 0)  // the old modification time again
            var after = stat()
            #expect(stat(path, &after) == 0 && after.st_mtim.tv_sec == before.st_mtim.tv_sec && after.st_mtim.tv_nsec == before.st_mtim.tv_nsec)
            #expect(mapped.change()?.description == "cannot read \(path): it changed while it was read (written to in place)")
        }
    }

    @Test("a file replaced by another (renamed over it): the mapping keeps the old one, no change")
    func replacedByRename() throws {
        let bytes = Self.randomBytes(9000)
        try Self.withMapped(bytes) { path, mapped throws in
            let other = path + ".new"
            try Data([1, 2, 3]).write(to: URL(fileURLWithPath: other))
            #expect(rename(other, path) == 0)
            #expect(Array(mapped.view) == bytes)
            #expect(mapped.change() == nil)
        }
    }

    @Test("an inventory whose file is cut shorter after it is read says so; the table read is the file's")
    func inventoryChanged() throws {
        let csv = "Serial Number,Username\nC02A,alice\n\"C02B\",\"bob \"\"the builder\"\"\"\n"
        let (dir, path) = try Self.file(Array(csv.utf8))
        defer { try? FileManager.default.removeItem(at: dir) }
        let table = try InventoryTable.load(path)
        let user = try #require(table.userKeySlot)
        #expect((0..<table.rowCount).map { table.string(row: $0, slot: user) } == ["alice", "bob \"the builder\""])
        #expect(try String(contentsOfFile: path, encoding: .utf8) == csv)  // the unescaping stayed in memory
        #expect(table.change() == nil)
        #expect(truncate(path, 10) == 0)
        let problem = try #require(table.change())
        #expect(problem.code == InputCode.changed)
        #expect(problem.message == "\(path) is not used: it changed while it was read (\(csv.utf8.count) bytes, then 10)")
    }
}
