import AppConfigBatch
@testable import AppConfigOutput
import Foundation
import TestSupport
import Testing

/// A night whose inputs and options are last night's: the fingerprints in the previous manifest
/// say so before anything else is read, and nothing is rendered or published.
@Suite("Unchanged nights: the fingerprints decide", .serialized)
struct UnchangedNightTests {
    static let demo = ["--spec", Paths.fixture("demo/spec.xml"), "--values", Paths.fixture("demo/values.json"),
                       "--directory", Paths.fixture("demo/directory.ldif")]

    func render(_ arguments: [String]) throws -> ProcessResult {
        try appconfig(["render"] + Self.demo + arguments + ["--quiet"])
    }

    static func generations(_ out: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: out + ".generations").filter { $0.hasPrefix("g") }
    }

    @Test("the same inputs and options again: nothing rendered or published, said on stdout and in summary.json, exit 0; the good generation stays")
    func sameNight() throws {
        try withTemporaryDirectory { dir in
            let out = dir.path("out"), report = dir.path("report"), inventory = dir.path("inventory.csv")
            try FileManager.default.copyItem(atPath: Paths.fixture("demo/inventory.csv"), toPath: inventory)
            #expect(try render(["--inventory", inventory, "--out", out]).status == 3)
            let good = try #require(GenerationFolder.published(out))
            // The export written again with the same bytes (a new file, a new mtime): still the same night.
            let bytes = try Data(contentsOf: URL(fileURLWithPath: inventory))
            try FileManager.default.removeItem(atPath: inventory)
            try bytes.write(to: URL(fileURLWithPath: inventory))
            let r = try render(["--inventory", inventory, "--out", out, "--report", report])
            #expect(r.status == 0, "\(r.stderr)")
            #expect(r.stdout.hasPrefix("nothing changed since \(out): its manifest has this run's program, options and input fingerprints; "
                                       + "nothing was rendered or published (--rerender renders anyway) in "), "\(r.stdout)")
            #expect(GenerationFolder.published(out) == good)
            #expect(try Self.generations(out).count == 1)
            let summary = try reportSummary(report)
            #expect(summary["inputsUnchanged"] as? Bool == true && summary["nothingChanged"] as? Bool == true)
            #expect(summary["published"] as? Bool == false)
            #expect((summary["devices"] as? [String: Any])?["rendered"] as? Int == 0)
            #expect(FileManager.default.fileExists(atPath: report + "/errors.jsonl"))
        }
    }

    @Test("an archive night against the last archive: nothing written under tonight's name")
    func archiveNight() throws {
        try withTemporaryDirectory { dir in
            let inventory = ["--inventory", Paths.fixture("demo/inventory.csv")]
            #expect(try render(inventory + ["--tar", dir.path("mon.tar")]).status == 3)
            let r = try render(inventory + ["--tar", dir.path("tue.tar"), "--since", dir.path("mon.tar")])
            #expect(r.status == 0, "\(r.stderr)")
            #expect(r.stdout.hasPrefix("nothing changed since \(dir.path("mon.tar")): "), "\(r.stdout)")
            #expect(!FileManager.default.fileExists(atPath: dir.path("tue.tar")))
        }
    }

    @Test("a whole night after a --changed-only one is not skipped: that generation holds only what changed")
    func wholeAfterChangedOnly() throws {
        try withTemporaryDirectory { dir in
            let out = dir.path("out"), inventory = ["--inventory", Paths.fixture("demo/inventory.csv")]
            #expect(try render(inventory + ["--out", out, "--changed-only"]).status == 3)
            #expect(try render(inventory + ["--out", out, "--changed-only"]).stdout.hasPrefix("nothing changed since \(out): its manifest"))
            let whole = try render(inventory + ["--out", out])
            #expect(whole.status == 3, "\(whole.stderr)")
            #expect(whole.stdout.hasPrefix("rendered 975 of 1000 devices"), "\(whole.stdout)")
            #expect(try Self.generations(out).count == 2)
        }
    }

    /// What makes a night a night to render: any input's bytes, any option that changes the
    /// output, or `--rerender`.
    static let changes: [(name: String, arguments: [String], edit: (@Sendable (String) throws -> Void)?)] = [
        ("--rerender", ["--rerender"], nil),
        ("two inventory rows swapped", [], { inventory in
            var rows = try String(contentsOfFile: inventory, encoding: .utf8).components(separatedBy: "\r\n")
            rows.swapAt(1, 2)
            try rows.joined(separator: "\r\n").write(toFile: inventory, atomically: true, encoding: .utf8)
        }),
        ("another key policy", ["--key-missing", "serverURL=omit"], nil),
        ("another attribute", ["--attribute", "displayName=cn"], nil),
        ("another map", ["--map", "serialNumber=Serial Number"], nil),
        ("another format", ["--format", "xml"], nil),
        ("another missing-value policy", ["--missing", "empty"], nil),
    ]

    @Test("a changed input or option renders and publishes again", arguments: changes.indices)
    func changedNight(_ i: Int) throws {
        let change = Self.changes[i]
        try withTemporaryDirectory { dir in
            let out = dir.path("out"), inventory = dir.path("inventory.csv")
            try FileManager.default.copyItem(atPath: Paths.fixture("demo/inventory.csv"), toPath: inventory)
            #expect(try render(["--inventory", inventory, "--out", out, "--max-failure-ratio", "1"]).status == 3)
            try change.edit?(inventory)
            let r = try render(["--inventory", inventory, "--out", out, "--max-failure-ratio", "1", "--max-change-ratio", "1"] + change.arguments)
            #expect([0, 3].contains(r.status), "\(change.name): \(r.stderr)")
            #expect(r.stdout.hasPrefix("rendered "), "\(change.name): \(r.stdout)")
            #expect(try Self.generations(out).count == 2, "\(change.name)")
        }
    }
}
