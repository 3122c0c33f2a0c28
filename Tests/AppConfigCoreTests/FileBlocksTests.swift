import AppConfigCore
import Foundation
import TestSupport
import Testing

/// One pass over a file in blocks through one buffer (`forEachBlock(ofFile:)`): what the
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
}
