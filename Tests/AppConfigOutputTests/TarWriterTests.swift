@testable import AppConfigOutput
import AppConfigCore
import CFileSync
import Foundation
import Testing
import TestSupport

/// `Tar.writeMember`, with a copy beside (the manifest, in the archive and beside it) or without
/// (the index): the member's bytes where they go, also past the point where their writing to the
/// disk is started (`Tar.writebackStep`), and the member's header has its size.
@Suite("Tar closing members")
struct TarWriterTests {
    @Test("a member larger than the write-back step, copied beside or not: the archive's member (and the file beside) are its bytes",
          arguments: [true, false])
    func largeMember(copied: Bool) throws {
        var random = SplitMix64(seed: 59)
        let pieceSize = Tar.writebackStep / 2 + 4_093
        // Each piece a random megabyte repeated from its own place in it (made a byte at a time,
        // 100 MB took the debug build seconds).
        let block = (0..<(1 << 20)).map { _ in UInt8.random(in: 0...255, using: &random) }
        let pieces = (0..<3).map { i in
            var piece = Array(block[(i * 7_919)...])
            while piece.count < pieceSize { piece += block }
            return Array(piece.prefix(pieceSize))
        }
        var body: [UInt8] = []
        for piece in pieces { body += piece }
        try withTemporaryDirectory { dir in
            let archive = open(dir.path("a.tar"), O_RDWR | O_CREAT | O_TRUNC, 0o600), beside = open(dir.path("beside"), O_RDWR | O_CREAT | O_TRUNC, 0o600)
            defer { close(archive); close(beside) }
            let member = ClosingFile(name: "manifest.tsv") { emit throws(Problem) in
                for piece in pieces { try ClosingFile.emit(piece, to: emit) }
            }
            try Tar.writeMember(member, to: archive, path: "a.tar", copy: copied ? (beside, "beside") : nil)
            let tar = try Data(contentsOf: dir.url.appendingPathComponent("a.tar"))
            let besideBytes = try Data(contentsOf: dir.url.appendingPathComponent("beside"))
            let size = Int(String(decoding: tar[124..<135], as: UTF8.self), radix: 8)
            #expect(size == body.count)
            #expect(tar.count == 512 + (body.count + 511) / 512 * 512)
            // Compared by memcmp, as one Bool: a byte at a time, 100 MB took the debug build seconds.
            func holds(_ data: Data, at offset: Int) -> Bool {
                data.count >= offset + body.count && data.withUnsafeBytes { d in body.withUnsafeBytes { memcmp(d.baseAddress! + offset, $0.baseAddress!, body.count) == 0 } }
            }
            #expect(holds(tar, at: 512))
            #expect(copied ? holds(besideBytes, at: 0) && besideBytes.count == body.count : besideBytes.isEmpty)
        }
    }

    @Test("starting a file's writing to the disk: done on a file, refused on a pipe")
    func startWriteback() throws {
        try withTemporaryDirectory { dir in
            let file = open(dir.path("f"), O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            defer { close(file) }
            try writeAll(file, Array(repeating: 1, count: 1 << 20), path: "f")
            #expect(appconfig_start_writeback(file, 0, 0) == 0)
            var fds: [Int32] = [-1, -1]
            #expect(pipe(&fds) == 0)
            defer { close(fds[0]); close(fds[1]) }
            #expect(appconfig_start_writeback(fds[1], 0, 0) == -1 && errno == ESPIPE)
        }
    }
}
