@testable import AppConfigOutput
import AppConfigCore
import Foundation
import Testing
import TestSupport

/// `DirectWrites`: an archive's members written past the page cache, staged in whole blocks; the
/// file holds exactly the bytes handed over, in order, then what is written through the cache.
@Suite("Direct writes")
struct DirectWritesTests {
    /// Whether the temporary folder on a disk takes direct writes (a disk's file system; not tmpfs).
    static let supported: Bool = {
        guard let dir = try? TemporaryDirectory(onDisk: true) else { return false }
        defer { try? FileManager.default.removeItem(at: dir.url) }
        let path = dir.path("probe")
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        defer { close(fd) }
        return DirectWrites(path: path, shownAs: path) != nil
    }()
    static let unsupported: Comment = "the disk folder (APPCONFIG_TEST_DISK_DIR, else the temporary folder) takes no direct writes (tmpfs)"

    @Test("pieces of every size about a block and the staging buffer: the file is their bytes, then the cache's, past the cache",
          .enabled(if: supported, unsupported),
          arguments: [1, 4096, 16_384])
    func piecesJoin(largest: Int) throws {
        var random = SplitMix64(seed: UInt64(largest))
        let sizes = (0..<300).map { i in [0, 1, 4095, 4096, 4097, 16_383, 16_384][i % 7] % (largest + 1) + Int.random(in: 0...3, using: &random) }
        let pieces = sizes.map { n in (0..<n).map { _ in UInt8.random(in: 0...255, using: &random) } }
        try withTemporaryDirectory(onDisk: true) { dir in
            let path = dir.path("archive")
            let fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0o644)
            defer { close(fd) }
            let direct = try #require(DirectWrites(path: path, shownAs: "archive.tar", capacity: 16_384))
            // In groups, as the chunk writer hands them.
            for group in stride(from: 0, to: pieces.count, by: 7) {
                try Self.withViews(Array(pieces[group..<min(group + 7, pieces.count)])) { views throws(Problem) in try direct.write(views) }
            }
            // Then a file's bytes, read into the staging buffer.
            let copied = (0..<(3 * largest + 5)).map { _ in UInt8.random(in: 0...255, using: &random) }
            let source = dir.path("lines")
            try Data(copied).write(to: URL(fileURLWithPath: source))
            let sourceFD = open(source, O_RDONLY)
            defer { close(sourceFD) }
            try direct.copy(from: sourceFD, count: copied.count, shownAs: "lines")
            let staged = pieces.joined().count + copied.count
            try direct.finish(through: fd)
            #expect(lseek(fd, 0, SEEK_CUR) == staged)
            let after = Array("then through the cache".utf8)
            #expect(write(fd, after, after.count) == after.count)
            // The whole blocks written directly never came into the page cache.
            let whole = staged / DirectWrites.block * DirectWrites.block
            if whole > 0 {
                let map = try #require(mmap(nil, whole, PROT_READ, MAP_SHARED, fd, 0))
                defer { munmap(map, whole) }
                var resident = [UInt8](repeating: 0, count: whole / Int(sysconf(Int32(_SC_PAGESIZE))))
                #expect(mincore(map, whole, &resident) == 0)
                #expect(resident.allSatisfy { $0 & 1 == 0 })
            }
            #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data(Array(pieces.joined()) + copied + after))
        }
    }

    @Test("a line file shorter than its count: refused with its name",
          .enabled(if: supported, unsupported))
    func shortSource() throws {
        try withTemporaryDirectory(onDisk: true) { dir in
            let path = dir.path("archive")
            let fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0o644)
            defer { close(fd) }
            let direct = try #require(DirectWrites(path: path, shownAs: "out.tar"))
            let source = try dir.write("ten bytes!", to: "lines")
            let sourceFD = open(source, O_RDONLY)
            defer { close(sourceFD) }
            let error = #expect(throws: Problem.self) { try direct.copy(from: sourceFD, count: 11, shownAs: "index.tsv") }
            #expect(error == Problem(.outputWrite, at: Location(file: "out.tar"), "cannot read index.tsv back: it is shorter than written"))
        }
    }

    @Test("end to end: a 10k fleet as a tar and as a DDM tar in the disk folder, the same bytes as the archive streamed (never direct)",
          .enabled(if: supported, unsupported),
          arguments: [[String](), ["--delivery", "ddm", "--asset-base-url", "https://cdn.example.com/appconfig"]])
    func wholeArchive(_ delivery: [String]) throws {
        try withTemporaryDirectory(onDisk: true) { dir in
            let fleet = dir.path("fleet")
            #expect(try runProcess(Paths.root.appendingPathComponent("tools/gen-fleet").path, ["--devices", "10000", "--out", fleet]).status == 0)
            let arguments = ["render", "--spec", Paths.fixture("demo/spec.xml"), "--values", Paths.fixture("demo/values.json"),
                             "--inventory", fleet + "/inventory.csv", "--directory", fleet + "/directory.ldif", "--quiet"] + delivery
            let tar = dir.path("out.tar")
            let written = try runProcess(Paths.appconfigBinary, arguments + ["--tar", tar])
            #expect(written.status == 3, "\(written.stderr)")
            let streamed = try runProcessData(Paths.appconfigBinary, arguments + ["--tar", "-"])
            #expect(streamed.status == 3, "\(streamed.stderr)")
            let archive = try #require(FileManager.default.contents(atPath: tar))
            #expect(archive.count > 16 << 20)  // two staging buffers and more
            #expect(archive == streamed.stdout)
        }
    }

    /// Views of each array, for the length of `body`.
    static func withViews(_ arrays: [[UInt8]], from i: Int = 0, _ views: [ByteView] = [], _ body: ([ByteView]) throws(Problem) -> Void) throws(Problem) {
        guard i < arrays.count else { return try body(views) }
        try arrays[i].withView { view throws(Problem) in try withViews(arrays, from: i + 1, views + [view], body) }
    }

    @Test("tmpfs takes no direct writes: its pages are the file", .enabled(if: FileManager.default.fileExists(atPath: "/dev/shm"), "no /dev/shm"))
    func notOnTmpfs() throws {
        let path = "/dev/shm/appconfig-direct-\(getpid())"
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        defer { close(fd); unlink(path) }
        #expect(fd >= 0)
        #expect(DirectWrites(path: path, shownAs: path) == nil)
    }
}
