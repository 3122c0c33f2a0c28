import Foundation
import TestSupport
import Testing

/// Every command the README and docs/*.md show in a ```sh block runs here, as written, with the
/// exit status the document states (`# exit N` at the end of the line; 0 when it says none), so an
/// example cannot drift from the tool. A command that cannot run in a test says why where it
/// stands (`# not run: REASON`). A block whose info string names a file (```json file=NAME) is
/// written there first: the job files the commands after it read. Commands run with `sh` in a
/// fresh folder per document that holds `Fixtures` and `tools` (links to the repository's), with
/// the built `appconfig` first on the PATH.
@Suite("The documents' commands", .serialized)
struct DocsCommandTests {
    struct Command: CustomTestStringConvertible, Sendable {
        var document: String
        var line: Int
        var text: String
        var status: Int32
        var notRun: String?
        var testDescription: String { "\(document):\(line)" }
    }

    struct Document: Sendable {
        var name: String
        /// In document order: a file to write (name, content), or a command.
        var steps: [Step]
        enum Step: Sendable { case file(String, String), command(Command) }
        var commands: [Command] { steps.compactMap { if case .command(let c) = $0 { c } else { nil } } }
    }

    /// The README and every document in docs/.
    static let documentNames: [String] = {
        let docs = (try? FileManager.default.contentsOfDirectory(atPath: Paths.root.appendingPathComponent("docs").path)) ?? []
        return ["README.md"] + docs.filter { $0.hasSuffix(".md") }.sorted().map { "docs/" + $0 }
    }()

    static func documents() throws -> [Document] { try documentNames.map { try parse($0) } }

    /// The fenced blocks of a Markdown file: ```sh blocks' commands (continuation lines joined,
    /// comment lines dropped) and ```LANG file=NAME blocks' contents.
    static func parse(_ name: String) throws -> Document {
        let lines = try String(contentsOf: Paths.root.appendingPathComponent(name), encoding: .utf8).components(separatedBy: "\n")
        var steps: [Document.Step] = []
        var i = 0
        while i < lines.count {
            let fence = lines[i].trimmingCharacters(in: .whitespaces)
            guard fence.hasPrefix("```") else { i += 1; continue }
            let info = fence.dropFirst(3).split(separator: " ").map(String.init)
            var body: [(Int, String)] = []
            i += 1
            while i < lines.count && !lines[i].trimmingCharacters(in: .whitespaces).hasPrefix("```") {
                body.append((i + 1, lines[i]))
                i += 1
            }
            i += 1
            if let file = info.first(where: { $0.hasPrefix("file=") }) {
                steps.append(.file(String(file.dropFirst(5)), body.map(\.1).joined(separator: "\n") + "\n"))
            } else if info.first == "sh" {
                var pending: (line: Int, text: String)?
                for (number, raw) in body {
                    let text = raw.trimmingCharacters(in: .whitespaces)
                    if pending == nil && (text.isEmpty || text.hasPrefix("#")) { continue }
                    if text.hasSuffix("\\") {
                        pending = (pending?.line ?? number, (pending?.text ?? "") + text.dropLast() + " ")
                        continue
                    }
                    let whole = (pending?.text ?? "") + text
                    steps.append(.command(command(whole, document: name, line: pending?.line ?? number)))
                    pending = nil
                }
            }
        }
        return Document(name: name, steps: steps)
    }

    /// A command line with its trailing comment read: `exit N` in it states the status (the last
    /// one), `# not run: REASON` (to the end) says why it is not run.
    static func command(_ line: String, document: String, line number: Int) -> Command {
        var command = Command(document: document, line: number, text: line, status: 0)
        guard let comment = line.range(of: "  #") ?? line.range(of: "\t#") else { return command }
        command.text = String(line[..<comment.lowerBound]).trimmingCharacters(in: .whitespaces)
        let note = String(line[comment.lowerBound...])
        if let notRun = note.range(of: "# not run:") {
            command.notRun = note[notRun.upperBound...].trimmingCharacters(in: .whitespaces)
        }
        let words = note.split(whereSeparator: { $0 == " " || $0 == ";" || $0 == "," || $0 == ":" }).map(String.init)
        for (i, word) in words.enumerated().dropLast() where word == "exit" {
            if let status = Int32(words[i + 1]) { command.status = status }
        }
        return command
    }

