import Foundation
import TestSupport
import Testing

/// A tar on a disk's file system has its members written past the page cache (`DirectWrites`),
/// one in the temporary folder (tmpfs under tools/test) through it: the same bytes either way.
@Suite("Output on a disk")
struct DiskOutputTests {
    @Test("a 10k fleet as a tar and as a DDM tar on a disk: the same archive and manifest as in the temporary folder",
          arguments: [[String](), ["--delivery", "ddm", "--asset-base-url", DeliveryTests.base]])
    func tarOnDisk(_ delivery: [String]) throws {
        try withTemporaryDirectory(onDisk: true) { disk in
            try withTemporaryDirectory { dir in
                let fleet = try NightlyTests.fleet(10_000, in: dir)
                let arguments = ["render"] + NightlyTests.spec + delivery + ["--inventory", fleet.inventory, "--directory", fleet.directory, "--quiet"]
                let (onDisk, inTemporary) = (disk.path("out.tar"), dir.path("out.tar"))
                for tar in [onDisk, inTemporary] {
                    let r = try runProcess(Paths.appconfigBinary, arguments + ["--tar", tar])
                    #expect(r.status == 3, "\(r.stderr)")
                }
                let archive = try #require(FileManager.default.contents(atPath: onDisk))
                #expect(archive.count > 16 << 20)  // two staging buffers and more
                #expect(archive == FileManager.default.contents(atPath: inTemporary))
                #expect(FileManager.default.contents(atPath: onDisk + ".manifest.tsv") == FileManager.default.contents(atPath: inTemporary + ".manifest.tsv"))
            }
        }
    }
}
