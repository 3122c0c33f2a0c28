import Foundation
import TestSupport
import Testing

/// Hostile inputs and faults against the built binary (issue 12's probe): each ends with one clear
/// line and a status, never a crash, a hang or a changed file that was not ours.
@Suite("Hostile inputs, end to end", .serialized)
struct HostileInputTests {
    struct Case: CustomTestStringConvertible, Sendable {
        var name: String
        /// Files to write in a fresh folder (name -> bytes); DIR in an argument is that folder.
        var files: [String: [UInt8]]
        var arguments: [String]
        var status: Int32
        /// The first line of stderr (of stdout for lint, which reports there); DIR stands for the folder.
        var stderr: String
        var testDescription: String { name }
    }

    static let spec = Paths.fixture("demo/spec.xml"), values = Paths.fixture("demo/values.json")
    static let inventory = Paths.fixture("demo/inventory.csv"), directory = Paths.fixture("demo/directory.ldif")
    static let deepPlist = Array(("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<plist version=\"1.0\">\n"
        + String(repeating: "<array>", count: 200_000) + String(repeating: "</array>", count: 200_000) + "</plist>\n").utf8)
    static let render = ["render", "--spec", spec, "--inventory", inventory, "--directory", directory, "--dry-run"]

    static let cases: [Case] = [
        // Issue 31: `--out .`/`--out ""` locked `..lock`, published over the working folder or rendered
        // the whole fleet before failing; now a usage error before anything is read.
        Case(name: "render --out DIR/. (a folder's own dot)", files: [:],
             arguments: ["render", "--spec", spec, "--inventory", inventory, "--out", "DIR/."], status: 2,
             stderr: "appconfig: --out \"DIR/.\" names no output of its own; give a path such as ./out [output.path]"),
        Case(name: "render --out \"\"", files: [:],
             arguments: ["render", "--spec", spec, "--inventory", inventory, "--out", ""], status: 2,
             stderr: "appconfig: --out \"\" names no output of its own; give a path such as ./out [output.path]"),
        Case(name: "render --tar DIR/..", files: [:],
             arguments: ["render", "--spec", spec, "--inventory", inventory, "--tar", "DIR/.."], status: 2,
             stderr: "appconfig: --tar \"DIR/..\" names no output of its own; give a path such as ./out [output.path]"),
        Case(name: "lint: values nested 200,000 levels", files: ["deep.plist": deepPlist],
             arguments: ["lint", spec, "--values", "DIR/deep.plist"], status: 1,
             stderr: "DIR/deep.plist:1:1: error: nesting deeper than 512 levels [values.syntax]"),
        Case(name: "compile: values nested 200,000 levels", files: ["deep.plist": deepPlist],
             arguments: ["compile", spec, "--values", "DIR/deep.plist"], status: 1,
             stderr: "DIR/deep.plist:1:1: error: nesting deeper than 512 levels [values.syntax]"),
        Case(name: "render: values nested 200,000 levels", files: ["deep.plist": deepPlist],
             arguments: render + ["--values", "DIR/deep.plist"], status: 1,
             stderr: "DIR/deep.plist:1:1: error: nesting deeper than 512 levels [values.syntax]"),
        Case(name: "a spec beyond 16 MiB is refused from its size", files: ["big.xml": [UInt8](repeating: 0x20, count: (16 << 20) + 1)],
             arguments: ["compile", "DIR/big.xml"], status: 1,
             stderr: "appconfig: DIR/big.xml is not read: it is 16777217 bytes; this kind of file is read up to 16 MiB [input.too-large]"),
        Case(name: "an inventory of 40,000 columns", files: ["wide.csv": Array(("UDID," + (1..<40_000).map { "c\($0)" }.joined(separator: ",") + "\n").utf8)],
             arguments: ["sources", "--inventory", "DIR/wide.csv"], status: 1,
             stderr: "DIR/wide.csv:1: error: the header has 40000 columns; at most 10000 are read [csv.too-many-columns]"),
        Case(name: "an empty directory file", files: ["empty.ldif": []],
             arguments: ["render", "--spec", spec, "--values", values, "--inventory", inventory, "--directory", "DIR/empty.ldif", "--dry-run"],
             status: 1, stderr: "appconfig: DIR/empty.ldif holds no directory entries [directory.empty]"),
        Case(name: "a join that matches nobody is an error that says why",
             files: ["inv.csv": Array("UDID,Email Address\nU1,jdoe\nU2,asmith\n".utf8),
                     "dir.ldif": Array("dn: cn=jdoe,dc=x\nobjectClass: user\nsAMAccountName: jdoe\n\ndn: cn=asmith,dc=x\nobjectClass: user\nsAMAccountName: asmith\n".utf8)],
             arguments: ["render", "--spec", spec, "--inventory", "DIR/inv.csv", "--directory", "DIR/dir.ldif", "--dry-run"], status: 1,
             stderr: "appconfig: DIR/dir.ldif: 0 of 2 devices found their user: the inventory's \"Email Address\" was matched against mail, which 0 of 2 "
                + "directory users have; 2 of the inventory's user keys match sAMAccountName: --user-attribute sAMAccountName? "
                + "(--allow-unjoined renders the devices without users) [join.none]"),
        Case(name: "a job file with a syntax error", files: ["job.json": Array("{\n  \"spec\": \"a.xml\",\n  \"quiet\": true\n  \"jobs\": 2\n}\n".utf8)],
             arguments: ["render", "DIR/job.json"], status: 2, stderr: "Error: job file DIR/job.json:4:3: expected ',' or '}'"),
        Case(name: "a job file with an unknown key names it", files: ["job.json": Array("{\"spec\": \"a.xml\", \"inventroy\": \"x.csv\"}".utf8)],
             arguments: ["render", "DIR/job.json"], status: 2,
             stderr: "Error: job file DIR/job.json:1:19: \"inventroy\" is not an option of render; did you mean \"inventory\"?"),
        Case(name: "a job file giving an option twice", files: ["job.json": Array("{\"spec\": \"a.xml\",\n \"spec\": \"b.xml\"}".utf8)],
             arguments: ["render", "DIR/job.json"], status: 2, stderr: "Error: job file DIR/job.json:2:2: \"spec\" is given twice"),
    ]

