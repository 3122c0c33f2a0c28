import AppConfigCore
import Foundation
import TestSupport
import Testing

/// One pass over a file in blocks, from its mapped pages (`forEachBlock(ofFile:)`): what the
/// manifest's input fingerprints read.
@Suite("file blocks")
struct FileBlocksTests {
    @Test("the blocks join to the file, whatever the block size against the file's; the count is its size",
          arguments: [(0, 7), (1, 7), (7, 7), (8, 7), (100_003, 4096), (100_003, 1 << 22)])
    func blocksJoinToTheFile(size: Int, blockSize: Int) throws {
        var random = SplitMix64(seed: UInt64(size))
        let bytes = (0..<size).map { _ in UInt8.random(in: 0...255, using: &random) }
        try withTemporaryDirectory { dir in
            let path = dir.path("input")
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            var joined: [UInt8] = [], blocks = 0
            let count = try forEachBlock(ofFile: path, blockSize: blockSize) { block in
                #expect(block.count <= blockSize && block.count > 0)
                joined += block
                blocks += 1
            }
            #expect(count == size)
            #expect(joined == bytes)
            #expect(blocks == (size + blockSize - 1) / blockSize)
        }
    }

    @Test("a file cut shorter or written to in place while its blocks are handed over: refused as changed",
          arguments: [false, true])
    func changedWhileRead(cut: Bool) throws {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let bytes = [UInt8](repeating: 0x61, count: 4 * page)
        try withTemporaryDirectory { dir in
            let path = dir.path("input")
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            var blocks = 0
            let error = #expect(throws: FileReadError.self) {
                _ = try forEachBlock(ofFile: path, blockSize: page) { _ in
                    blocks += 1
                    guard blocks == 1 else { return }
                    if cut { _ = truncate(path, off_t(page)) } else {
                        let handle = FileHandle(forWritingAtPath: path)!
                        handle.seek(toFileOffset: UInt64(2 * page))
                        handle.write(Data([0x62]))
                        handle.closeFile()
                    }
                }
            }
            #expect(error?.changed == true)
            #expect(error?.description.hasPrefix("cannot read \(path): it changed while it was read") == true)
            #expect(blocks == 4)
        }
    }

    @Test("a missing file: the system's reason, nothing handed over")
    func missingFile() {
        var called = false
        let error = #expect(throws: FileReadError.self) {
            _ = try forEachBlock(ofFile: "/nonexistent/input") { _ in called = true }
        }
        #expect(error?.description == "cannot read /nonexistent/input: No such file or directory")
        #expect(error?.tooLarge == false)
        #expect(!called)
    }

    @Test("a file read in parts through a link: sized by its target, cut at record ends, the parts' windows join to the file",
          arguments: [false, true])
    func partedThroughALink(linked: Bool) throws {
        let bytes = Array((0..<100).map { "record \($0)\n" }.joined().utf8)
        try withTemporaryDirectory { dir in
            let target = dir.path("input")
            try Data(bytes).write(to: URL(fileURLWithPath: target))
            let path = linked ? dir.path("link") : target
            if linked { try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: target) }
            var sizeAsked: Int?
            let file = try PartedFile(path, parts: { size in sizeAsked = size; return size >= 500 ? 3 : 1 }) { window in
                window.firstIndex(of: 0x0A, from: 0).map { $0 + 1 }
            }
            #expect(sizeAsked == bytes.count && file.size == bytes.count)
            #expect(file.partCount == 3)
            var joined: [UInt8] = []
            for part in 0..<file.partCount {
                #expect(file.bounds[part] == 0 || bytes[file.bounds[part] - 1] == 0x0A)
                try file.readWindows(part: part, window: 64, lastRecordEnd: { w in
                    (0..<w.count).last { w[$0] == 0x0A }.map { $0 + 1 }
                }) { window, _ in
                    joined += Array(window.view)
                    return true
                }
            }
            #expect(joined == bytes)
        }
    }
}
