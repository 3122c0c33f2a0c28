import Foundation
import TestSupport
import Testing

/// Chains of `--changed-only` nights, each against the last night's archive (its manifest and the
/// images beside it, kept or written anew as a night decides), with both inputs edited by seeded
/// random edits a night: rows and entries changed, added, removed and moved, join keys and DNs
/// changed, and one night in four a row or an entry given twice or an entry moved before the
/// version line's (mended the night after). Each night is compared with a
/// whole run of the same inputs: the same status, the same manifest lines and problems, the same
/// bytes for every device it wrote, and every device whose output changed written.
@Suite("Random chains of nights: each the same as a whole run", .serialized)
struct RandomNightChainTests {
    /// `form`: the delivery, and with assignments (devices render from variants) or not.
    func render(_ arguments: [String], form: String) throws -> ProcessResult {
        let delivery = String(form.prefix { $0 != " " }), values = form.hasSuffix("assignments") ? "demo/assignments.json" : "demo/values.json"
        return try appconfig(["render", "--spec", Paths.fixture("demo/spec.xml"), "--values", Paths.fixture(values), "--delivery", delivery] + arguments
                             + ["--quiet", "--max-failure-ratio", "1", "--max-change-ratio", "1"])
    }

    /// The demo's inputs, edited a night at a time: rows (CRLF, as Jamf's export) and LDIF entries.
    struct Inputs {
        var header: String
        var rows: [String]
        var entries: [String]

        init() throws {
            var rows = try String(contentsOfFile: Paths.fixture("demo/inventory.csv"), encoding: .utf8).components(separatedBy: "\r\n")
            header = rows.removeFirst()
            if rows.last == "" { rows.removeLast() }
            self.rows = rows
            entries = try String(contentsOfFile: Paths.fixture("demo/directory.ldif"), encoding: .utf8).components(separatedBy: "\n\n").filter { !$0.isEmpty }
        }

        func write(in dir: TemporaryDirectory, night: Int) throws -> [String] {
            ["--inventory", try dir.write(([header] + rows).joined(separator: "\r\n") + "\r\n", to: "inventory\(night).csv"),
             "--directory", try dir.write(entries.joined(separator: "\n\n") + "\n", to: "directory\(night).ldif")]
        }

        var users: [Int] { entries.indices.filter { entries[$0].contains("\nmail: ") } }
        func mail(_ entry: Int) -> String? { entries[entry].components(separatedBy: "\n").first { $0.hasPrefix("mail: ") }.map { String($0.dropFirst(6)) } }

        /// One edit that stands from tonight on, picked at random.
        mutating func editLasting(_ n: Int, _ random: inout SplitMix64) -> String {
            func row() -> Int { Int.random(in: 0..<rows.count, using: &random) }
            func user() -> Int { users[Int.random(in: 0..<users.count, using: &random)] }
            func replace(_ pattern: String, in i: Int, with text: (String) -> String) {
                guard let r = rows[i].range(of: pattern, options: .regularExpression) else { return }
                rows[i].replaceSubrange(r, with: text(String(rows[i][r])))
            }
            switch Int.random(in: 0..<11, using: &random) {
            case 0:  // a serial number (the spec reads it)
                replace(",[0-9A-Z]{12},[0-9A-F]{8}-", in: row()) { "," + String(format: "Q%02d", n % 100) + $0.dropFirst(4) }
                return "serial"
            case 1:
                if rows.count > 100 { rows.remove(at: row()) }
                return "row removed"
            case 2:
                var added = rows[row()]
                if let r = added.range(of: ",[0-9A-F]{8}-", options: .regularExpression) { added.replaceSubrange(r, with: String(format: ",FE%06X-", n)) }
                rows.insert(added, at: Int.random(in: 0...rows.count, using: &random))
                return "row added"
            case 3:
                let start = row(), end = min(rows.count, start + Int.random(in: 1...40, using: &random))
                let block = Array(rows[start..<end])
                rows.removeSubrange(start..<end)
                rows.insert(contentsOf: block, at: Int.random(in: 0...rows.count, using: &random))
                return "rows moved"
            case 4:  // another user's mail: the device joins another user
                if let other = mail(user()) { replace("[a-z0-9.]+@corp\\.example", in: row()) { _ in other } }
                return "row's user changed"
            case 5:
                let u = user()
                entries[u] = entries[u].replacingOccurrences(of: "\ndisplayName: ", with: "\ndisplayName: N\(n) ")
                    .replacingOccurrences(of: "\ndisplayName:: ", with: "\ndescription: \(n)\ndisplayName:: ")
                return "display name"
            case 6:  // a block of entries moved; now and then the first (its version line) or to the front
                let start = Int.random(in: 0..<entries.count, using: &random), end = min(entries.count, start + Int.random(in: 1...40, using: &random))
                let block = Array(entries[start..<end])
                entries.removeSubrange(start..<end)
                entries.insert(contentsOf: block, at: Int.random(in: 0...entries.count, using: &random))
                return "entries moved"
            case 7:
                entries.remove(at: user())
                return "user removed"
            case 8:  // a user's mail: the join key
                let u = user()
                entries[u] = entries[u].replacingOccurrences(of: "\nmail: ", with: "\nmail: m\(n).")
                return "user's mail"
            case 9:  // another OU
                let u = user()
                if let r = entries[u].range(of: ",OU=[^,]+", options: [.regularExpression, .caseInsensitive]) {
                    entries[u].replaceSubrange(r, with: ",OU=Moved\(n % 3)")
                }
                return "user moved"
            default:  // a new user, half the time with a mail a row names (its user may be gone)
                let named = rows[row()], mail = named.range(of: "[a-z0-9.]+@corp\\.example", options: .regularExpression).map { String(named[$0]) }
                let taken = Bool.random(using: &random) ? mail : nil
                entries.insert("dn: CN=New \(n),OU=Sales,DC=corp,DC=example\nobjectClass: user\nmail: \(taken ?? "x\(n)@corp.example")",
                               at: Int.random(in: 1...entries.count, using: &random))
                return "user added"
            }
        }
    }

