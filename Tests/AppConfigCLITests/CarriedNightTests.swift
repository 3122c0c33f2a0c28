import AppConfigBatch
import Digest
import Foundation
import TestSupport
import Testing

/// A `--changed-only` night renders only the devices whose inputs changed: the others' input
/// digests are last night's, so their output is too, and it is taken from the manifest unrendered.
/// What it publishes is what rendering every device would have published, byte for byte.
@Suite("Carried nights: only what changed is rendered", .serialized)
struct CarriedNightTests {

    func render(_ arguments: [String], values: String = "demo/values.json") throws -> ProcessResult {
        try appconfig(["render", "--spec", Paths.fixture("demo/spec.xml"), "--values", Paths.fixture(values)] + arguments
                       + ["--quiet", "--max-failure-ratio", "1", "--max-change-ratio", "1"])
    }

    /// Tonight's inputs: 10 serial numbers edited, a device gone, a device new (1% of the demo's
    /// 1,000), and one user's display name changed in the directory.
    static func tonight(in dir: TemporaryDirectory) throws -> (inventory: String, directory: String) {
        // The demo's export ends its lines in CRLF, as Jamf's does.
        var rows = try String(contentsOfFile: Paths.fixture("demo/inventory.csv"), encoding: .utf8).components(separatedBy: "\r\n")
        for i in stride(from: 10, to: 110, by: 10) {
            // The serial number (before the UDID) starts ZZ: a variable the spec reads.
            let serial = try #require(rows[i].range(of: ",[0-9A-Z]{12},[0-9A-F]{8}-", options: .regularExpression))
            let start = rows[i].index(after: serial.lowerBound)
            rows[i].replaceSubrange(start..<rows[i].index(start, offsetBy: 2), with: "ZZ")
        }
        rows.remove(at: 500)
        rows.insert(rows[600].replacingOccurrences(of: "-", with: "-F", options: [], range: rows[600].range(of: ",[0-9A-F]{8}-", options: .regularExpression)), at: 601)
        var ldif = try String(contentsOfFile: Paths.fixture("demo/directory.ldif"), encoding: .utf8)
        ldif = ldif.replacingOccurrences(of: "displayName:: Sm9zw6kgT2thZm9y", with: "displayName: Jose Okafor")
        return (try dir.write(rows.joined(separator: "\r\n"), to: "tonight.csv"), try dir.write(ldif, to: "tonight.ldif"))
    }

