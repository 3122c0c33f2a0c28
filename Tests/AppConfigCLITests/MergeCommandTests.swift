import Foundation
import TestSupport
import Testing

/// `appconfig merge` (issue 31): the shards of one run joined are that run's output, byte for
/// byte, for every delivery, container and night; anything else is refused before a byte is written.
@Suite("appconfig merge", .serialized)
struct MergeCommandTests {
    /// A fleet whose devices share their configuration by tier: DDM assets shared across shards
    /// (stored once in a single run), and keys that need escaping in JSON.
    static let spec = """
        <?xml version="1.0" encoding="UTF-8"?>
        <managedAppConfiguration>
          <version>1</version>
          <bundleId>com.example.merge</bundleId>
          <dict>
            <string keyName="tier"><defaultValue><value></value></defaultValue></string>
          </dict>
        </managedAppConfiguration>
        """

    /// Night 1: 60 devices; night 2: ten gone, five new, five moved to another tier (their plists change).
    static func inventory(night: Int) -> String {
        var lines = ["Serial Number,UDID,Tier"]
        for i in 0..<65 {
            if night == 1 && i >= 60 { continue }
            if night == 2 && i < 10 { continue }
            let tier = night == 2 && (20..<25).contains(i) ? "bronze" : i % 3 == 0 ? "gold" : "silver"
            lines.append("S\(i),DEV-\(String(format: "%04d", i * 7919 % 10007)),\(tier)")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    struct Fleet {
        let dir: URL
        func path(_ name: String) -> String { dir.appendingPathComponent(name).path }

        init() throws {
            dir = try Paths.temporaryDirectory()
            try MergeCommandTests.spec.write(toFile: path("spec.xml"), atomically: true, encoding: .utf8)
            try #"{"values": {"tier": "$(device.Tier)"}}"#.write(toFile: path("values.json"), atomically: true, encoding: .utf8)
            try #"{"values": {"tier": "$(device.Tier)!"}}"#.write(toFile: path("other.json"), atomically: true, encoding: .utf8)
            for night in 1...2 { try MergeCommandTests.inventory(night: night).write(toFile: path("inventory\(night).csv"), atomically: true, encoding: .utf8) }
        }

        /// Renders night `night` into `output` (`--tar` or `--out`) with `options`; its status.
        @discardableResult
        func render(night: Int, _ options: [String], values: String = "values.json") throws -> ProcessResult {
            let r = try appconfig(["render", "--spec", path("spec.xml"), "--values", path(values),
                                                           "--inventory", path("inventory\(night).csv"), "--quiet", "--no-strict-inventory"] + options)
            #expect(r.status == 0, "\(options): \(r.stdout)\(r.stderr)")
            return r
        }

        func merge(_ arguments: [String]) throws -> ProcessResult { try appconfig(["merge"] + arguments) }
    }

    /// Every file under a folder output (through its symlink), relative path and bytes.
    static func tree(_ root: String) throws -> [String: Data] {
        let base = URL(fileURLWithPath: root).resolvingSymlinksInPath()
        var files: [String: Data] = [:]
        let walker = FileManager.default.enumerator(at: base, includingPropertiesForKeys: [.isRegularFileKey])!
        for case let url as URL in walker where try url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile == true {
            files[String(url.resolvingSymlinksInPath().path.dropFirst(base.path.count + 1))] = try Data(contentsOf: url)
        }
        return files
    }

    static let deliveries: [[String]] = [
        [],
        ["--delivery", "ddm", "--asset-base-url", "https://assets.example/a"],
        ["--delivery", "ddm", "--asset-base-url", "https://assets.example/a", "--ddm-layout", "files"],
        ["--delivery", "mdm-settings"],
    ]

    @Test("three shards merged are the single run, byte for byte: the archive and its manifest, the folder output's every file; night 2 too (archives changed-only with removals, folders whole with gone devices kept)",
          arguments: deliveries)
    func mergedEqualsOneRun(delivery: [String]) throws {
        let f = try Fleet()
        defer { try? FileManager.default.removeItem(at: f.dir) }
        for night in 1...2 {
            // Night 2 compares each shard with its own previous shard, the single run with its previous run.
            func since(_ previous: String) -> [String] { night == 1 ? [] : ["--since", previous, "--changed-only", "--remove-missing", "--force"] }
            for i in 0..<3 {
                try f.render(night: night, delivery + ["--shard", "\(i)/3", "--tar", f.path("n\(night)-s\(i).tar")] + since(f.path("n1-s\(i).tar")))
                // Folders: whole generations, the devices gone tonight kept (their files linked from the night before).
                try f.render(night: night, delivery + ["--shard", "\(i)/3", "--out", f.path("o-s\(i)")])
            }
            try f.render(night: night, delivery + ["--tar", f.path("n\(night)-all.tar")] + since(f.path("n1-all.tar")))
            try f.render(night: night, delivery + ["--out", f.path("o-all")])

            let tar = try f.merge((0..<3).map { f.path("n\(night)-s\($0).tar") } + ["--tar", f.path("n\(night)-merged.tar")])
            #expect(tar.status == 0, "\(tar.stderr)")
            let written = night == 1 ? 60 : 10  // night 2: five new, five changed
            // Bare plists have no removal: their devices leave the manifest only.
            let removals = night == 2 && !delivery.isEmpty ? ", 10 removals" : ""
            #expect(tar.stdout.contains(": \(night == 1 ? 60 : 55) devices in the manifest, \(written) written\(removals)"), "\(tar.stdout)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: f.path("n\(night)-merged.tar"))) == Data(contentsOf: URL(fileURLWithPath: f.path("n\(night)-all.tar"))))
            #expect(try Data(contentsOf: URL(fileURLWithPath: f.path("n\(night)-merged.tar.manifest.tsv"))) == Data(contentsOf: URL(fileURLWithPath: f.path("n\(night)-all.tar.manifest.tsv"))))

            let folder = try f.merge((0..<3).map { f.path("o-s\($0)") } + ["--out", f.path("o-merged")])
            #expect(folder.status == 0, "\(folder.stderr)")
            // Night 2: 55 rendered and the 10 gone kept, plain or DDM (whose kept sets name their assets).
            #expect(folder.stdout.contains(": \(night == 1 ? 60 : 65) devices in the manifest"), "\(folder.stdout)")
            let merged = try Self.tree(f.path("o-merged")), single = try Self.tree(f.path("o-all"))
            #expect(merged.keys.sorted() == single.keys.sorted())
            for (name, bytes) in single { #expect(merged[name] == bytes, "\(name)") }
        }
        // The merged output is the whole fleet's: the next night of a single run takes it as --since.
        let manifest = try String(contentsOfFile: f.path("n2-merged.tar.manifest.tsv"), encoding: .utf8)
        #expect(manifest.contains("\nshard 0/1\n"))
    }

    @Test("device keys that JSON escapes in the index (a quote, a backslash) merge in byte order, as one run writes them")
    func escapedKeys() throws {
        let f = try Fleet()
        defer { try? FileManager.default.removeItem(at: f.dir) }
        // Keys with a quote or a backslash among plain ones, so that their order matters.
        var rows = ["Serial Number,UDID,Tier"]
        for i in 0..<24 { rows.append("S\(i),\(i % 3 == 0 ? "\"DEV\"\"\(i)\"" : i % 3 == 1 ? "DEV\\\(i)" : "DEV-\(i)"),gold") }
        try (rows.joined(separator: "\n") + "\n").write(toFile: f.path("inventory1.csv"), atomically: true, encoding: .utf8)
        for delivery in [["--delivery", "mdm-settings"], ["--delivery", "ddm", "--asset-base-url", "https://assets.example/a"]] {
            for i in 0..<3 { try f.render(night: 1, delivery + ["--shard", "\(i)/3", "--tar", f.path("e\(i).tar")]) }
            try f.render(night: 1, delivery + ["--tar", f.path("eall.tar")])
            let index = try String(decoding: runProcessData("/usr/bin/tar", ["xOf", f.path("eall.tar"), "index.jsonl"]).stdout, as: UTF8.self)
            #expect(index.contains(#"{"device":"DEV\"9"#) && index.contains(#"{"device":"DEV\\1"#), "\(index.prefix(300))")
            let r = try f.merge((0..<3).map { f.path("e\($0).tar") } + ["--tar", f.path("em.tar")])
            #expect(r.status == 0, "\(r.stderr)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: f.path("em.tar"))) == Data(contentsOf: URL(fileURLWithPath: f.path("eall.tar"))))
            try FileManager.default.removeItem(atPath: f.path("em.tar"))
        }
    }

    @Test("the shards' DDM assets shared across shards are stored once in the merged archive, as in one run")
    func sharedAssetsOnce() throws {
        let f = try Fleet()
        defer { try? FileManager.default.removeItem(at: f.dir) }
        let ddm = ["--delivery", "ddm", "--asset-base-url", "https://assets.example/a"]
        for i in 0..<2 { try f.render(night: 1, ddm + ["--shard", "\(i)/2", "--tar", f.path("s\(i).tar")]) }
        #expect(try f.merge([f.path("s1.tar"), f.path("s0.tar"), "--tar", f.path("m.tar")]).status == 0)
        let listing = try runProcess("/usr/bin/tar", ["tf", f.path("m.tar")]).stdout.split(separator: "\n")
        // 60 devices of two tiers: two assets, each in both shards, once in the merged archive.
        for i in 0..<2 {
            #expect(try runProcess("/usr/bin/tar", ["tf", f.path("s\(i).tar")]).stdout.split(separator: "\n").filter { $0.hasPrefix("assets/") }.count == 2)
        }
        #expect(listing.filter { $0.hasPrefix("assets/") }.count == 2)
        #expect(Set(listing).count == listing.count)
    }

    @Test("refused with nothing written (exit 2): a shard missing, given twice, of another count or another run; not an output; a folder into --tar")
    func refusals() throws {
        let f = try Fleet()
        defer { try? FileManager.default.removeItem(at: f.dir) }
        for i in 0..<3 { try f.render(night: 1, ["--shard", "\(i)/3", "--tar", f.path("s\(i).tar")]) }
        try f.render(night: 1, ["--shard", "1/2", "--tar", f.path("half.tar")])
        try f.render(night: 1, ["--shard", "2/3", "--tar", f.path("other.tar")], values: "other.json")
        try f.render(night: 1, ["--shard", "0/1", "--out", f.path("folder")])
        try "not an archive\n".write(toFile: f.path("junk.tar"), atomically: true, encoding: .utf8)
        let (s0, s1, s2, out) = (f.path("s0.tar"), f.path("s1.tar"), f.path("s2.tar"), f.path("m.tar"))
        let program = { (path: String) throws -> String in
            let text = try String(contentsOfFile: path + ".manifest.tsv", encoding: .utf8)
            return String(text.split(separator: "\n").first { $0.hasPrefix("program ") }!.dropFirst(8))
        }
        let cases: [([String], String)] = [
            ([s0, s2], "appconfig: shard 1/3 missing: a merge takes every shard of the run (given: 2 of 3) [merge.shards]\n"),
            ([s0, s1, s1, s2], "appconfig: shard 1/3 is given twice: \(s1) and \(s1) [merge.shards]\n"),
            ([s0, f.path("half.tar")], "appconfig: \(f.path("half.tar")) is shard 1/2 but \(s0) is shard 0/3: the shards of one run have one count [merge.shards]\n"),
            ([s0, s1, f.path("other.tar")], "appconfig: \(f.path("other.tar")) was not made by the same run as \(s0): its program is \(try program(f.path("other.tar"))), not \(try program(s0)) [merge.mismatch]\n"),
            ([f.path("junk.tar")], "appconfig: \(f.path("junk.tar")) is not an archive appconfig wrote: it ends without its two zero blocks at byte 0 [merge.input]\n"),
            ([f.path("folder")], "appconfig: \(f.path("folder")) is a folder output: folder outputs merge into a folder output (--out) [merge.input]\n"),
        ]
        for (inputs, message) in cases {
            let r = try f.merge(inputs + ["--tar", out])
            #expect(r.status == 2, "\(inputs)")
            #expect(r.stderr == message)
            #expect(!FileManager.default.fileExists(atPath: out))
        }
        let usage = try f.merge([s0])
        #expect(usage.status == 2)
        #expect(usage.stderr.hasPrefix("Error: give one of --tar FILE or --out FOLDER\n"))
    }

    @Test("an archive whose members do not follow its index is merge.input, and nothing is published")
    func damagedArchive() throws {
        let f = try Fleet()
        defer { try? FileManager.default.removeItem(at: f.dir) }
        try f.render(night: 1, ["--tar", f.path("whole.tar")])
        // The archive with its first device's member taken out (the index still names it).
        let bytes = try Data(contentsOf: URL(fileURLWithPath: f.path("whole.tar")))
        let size = Int(String(decoding: bytes[124..<135], as: UTF8.self), radix: 8)!
        let length = 512 + (size + 511) / 512 * 512
        try bytes[length...].write(to: URL(fileURLWithPath: f.path("short.tar")))
        let r = try f.merge([f.path("short.tar"), "--tar", f.path("m.tar")])
        #expect(r.status == 2)
        // Each member is checked against the index by name and digest: the first one is found out of place.
        #expect(r.stderr.hasPrefix("appconfig: \(f.path("short.tar")): member 1 is "), "\(r.stderr)")
        #expect(r.stderr.hasSuffix(", which its index does not name there: not an archive appconfig wrote [merge.input]\n"), "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: f.path("m.tar")))
    }
}