    /// The device lines of a manifest (its header names the run's options and inputs).
    static func deviceLines(_ manifest: String) throws -> [Substring] {
        let text = try String(contentsOfFile: manifest, encoding: .utf8)
        return text.split(separator: "\n", omittingEmptySubsequences: false).drop { !$0.isEmpty }.dropFirst().filter { !$0.isEmpty && !$0.hasPrefix("end\t") }
    }

    @Test("six nights of random edits to both inputs: each --changed-only night as a whole run of its inputs",
          arguments: ["plist", "mdm-settings", "plist with assignments"], 0..<2)
    func chain(form: String, seed: Int) throws {
        func render(_ arguments: [String]) throws -> ProcessResult { try self.render(arguments, form: form) }
        var random = SplitMix64(seed: 0xC4A1_0000 + UInt64(seed))
        try withTemporaryDirectory { dir in
            var inputs = try Inputs()
            let first = try render(try inputs.write(in: dir, night: 0) + ["--tar", dir.path("night0.tar")])
            #expect(first.status == 3, "\(first.stderr)")
            var lastLines = Set(try Self.deviceLines(dir.path("night0.tar.manifest.tsv")).map(String.init))
            var last = "night0"
            var (directoryNights, inventoryNights) = (0, 0)
            for night in 1...6 {
                var edits = (0..<Int.random(in: 1...5, using: &random)).map { inputs.editLasting(night * 10 + $0, &random) }
                var tonight = inputs
                if random.next() % 4 == 0 {
                    switch Int.random(in: 0..<3, using: &random) {
                    case 0:
                        tonight.rows.insert(tonight.rows[Int.random(in: 0..<tonight.rows.count, using: &random)], at: Int.random(in: 0...tonight.rows.count, using: &random))
                        edits.append("a row given twice")
                    case 1:
                        let u = tonight.users[Int.random(in: 0..<tonight.users.count, using: &random)]
                        tonight.entries.insert(tonight.entries[u], at: Int.random(in: 1...tonight.entries.count, using: &random))
                        edits.append("an entry given twice")
                    default:  // the version line refused where its entry now stands
                        tonight.entries.insert(tonight.entries.remove(at: Int.random(in: 1..<tonight.entries.count, using: &random)), at: 0)
                        edits.append("an entry moved before the version line's")
                    }
                }
                let name = "\(form), seed \(seed), night \(night): \(edits)"
                let files = try tonight.write(in: dir, night: night)
                let carried = try render(files + ["--since", dir.path(last + ".tar"), "--changed-only", "--tar", dir.path("night\(night).tar"),
                                                  "--report", dir.path("report\(night)")])
                let whole = try render(files + ["--tar", dir.path("whole\(night).tar"), "--report", dir.path("whole\(night)")])
                #expect(carried.status == whole.status, "\(name): \(carried.stderr) \(whole.stderr)")
                guard carried.status == 3 || carried.status == 0 else { continue }
                let wholeLines = try Self.deviceLines(dir.path("whole\(night).tar.manifest.tsv"))
                // An output is its digest and path (a line's input digest may change alone).
                func output(_ line: some StringProtocol) -> String { line.split(separator: "\t")[0...1].joined(separator: "\t") }
                let lastOutputs = Set(lastLines.map(output))
                #expect(try String(contentsOfFile: dir.path("report\(night)/errors.jsonl"), encoding: .utf8)
                        == String(contentsOfFile: dir.path("whole\(night)/errors.jsonl"), encoding: .utf8), "\(name)")
                // The inputs' problems too (a refused LDIF line changes no device's output).
                #expect(try reportSummary(dir.path("report\(night)"))["errorsByCode"] as? [String: Int]
                        == reportSummary(dir.path("whole\(night)"))["errorsByCode"] as? [String: Int], "\(name)")
                guard FileManager.default.fileExists(atPath: dir.path("night\(night).tar")) else {
                    // Nothing to publish: every output the whole run made is last night's.
                    #expect(wholeLines.allSatisfy { lastOutputs.contains(output($0)) }, "\(name): a change not published")
                    continue
                }
                // The whole run's manifest lines, and last night's for the devices it did not render
                // (gone from the inventory, or failed tonight: they keep their last configuration).
                let lines = try Self.deviceLines(dir.path("night\(night).tar.manifest.tsv"))
                let rendered = Set(wholeLines)
                #expect(lines.filter { rendered.contains($0) } == wholeLines, "\(name)")
                let kept = lines.filter { !rendered.contains($0) }
                #expect(kept.allSatisfy { lastLines.contains(String($0)) }, "\(name): \(kept.filter { !lastLines.contains(String($0)) })")
                // Every device it wrote has the whole run's bytes, and every output that is not last
                // night's was written.
                let written = try CarriedNightTests.members(dir.path("night\(night).tar")), all = try CarriedNightTests.members(dir.path("whole\(night).tar"))
                for (member, digest) in written where member != "manifest.tsv" && member != "index.jsonl" { #expect(all[member] == digest, "\(name): \(member)") }
                let new = wholeLines.filter { !lastOutputs.contains(output($0)) }.map { String($0.split(separator: "\t")[1]) }
                #expect(new.filter { written[$0] == nil }.isEmpty, "\(name): not written: \(new.filter { written[$0] == nil })")
                // And changes.jsonl names exactly those devices as added or changed.
                let changes = try String(contentsOfFile: dir.path("report\(night)/changes.jsonl"), encoding: .utf8).split(separator: "\n").map {
                    try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: String])
                }
                let keysOfNew = Set(wholeLines.filter { !lastOutputs.contains(output($0)) }.map { String($0.split(separator: "\t")[2]) })
                #expect(Set(changes.filter { ["added", "changed"].contains($0["change"]) }.compactMap { $0["device"] }) == keysOfNew, "\(name)")
                lastLines = Set(lines.map(String.init))
                let summary = try reportSummary(dir.path("report\(night)"))
                if summary["directoryIncremental"] != nil { directoryNights += 1 }
                if summary["inventoryIncremental"] != nil { inventoryNights += 1 }
                last = "night\(night)"
            }
            // Not a chain of whole reads: most nights read both inputs where they changed. (A night
            // with an entry given twice or moved before the version line's, and the night after it,
            // read the directory whole; one with a row given twice, the inventory; a night that
            // publishes nothing is not counted.) In 48 seeds of plist and 12 of each other form, no
            // night differed from a whole run; with 0793c7b's version-line guard taken out, these
            // two seeds fail in plist and mdm-settings (errors.jsonl and errorsByCode).
            // (The demo's assignments match on groups: a directory read for its groups is read whole.)
            #expect((directoryNights >= 3 || form.hasSuffix("assignments")) && inventoryNights >= 3, "\(form), seed \(seed): \(directoryNights) and \(inventoryNights) incremental nights")
        }
    }
}