    /// Every member of an archive and the SHA-256 of its bytes, as Python's tarfile reads them.
    static func members(_ tar: String) throws -> [String: String] {
        let script = """
            import hashlib, json, sys, tarfile
            t = tarfile.open(sys.argv[1])
            print(json.dumps({m.name: hashlib.sha256(t.extractfile(m).read()).hexdigest() for m in t.getmembers() if m.isfile()}))
            """
        let r = try runProcess(try #require(which("python3")), ["-c", script, tar])
        return try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: String], "\(r.stderr)")
    }

    /// A file's inode: a link to an image shares it, an image written anew does not.
    static func inode(_ path: String) throws -> Int? { try FileManager.default.attributesOfItem(atPath: path)[.systemFileNumber] as? Int }

    /// The devices a run's report says it carried.
    static func carried(_ report: String) throws -> Int? { (try reportSummary(report)["devices"] as? [String: Any])?["carried"] as? Int }

    /// The manifest's device lines (the header names the run's options, which differ).
    static func deviceLines(_ manifest: String) throws -> [Substring] {
        let text = try String(contentsOfFile: manifest, encoding: .utf8)
        return text.split(separator: "\n", omittingEmptySubsequences: false).drop { !$0.isEmpty }.dropFirst().filter { !$0.isEmpty }
    }

    @Test("a 1% night: the changed devices rendered, the rest carried; the same bytes as rendering all, and as a whole night", arguments: [
        "plist", "mdm-settings", "plist with assignments",
    ])
    func onePercentNight(_ form: String) throws {
        // With assignments, devices render from variants: their input digests are each variant's.
        let delivery = String(form.prefix { $0 != " " }), values = form.hasSuffix("assignments") ? "demo/assignments.json" : "demo/values.json"
        func render(_ arguments: [String]) throws -> ProcessResult { try self.render(arguments, values: values) }
        try withTemporaryDirectory { dir in
            let lastNight = ["--inventory", Paths.fixture("demo/inventory.csv"), "--directory", Paths.fixture("demo/directory.ldif"), "--delivery", delivery]
            #expect(try render(lastNight + ["--tar", dir.path("mon.tar")]).status == 3)
            let (inventory, directory) = try Self.tonight(in: dir)
            let night = ["--inventory", inventory, "--directory", directory, "--delivery", delivery, "--since", dir.path("mon.tar")]

            let carried = try render(night + ["--changed-only", "--tar", dir.path("carried.tar"), "--report", dir.path("carried")])
            let rendered = try render(night + ["--changed-only", "--rerender", "--tar", dir.path("rendered.tar"), "--report", dir.path("rendered")])
            let whole = try render(night + ["--tar", dir.path("whole.tar")])
            #expect([carried.status, rendered.status, whole.status] == [3, 3, 3], "\(carried.stderr)\(rendered.stderr)\(whole.stderr)")

            // The same archive and manifest, byte for byte, whether the unchanged devices were rendered or not.
            #expect(FileManager.default.contentsEqual(atPath: dir.path("carried.tar"), andPath: dir.path("rendered.tar")))
            #expect(FileManager.default.contentsEqual(atPath: dir.path("carried.tar.manifest.tsv"), andPath: dir.path("rendered.tar.manifest.tsv")))
            // And a whole night holds the same bytes for every device the carried night wrote, and the same manifest lines.
            let written = try Self.members(dir.path("carried.tar")), all = try Self.members(dir.path("whole.tar"))
            for (name, digest) in written where name != "manifest.tsv" && name != "index.jsonl" { #expect(all[name] == digest, "\(name)") }
            #expect(try Self.deviceLines(dir.path("carried.tar.manifest.tsv")) == Self.deviceLines(dir.path("whole.tar.manifest.tsv")))

            // What changed: 10 edited rows, 1 new device, 1 gone (missing), the user's devices; the rest carried.
            let summary = try reportSummary(dir.path("carried")), plain = try reportSummary(dir.path("rendered"))
            let changes = try #require(summary["changes"] as? [String: Int]), devices = try #require(summary["devices"] as? [String: Any])
            #expect(changes["added"] == 1 && changes["missing"] == 1 && changes["removed"] == 0)
            #expect(changes["changed"]! >= 10 && changes["changed"]! <= 13, "\(changes)")
            #expect(devices["carried"] as? Int == changes["unchanged"], "\(devices)")
            #expect(written.count == changes["added"]! + changes["changed"]! + 2, "\(written.keys.sorted())")
            #expect((plain["devices"] as? [String: Any])?["carried"] as? Int == 0)
            #expect(plain["changes"] as? [String: Int] == changes)
            #expect(carried.stdout.contains("\(changes["unchanged"]!) unchanged (\(changes["unchanged"]!) not rendered: their inputs are last night's)"), "\(carried.stdout)")
        }
    }

    @Test("a previous manifest without input digests (version 2), or made with other render settings, carries nothing")
    func nothingToCarryFrom() throws {
        try withTemporaryDirectory { dir in
            let inputs = ["--inventory", Paths.fixture("demo/inventory.csv"), "--directory", Paths.fixture("demo/directory.ldif")]
            #expect(try render(inputs + ["--tar", dir.path("mon.tar")]).status == 3)
            // Last night as an older version wrote it: version 2, no input digest column.
            let manifest = try String(contentsOfFile: dir.path("mon.tar.manifest.tsv"), encoding: .utf8)
            var lines = manifest.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            let blank = try #require(lines.firstIndex(of: ""))
            lines[0] = "appconfig-manifest 2"
            for i in (blank + 1)..<(lines.count - 2) { lines[i] = String(lines[i][..<lines[i].lastIndex(of: "\t")!]) }
            let body = lines[(blank + 1)..<(lines.count - 2)].map { $0 + "\n" }.joined()
            lines[lines.count - 2] = "end\t\(lines.count - blank - 3)\t" + Array(body.utf8).withUnsafeBytes { SHA256.hex($0) }
            try lines.joined(separator: "\n").write(toFile: dir.path("v2.tsv"), atomically: true, encoding: .utf8)
            let old = try render(inputs + ["--since", dir.path("v2.tsv"), "--changed-only", "--dry-run", "--report", dir.path("old")])
            #expect(old.status == 3, "\(old.stderr)")
            #expect(try reportSummary(dir.path("old"))["changes"] as? [String: Int] == ["added": 0, "changed": 0, "removed": 0, "missing": 0, "unchanged": 975, "rekeyed": 0])
            #expect(try Self.carried(dir.path("old")) == 0)
            // A generation made with other render settings (its `render` line another's: a bare plist
            // takes no app option any more to make one with), rendered whole.
            let other = manifest.split(separator: "\n", omittingEmptySubsequences: false)
                .map { $0.hasPrefix("render ") ? "render " + String(repeating: "0", count: 64) : String($0) }.joined(separator: "\n")
            try other.write(toFile: dir.path("other.tsv"), atomically: true, encoding: .utf8)
            _ = try render(inputs + ["--since", dir.path("other.tsv"), "--changed-only", "--dry-run", "--report", dir.path("other")])
            #expect(try Self.carried(dir.path("other")) == 0)
            // The same settings: every device carried.
            _ = try render(inputs + ["--since", dir.path("mon.tar"), "--changed-only", "--dry-run", "--report", dir.path("same")])
            #expect(try Self.carried(dir.path("same")) == 975)
        }
    }

    @Test("a night whose LDIF did not change loads the user table saved beside last night's output: the same bytes as parsing it; a changed LDIF is parsed")
    func directoryImage() throws {
        try withTemporaryDirectory { dir in
            let (inventory, changedDirectory) = try Self.tonight(in: dir)
            let directory = Paths.fixture("demo/directory.ldif")
            #expect(try render(["--inventory", Paths.fixture("demo/inventory.csv"), "--directory", directory, "--tar", dir.path("mon.tar")]).status == 3)
            let image = dir.path("mon.tar.users")
            let mode = try #require(FileManager.default.attributesOfItem(atPath: image)[.posixPermissions] as? Int)
            #expect(mode == 0o600)
            func night(_ name: String, directory: String) throws -> String? {
                let r = try render(["--inventory", inventory, "--directory", directory, "--tar", dir.path(name + ".tar"), "--since", dir.path("mon.tar"),
                                    "--changed-only", "--report", dir.path(name)])
                #expect(r.status == 3, "\(r.stderr)")
                return try reportSummary(dir.path(name))["directoryImage"] as? String
            }
            #expect(try night("loaded", directory: directory) == image)
            // The directory file as it was when the image was made: its fingerprint the image's, as hashing it gives.
            func directoryLine(_ manifest: String) throws -> String? {
                try String(contentsOfFile: dir.path(manifest), encoding: .utf8).split(separator: "\n").first { $0.hasPrefix("directory ") }.map(String.init)
            }
            #expect(try directoryLine("loaded.tar.manifest.tsv") == directoryLine("mon.tar.manifest.tsv"))
            #expect(try directoryLine("mon.tar.manifest.tsv")?.contains("xxh3-128:") == true)
            // Linked beside tonight's archive: the night after finds it there.
            #expect(try Self.inode(dir.path("loaded.tar.users")) == Self.inode(image))
            try FileManager.default.moveItem(atPath: image, toPath: dir.path("aside"))
            #expect(try night("parsed", directory: directory) == nil)
            #expect(try Data(contentsOf: URL(fileURLWithPath: dir.path("loaded.tar"))) == Data(contentsOf: URL(fileURLWithPath: dir.path("parsed.tar"))))
            #expect(try Self.carried(dir.path("loaded")) == Self.carried(dir.path("parsed")))
            // Another directory file: parsed, though last night's image is there.
            try FileManager.default.moveItem(atPath: dir.path("aside"), toPath: image)
            #expect(try night("changed", directory: changedDirectory) == nil)
            // One entry read of the file's: the image it was read from kept beside tonight's archive (a link).
            #expect(try reportSummary(dir.path("changed"))["directoryIncremental"] != nil)
            #expect(try Self.inode(dir.path("changed.tar.users")) == Self.inode(image))
            #expect(try Self.deviceLines(dir.path("changed.tar.manifest.tsv")) != Self.deviceLines(dir.path("parsed.tar.manifest.tsv")))

            // A folder output keeps its image beside it, as its lock and generations: not in what is served.
            let out = dir.path("out")
            #expect(try render(["--inventory", Paths.fixture("demo/inventory.csv"), "--directory", directory, "--out", out]).status == 3)
            #expect(FileManager.default.fileExists(atPath: out + ".users"))
            #expect(try FileManager.default.contentsOfDirectory(atPath: out).allSatisfy { !$0.hasSuffix(".users") })
            #expect(try render(["--inventory", inventory, "--directory", directory, "--out", out, "--report", dir.path("folder")]).status == 3)
            #expect(try reportSummary(dir.path("folder"))["directoryImage"] as? String == out + ".users")
        }
    }
    @Test("a night whose inventory changed parses only its changed records, from the image saved beside last night's output: the same bytes as a whole read")
    func inventoryImage() throws {
        try withTemporaryDirectory { dir in
            let (inventory, _) = try Self.tonight(in: dir)
            let directory = Paths.fixture("demo/directory.ldif")
            #expect(try render(["--inventory", Paths.fixture("demo/inventory.csv"), "--directory", directory, "--tar", dir.path("mon.tar")]).status == 3)
            let image = dir.path("mon.tar.inventory")
            // The inventory's names and addresses: readable by the run's user only.
            #expect(try FileManager.default.attributesOfItem(atPath: image)[.posixPermissions] as? Int == 0o600)
            func night(_ name: String) throws -> [String: Any]? {
                let r = try render(["--inventory", inventory, "--directory", directory, "--tar", dir.path(name + ".tar"), "--since", dir.path("mon.tar"),
                                    "--changed-only", "--report", dir.path(name)])
                #expect(r.status == 3, "\(r.stderr)")
                return try reportSummary(dir.path(name))["inventoryIncremental"] as? [String: Any]
            }
            // Ten rows edited and one added: eleven records parsed, of tonight's 1,000.
            let read = try #require(try night("incremental"))
            #expect(read["image"] as? String == image)
            #expect(read["records"] as? Int == 1000 && read["recordsRead"] as? Int == 11 && read["rowsRead"] as? Int == 11)
            // Little read since the image was made: it is kept beside tonight's archive (a link), not written again.
            #expect(try Self.inode(dir.path("incremental.tar.inventory")) == Self.inode(image))
            // More than 1/32 of the records read (40 of 1,000): tonight's image written.
            var rows = try String(contentsOfFile: Paths.fixture("demo/inventory.csv"), encoding: .utf8).components(separatedBy: "\r\n")
            for i in stride(from: 1, through: 400, by: 10) {
                // The serial number, which the spec reads: a night that changes devices publishes (and saves its image).
                let serial = try #require(rows[i].range(of: ",[0-9A-Z]{12},[0-9A-F]{8}-", options: .regularExpression))
                let start = rows[i].index(after: serial.lowerBound)
                rows[i].replaceSubrange(start..<rows[i].index(start, offsetBy: 2), with: "YY")
            }
            let many = try dir.write(rows.joined(separator: "\r\n"), to: "many.csv")
            let r = try render(["--inventory", many, "--directory", directory, "--tar", dir.path("many.tar"), "--since", dir.path("mon.tar"),
                                "--changed-only", "--report", dir.path("many")])
            #expect(r.status == 3, "\(r.stderr)")
            let manyRead = try #require(try reportSummary(dir.path("many"))["inventoryIncremental"] as? [String: Any])
            #expect(manyRead["recordsRead"] as? Int == 40)
            #expect(try Self.inode(dir.path("many.tar.inventory")) != Self.inode(image))
            // Without the image: read whole, the same archive and manifest.
            try FileManager.default.moveItem(atPath: image, toPath: dir.path("aside"))
            #expect(try night("whole") == nil)
            #expect(try Data(contentsOf: URL(fileURLWithPath: dir.path("incremental.tar"))) == Data(contentsOf: URL(fileURLWithPath: dir.path("whole.tar"))))
            #expect(try Data(contentsOf: URL(fileURLWithPath: dir.path("incremental.tar.manifest.tsv")))
                    == Data(contentsOf: URL(fileURLWithPath: dir.path("whole.tar.manifest.tsv"))))

            // A folder output keeps its image beside it, not in what is served.
            let out = dir.path("out")
            #expect(try render(["--inventory", Paths.fixture("demo/inventory.csv"), "--directory", directory, "--out", out]).status == 3)
            #expect(FileManager.default.fileExists(atPath: out + ".inventory"))
            #expect(try FileManager.default.contentsOfDirectory(atPath: out).allSatisfy { !$0.hasSuffix(".inventory") })
            #expect(try render(["--inventory", inventory, "--directory", directory, "--out", out, "--report", dir.path("folder")]).status == 3)
            let folder = try #require(try reportSummary(dir.path("folder"))["inventoryIncremental"] as? [String: Any])
            #expect(folder["image"] as? String == out + ".inventory" && folder["recordsRead"] as? Int == 11)
        }
    }
}
