@testable import AppConfigOutput
import AppConfigCore
import Synchronization
import Dispatch
import Foundation
import TestSupport
import Testing

/// The directory output's publishing, below the command line.
@Suite("Generation folders")
struct GenerationFolderTests {
    @Test("threads writing into the same new subfolders at once all succeed (a race the end-to-end tests once hit)")
    func concurrentFolders() throws {
        try withTemporaryDirectory { dir in
            for round in 0..<20 {
                let folder = try GenerationFolder(path: dir.path("out\(round)"))
                let failures = Mutex(0)
                DispatchQueue.concurrentPerform(iterations: 64) { i in
                    let bytes: [UInt8] = [1, 2, 3]
                    do {
                        try folder.write(bytes, to: "\(i % 4)ab/device\(i).plist")
                    } catch {
                        failures.withLock { $0 += 1 }
                    }
                }
                #expect(failures.withLock { $0 } == 0)
                _ = try folder.publish(closing: [])
                #expect(try FileManager.default.subpathsOfDirectory(atPath: dir.path("out\(round)") + "/").filter { $0.hasSuffix(".plist") }.count == 64)
            }
        }
    }

    @Test("an existing folder with files is refused, not overwritten; an empty one is taken")
    func refusesRealFolder() throws {
        try withTemporaryDirectory { dir in
            #expect(FileManager.default.createFile(atPath: dir.path + "/keep.txt", contents: Data("mine".utf8)))
            #expect(throws: Problem(.outputExists, at: Location(file: dir.path),
                                    "\(dir.path) exists and is not an appconfig output (a symlink to a generation) or an empty folder; give a new --out path")) {
                try GenerationFolder(path: dir.path)
            }
            #expect(FileManager.default.contents(atPath: dir.path + "/keep.txt") == Data("mine".utf8))
            let empty = dir.path("made-by-the-admin")
            try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: false)
            let sink = try GenerationFolder(path: empty)
            #expect(try sink.publish(closing: [ClosingFile("manifest.tsv", Array("appconfig-manifest 1\n\n".utf8))]) == empty)
            #expect(GenerationFolder.published(empty) != nil)
        }
    }

    /// Defect 1 of issue 12: a second run's cleanup deleted files in the first run's unfinished
    /// generation, which was then published short. The lock now keeps cleanups out; and whatever
    /// removes a file, publishing counts what is on disk against what this run wrote.
    @Test("a generation that lost a file after it was written is not published")
    func lostFileRefused() throws {
        try withTemporaryDirectory { dir in
            let out = dir.path("out")
            let sink = try GenerationFolder(path: out)
            for i in 0..<10 { try sink.write(Array("plist \(i)".utf8), to: "a\(i % 3)/device\(i).plist") }
            try FileManager.default.removeItem(atPath: sink.generation + "/a1/device4.plist")
            #expect(throws: Problem(.outputIncomplete, at: Location(file: sink.generation),
                                    "\(sink.generation) holds 10 files but this run wrote 11; it is not published")) {
                try sink.publish(closing: [ClosingFile("manifest.tsv", Array("appconfig-manifest 1\n\n".utf8))])
            }
            #expect(GenerationFolder.published(out) == nil)
            #expect(!FileManager.default.fileExists(atPath: out))

            let whole = try GenerationFolder(path: dir.path("whole"))
            for i in 0..<10 { try whole.write(Array("plist \(i)".utf8), to: "a\(i % 3)/device\(i).plist") }
            #expect(try whole.publish(closing: [ClosingFile("manifest.tsv", Array("appconfig-manifest 1\n\n".utf8))]) == dir.path("whole"))
        }
    }
}
