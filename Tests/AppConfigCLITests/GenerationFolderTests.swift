@testable import AppConfigBatch
import Synchronization
import Dispatch
import AppConfigSpec
import Foundation
import TestSupport
import Testing

/// The directory output's publishing, below the command line.
@Suite("Generation folders")
struct GenerationFolderTests {
    @Test("threads writing into the same new subfolders at once all succeed (a race the end-to-end tests once hit)")
    func concurrentFolders() throws {
        let dir = try Paths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        for round in 0..<20 {
            let folder = try FolderSink(path: dir.appendingPathComponent("out\(round)").path)
            let failures = Mutex(0)
            DispatchQueue.concurrentPerform(iterations: 64) { i in
                let bytes: [UInt8] = [1, 2, 3]
                do {
                    try bytes.withUnsafeBytes { try folder.write($0, to: "\(i % 4)ab/device\(i).plist") }
                } catch {
                    failures.withLock { $0 += 1 }
                }
            }
            #expect(failures.withLock { $0 } == 0)
            _ = try folder.publish(closing: [])
            #expect(try FileManager.default.subpathsOfDirectory(atPath: dir.appendingPathComponent("out\(round)").path + "/").filter { $0.hasSuffix(".plist") }.count == 64)
        }
    }

    @Test("an existing folder with files is refused, not overwritten; an empty one is taken")
    func refusesRealFolder() throws {
        let dir = try Paths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        FileManager.default.createFile(atPath: dir.path + "/keep.txt", contents: Data("mine".utf8))
        #expect(throws: Problem(.outputExists, at: Location(file: dir.path),
                                "\(dir.path) exists and is not an appconfig output (a symlink to a generation) or an empty folder; give a new --out path")) {
            try FolderSink(path: dir.path)
        }
        #expect(FileManager.default.contents(atPath: dir.path + "/keep.txt") == Data("mine".utf8))
        let empty = dir.appendingPathComponent("made-by-the-admin").path
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: false)
        let sink = try FolderSink(path: empty)
        #expect(try sink.publish(closing: [("manifest.tsv", Array("appconfig-manifest 1\n\n".utf8))]) == empty)
        #expect(FolderSink.published(empty) != nil)
    }
}
