@testable import AppConfigBatch
@testable import AppConfigOutput
import AppConfigCore
import Digest
import TestSupport
import Testing

/// The sink's batches of pending files, digested in lanes.
@Suite("Pending files in lanes")
struct PendingFilesLanesTests {
    @Test("a batch of pending files comes back in the order it came, each with its own digest", arguments: [1, 7, 16])
    func pendingFilesInOrder(count: Int) throws {
        let files = (0..<count).map { Array("<plist>device \($0)</plist>".utf8) + [UInt8](repeating: 0x20, count: 50 * $0) }
        let keys = (0..<count).map { Array("D\($0)".utf8) }
        var pending = PendingFiles()
        let keyBytes = keys.flatMap { $0 }
        try keyBytes.withView { all throws(Problem) in
            var at = 0
            for i in 0..<count {
                var device = RenderedDevice(key: all[view: at..<(at + keys[i].count)], plist: .empty, position: 100 + i)
                at += keys[i].count
                device.previousEntry = Int32(i) - 1
                pending.add(device) { $0 += files[i] }
            }
            #expect(pending.isFull == (count == SHA256.lanes))
            var seen: [(Int, Int32, String, String, [UInt8])] = []
            try pending.flush { device, digest, file throws(Problem) in
                seen.append((device.position, device.previousEntry, String(decoding: Array(device.key), as: UTF8.self), digest.hex, Array(file)))
            }
            #expect(seen.map(\.0) == (0..<count).map { 100 + $0 })
            #expect(seen.map(\.1) == (0..<count).map { Int32($0) - 1 })
            #expect(seen.map(\.2) == (0..<count).map { "D\($0)" })
            #expect(seen.map(\.3) == files.map { SHA256Digest(of: $0).hex })
            #expect(seen.map(\.4) == files)
            // Flushed, the batch is empty: a second flush hands nothing over.
            try pending.flush { _, _, _ throws(Problem) in Issue.record("a flushed batch is empty") }
        }
    }
}

/// DDM in batches: a device encoded with its plist's digest known (the sink's batch) writes what
/// it writes when encoded on its own, and has the same digest.
@Suite("DDM with the plist's digest known")
struct DDMBatchedDigestTests {
    @Test("the same files, records and digest, each layout", arguments: [DDMLayout.jsonl, .files])
    func sameAsAlone(layout: DDMLayout) throws {
        var options = DeliveryOptions(delivery: .ddm)
        options.assetBaseURL = "https://cdn.example.com/a"
        options.ddmLayout = layout
        let delivery = try options.resolved(specBundleID: "com.example.app")
        let encoding = DDMEncoding(delivery: delivery, devices: 1)
        #expect(encoding.batching == .plists)
        let plist = Array("<?xml version=\"1.0\"?><plist version=\"1.0\"><dict><key>k</key><string>v &amp; w</string></dict></plist>".utf8)
        func encoded(knowing digest: SHA256Digest?) throws -> (files: [String], records: [UInt8], digest: SHA256Digest) {
            let memory = MemoryFolder()
            var files = DeviceFiles(container: memory, filter: nil)
            var scratch: [UInt8] = []
            let d = try Array("DEVICE-1".utf8).withView { key throws(Problem) in
                try plist.withView { p throws(Problem) in
                    try encoding.encode(RenderedDevice(key: key, plist: p, indexFields: .empty, position: 0), plistDigest: digest,
                                        scratch: &scratch, files: &files)
                }
            }
            return (memory.files.map { $0.name + " " + SHA256Digest(of: $0.bytes).hex }, files.records, d)
        }
        let alone = try encoded(knowing: nil)
        let batched = try encoded(knowing: SHA256Digest(of: plist))
        #expect(batched.files == alone.files)
        #expect(batched.records == alone.records)
        #expect(batched.digest == alone.digest)
        #expect(!alone.records.isEmpty || !alone.files.isEmpty)
        // The asset is named by the plist's digest: a wrong one would show (the test can fail).
        let wrong = try encoded(knowing: SHA256Digest(of: Array("other".utf8)))
        #expect(wrong.digest != alone.digest)
    }
}