    @Test("a command's comment: its status, a reason not to run it, continuation lines joined", arguments: [
        ("appconfig lint a.xml", "appconfig lint a.xml", 0, nil),
        ("appconfig sources --inventory x.csv   # the mapping; exit 3", "appconfig sources --inventory x.csv", 3, nil),
        ("tools/bench   # run everything  # not run: half an hour", "tools/bench", 0, "half an hour"),
    ] as [(String, String, Int32, String?)])
    func comments(line: String, text: String, status: Int32, notRun: String?) {
        let c = Self.command(line, document: "d.md", line: 1)
        #expect((c.text, c.status, c.notRun) == (text, status, notRun))
    }

    @Test("the documents show commands, and every one that cannot run says why")
    func inventory() throws {
        let commands = try Self.documents().flatMap(\.commands)
        #expect(commands.count >= 10)
        for c in commands where c.notRun != nil { #expect(c.notRun?.isEmpty == false, "\(c.testDescription): \(c.text)") }
        #expect(commands.contains { $0.document == "README.md" && $0.text.hasPrefix("appconfig render") && $0.notRun == nil })
    }

    @Test("each document's commands, run in order, exit as the document says", arguments: documentNames)
    func run(_ name: String) throws {
        let document = try Self.parse(name)
        try withTemporaryDirectory { dir in
            for link in ["Fixtures", "tools"] {
                try FileManager.default.createSymbolicLink(at: dir.url.appendingPathComponent(link), withDestinationURL: Paths.root.appendingPathComponent(link))
            }
            var environment = ProcessInfo.processInfo.environment
            environment["PATH"] = URL(fileURLWithPath: Paths.appconfigBinary).deletingLastPathComponent().path + ":" + (environment["PATH"] ?? "/usr/bin:/bin")
            for step in document.steps {
                switch step {
                case .file(let file, let content):
                    try content.write(to: dir.url.appendingPathComponent(file), atomically: true, encoding: .utf8)
                case .command(let c):
                    guard c.notRun == nil else { continue }
                    let r = try runProcess("/bin/sh", ["-c", "cd '\(dir.path)' && \(c.text)"], environment: environment)
                    #expect(r.status == c.status, "\(c.testDescription): \(c.text)\n\(r.stdout)\(r.stderr)")
                }
            }
        }
    }

    /// A line with its measurements blotted out: seconds and rates differ from run to run.
    static func measured(_ line: String) -> String {
        line.replacingOccurrences(of: #"[0-9]+\.[0-9]+ ([kM]?devices/s|s)"#, with: "# $1", options: .regularExpression)
            .replacingOccurrences(of: #"[kM]?devices/s"#, with: "devices/s", options: .regularExpression)
    }

    @Test("the README's sample output is what tools/demo's job prints today, line for line (times and rates aside)")
    func demoSample() throws {
        let readme = try String(contentsOf: Paths.root.appendingPathComponent("README.md"), encoding: .utf8).components(separatedBy: "\n")
        let start = try #require(readme.firstIndex(of: "$ tools/demo"))
        let sample = Array(readme[(start + 1)...].prefix { !$0.hasPrefix("```") })
        // The job tools/demo runs (its release build aside), from a folder holding Fixtures.
        let script = try String(contentsOf: Paths.root.appendingPathComponent("tools/demo"), encoding: .utf8)
        let command = try #require(script.components(separatedBy: "\n").first { $0.hasPrefix(".build/release/appconfig render") })
        #expect(command.hasSuffix("\\"), "tools/demo's render is not where this test reads it")
        try withTemporaryDirectory { dir in
            try FileManager.default.createSymbolicLink(at: dir.url.appendingPathComponent("Fixtures"), withDestinationURL: Paths.root.appendingPathComponent("Fixtures"))
            let r = try runProcess(Paths.appconfigBinary, ["render", "--spec", "Fixtures/demo/spec.xml", "--values", "Fixtures/demo/values.json",
                                                           "--inventory", "Fixtures/demo/inventory.csv", "--directory", "Fixtures/demo/directory.ldif",
                                                           "--format", "binary", "--out", dir.path(".demo/out"), "--report", dir.path(".demo/report")])
            #expect(r.status == 3)
            let printed = r.stdout.replacingOccurrences(of: dir.url.path + "/", with: "").components(separatedBy: "\n").filter { !$0.isEmpty }
            #expect(printed.map(Self.measured) == sample.map(Self.measured), "\(printed.joined(separator: "\n"))")
        }
    }
}
