@testable import AppConfigBatch
import AppConfigCore
import Digest
import Foundation
import TestSupport
import Testing

/// Last night's manifest lines, copied for the devices whose lines are the same tonight
/// (`ManifestLines`): exactly the lines read, and only from the file as it was read.
@Suite("Manifest lines copied from last night's file")
struct ManifestLinesTests {
    /// A version 4 manifest of `count` devices (keys that need escapes among them) and its device lines.
    static func manifest(count: Int) -> (file: [UInt8], lines: [[UInt8]]) {
        let keys = (0..<count).map { i in Array((i % 7 == 0 ? "d \(1000 + i)%" : "d\(1000 + i)").utf8) }.sorted { a, b in a.withView { a in b.withView { a.precedes($0) } } }
        var lines: [[UInt8]] = []
        for (i, k) in keys.enumerated() {
            var line: [UInt8] = []
            k.withView { Manifest.appendLine(key: $0, extension: ".plist", digest: SHA256Digest(of: k), inputs: i % 5 == 0 ? InputDigest.none : UInt64(i), to: &line) }
            lines.append(line)
        }
        let body = lines.flatMap { $0 }
        return (Manifest.headerText([("program", "x"), ("render", "r")]) + body + OutputTextTests.trailer(count: count, of: body), lines)
    }

    @Test("every range of lines copied is those lines' bytes", arguments: [1, 2, 300])
    func copies(_ count: Int) throws {
        try withTemporaryDirectory { dir in
            let (file, lines) = Self.manifest(count: count)
            try Data(file).write(to: URL(fileURLWithPath: dir.path("m.tsv")))
            let copies = try #require(try Manifest.load(dir.path("m.tsv")).lines)
            #expect(copies.unchanged)
            var random = SplitMix64(seed: UInt64(count))
            for _ in 0..<50 {
                let a = Int(random.next() % UInt64(count)), b = Int(random.next() % UInt64(count))
                let range = min(a, b)..<(max(a, b) + 1)
                var out: [UInt8] = [7]
                #expect(copies.append(lines: range, to: &out))
                #expect(out == [7] + lines[range].flatMap { $0 })
            }
        }
    }

    @Test("read in windows of any size: the same entries and line starts, the end line's check whole; a digit changed is refused",
          arguments: [1, 2, 7, 64, 100, 4096, 1 << 20])
    func windows(_ size: Int) throws {
        let (file, _) = Self.manifest(count: 300)
        func parse(_ bytes: [UInt8]) throws(Problem) -> (Manifest, [Int]) {
            var parser = ManifestParser(keepsPaths: false, bytes: bytes.count)
            bytes.withView { b in
                for at in stride(from: 0, to: b.count, by: size) { _ = parser.feed(b[view: at..<min(b.count, at + size)]) }
            }
            return (try parser.finish(file: "m.tsv"), parser.lineStarts)
        }
        let whole = try Manifest.parse(file, file: "m.tsv")
        let (manifest, starts) = try parse(file)
        #expect(manifest.count == 300)
        #expect((0..<300).allSatisfy { manifest.digest(at: $0) == whole.digest(at: $0) && manifest.inputs(at: $0) == whole.inputs(at: $0) })
        // Each device line starts after a line break; the last start is the end line's.
        #expect(starts.count == 301 && starts.allSatisfy { file[$0 - 1] == 0x0A } && file[starts[300]...].starts(with: Array("end\t".utf8)))
        // One hex digit of line 150's digest changed (still a digest): only the end line's check tells.
        var damaged = file
        damaged[starts[150] + 10] = damaged[starts[150] + 10] == UInt8(ascii: "0") ? UInt8(ascii: "1") : UInt8(ascii: "0")
        #expect(throws: Problem(.manifestSyntax, at: Location(file: "m.tsv", line: 305),
                                "the device lines do not match the end line's XXH3-128: the manifest was edited or damaged")) {
            try parse(damaged)
        }
    }

    @Test("none from a version 3 manifest, or one read from bytes (an archive's member)")
    func none() throws {
        try withTemporaryDirectory { dir in
            let (file, _) = Self.manifest(count: 3)
            #expect(try Manifest.parse(file, file: "m.tsv").lines == nil)
            // Version 3: the same lines ended by their SHA-256.
            var old = Array("appconfig-manifest 3\nprogram x\n\n".utf8)
            let lines = Self.manifest(count: 3).lines.flatMap { $0 }
            old += lines + Array("end\t3\t\(SHA256Digest(of: lines).hex)\n".utf8)
            try Data(old).write(to: URL(fileURLWithPath: dir.path("v3.tsv")))
            let v3 = try Manifest.load(dir.path("v3.tsv"))
            #expect(v3.count == 3 && v3.lines == nil)
        }
    }

    @Test("the file written to, cut or replaced after it was read: not as it was read, and nothing copied from a file cut short", arguments: [
        "written in place", "cut short", "replaced",
    ])
    func changed(_ change: String) throws {
        try withTemporaryDirectory { dir in
            let path = dir.path("m.tsv")
            let (file, _) = Self.manifest(count: 300)
            try Data(file).write(to: URL(fileURLWithPath: path))
            let copies = try #require(try Manifest.load(path).lines)
            switch change {
            case "written in place":
                let handle = try #require(FileHandle(forUpdatingAtPath: path))
                try handle.seek(toOffset: 30)
                try handle.write(contentsOf: [UInt8(ascii: "x")])
                try handle.close()
            case "cut short":
                try #require(FileHandle(forUpdatingAtPath: path)).truncate(atOffset: 100)
            default:
                try Data(file).write(to: URL(fileURLWithPath: dir.path("new.tsv")))
                #expect(rename(dir.path("new.tsv"), path) == 0)
            }
            #expect(!copies.unchanged)
            if change == "cut short" {
                var out: [UInt8] = [1, 2]
                #expect(!copies.append(lines: 0..<300, to: &out))
                #expect(out == [1, 2])
            }
        }
    }
}