    @Test(arguments: cases)
    func refused(_ c: Case) throws {
        try withTemporaryDirectory { dir in
            for (name, bytes) in c.files { try Data(bytes).write(to: dir.url.appendingPathComponent(name)) }
            let r = try appconfig(c.arguments.map { $0.replacingOccurrences(of: "DIR", with: dir.path) })
            #expect(r.status == c.status, "\(r.stderr)")
            // The export checks' warnings on made-up keys (`U1`) come first; the case's line after them.
            let first = (c.arguments[0] == "lint" ? r.stdout : r.stderr).split(separator: "\n").first { !$0.contains("[inventory.") }.map(String.init) ?? ""
            #expect(first == c.stderr.replacingOccurrences(of: "DIR", with: dir.path), "\(r.stdout)")
        }
    }

    @Test("--out that is a symlink an admin made to another folder is refused, the folder untouched")
    func foreignSymlink() throws {
        try withTemporaryDirectory { dir in
            let foreign = dir.path("home"), out = dir.path("out")
            try FileManager.default.createDirectory(atPath: foreign, withIntermediateDirectories: true)
            try Data("keep me".utf8).write(to: URL(fileURLWithPath: foreign + "/notes.txt"))
            try FileManager.default.createSymbolicLink(atPath: out, withDestinationPath: "home")
            let r = try appconfig(["render", "--spec", Self.spec, "--values", Self.values, "--inventory", Self.inventory,
                                                            "--directory", Self.directory, "--out", out])
            #expect(r.status == 1)
            #expect(r.stderr == "appconfig: \(out) is a symlink to home, which is not a generation of this output; give a new --out path [output.exists]\n")
            #expect(try FileManager.default.destinationOfSymbolicLink(atPath: out) == "home")
            #expect(try FileManager.default.contentsOfDirectory(atPath: foreign) == ["notes.txt"])
            // Its own symlink is taken: a first run, then a rerun through the same path.
            try FileManager.default.removeItem(atPath: out)
            for _ in 0..<2 {
                let ok = try appconfig(["render", "--spec", Self.spec, "--values", Self.values, "--inventory", Self.inventory,
                                                                 "--directory", Self.directory, "--out", out, "--rerender", "--quiet"])
                #expect(ok.status == 3, "\(ok.stderr)")
            }
        }
    }
}
