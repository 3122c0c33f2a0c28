@testable import AppConfigBatch
import AppConfigCore
import AppConfigSpec
import Foundation
import TestSupport
import Testing

/// `--secret` sources: each kind read exactly, per-user files keyed by a variable, every failure
/// one problem that never shows a value.
@Suite("Secrets: --secret sources")
struct SecretStoreTests {
    static func string(_ store: SecretStore, _ name: String, key: String? = nil) -> String? {
        store.value(name, key: key).map { String(decoding: $0, as: UTF8.self) }
    }

    @Test("env, file (one trailing line break dropped), exec (its stdout), a keyed CSV and a keyed JSON")
    func sources() throws {
        try withTemporaryDirectory { dir in
            let one = dir.path("one"), csv = dir.path("users.csv")
            let json = dir.path("users.json")
            try "line one\nline two\n".write(toFile: one, atomically: true, encoding: .utf8)
            try "sAMAccountName,password\r\njdoe,\"p,w\"\"1\"\r\nasmith, \r\n".write(toFile: csv, atomically: true, encoding: .utf8)
            try #"{"key": "upn", "values": {"jdoe@corp.example": "pj", "ann@corp.example": "pa"}}"#.write(toFile: json, atomically: true, encoding: .utf8)
            let store = try SecretStore([
                SecretSource(parsing: "a=env:A_SECRET"), SecretSource(parsing: "b=file:" + one), SecretSource(parsing: "c=exec:printf 'x\\ny\\n'"),
                SecretSource(parsing: "d=file:" + csv), SecretSource(parsing: "e=file:" + json),
            ], environment: ["A_SECRET": "from env"])
            #expect(Self.string(store, "a") == "from env")
            #expect(Self.string(store, "b") == "line one\nline two")
            #expect(Self.string(store, "c") == "x\ny")
            #expect(store.keyVariable(of: "d") == .user(.sAMAccountName))
            #expect(Self.string(store, "d", key: "jdoe") == "p,w\"1")
            #expect(Self.string(store, "d", key: "asmith") == " ")
            #expect(Self.string(store, "d", key: "nobody") == nil)
            #expect(store.keyVariable(of: "e") == .user(.upn))
            #expect(Self.string(store, "e", key: "ann@corp.example") == "pa")
            store.clear()
            #expect(!store.has("a"))
        }
    }

    @Test("every bad source is one problem naming the source, never its value", arguments: [
        ("hunter2", "--secret takes NAME=env:VAR, NAME=file:PATH or NAME=exec:COMMAND (what was given is not shown: it may be a secret)"),
        ("pw=hunter2", "--secret pw: the source is env:VAR, file:PATH or exec:COMMAND (a secret's value never goes on the command line)"),
        ("pw=env:NOT_SET_ANYWHERE", "--secret pw: the environment has no NOT_SET_ANYWHERE"),
        ("pw=file:/nonexistent/secret", "--secret pw: cannot read /nonexistent/secret: No such file or directory"),
        ("pw=exec:echo hunter2; exit 1", "--secret pw: exec:echo hunter2; exit 1 failed (status 1)"),
    ])
    func badSources(text: String, message: String) {
        do {
            _ = try SecretStore([SecretSource(parsing: text)], environment: [:])
            Issue.record("\(text) was taken")
        } catch {
            #expect(error.code.rawValue == "secret.source")
            #expect(error.message == message)
        }
    }

    @Test("a secrets CSV saved as spreadsheets save it (a BOM, CRLF, quoted fields with commas and doubled quotes) reads as the inventory does: the values without their quotes")
    func spreadsheetCSV() throws {
        try withTemporaryDirectory { dir in
            let csv = dir.path("school.csv")
            let text = "\u{FEFF}sAMAccountName,password\r\nfox7,\"Fox\"\"quote\"\"7\"\r\nhorse,\"correct horse, battery\"\r\n\"multi\",\"line\r\nbreak\"\r\n"
            try text.write(toFile: csv, atomically: true, encoding: .utf8)
            let store = try SecretStore([SecretSource(name: "s", kind: .file(csv))])
            #expect(store.keyVariable(of: "s") == .user(.sAMAccountName))
            #expect(Self.string(store, "s", key: "fox7") == #"Fox"quote"7"#)
            #expect(Self.string(store, "s", key: "horse") == "correct horse, battery")
            #expect(Self.string(store, "s", key: "multi") == "line\r\nbreak")
            // Python's csv module, the oracle, reads the same file the same way.
            let python = try #require(which("python3"))
            let r = try runProcess(python, ["-c", "import csv,sys,json; print(json.dumps({r[0]: r[1] for r in list(csv.reader(open(sys.argv[1], encoding='utf-8-sig', newline='')))[1:]}))", csv])
            let oracle = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as! [String: String]
            for (key, value) in oracle { #expect(Self.string(store, "s", key: key) == value, "\(key)") }
        }
    }

    @Test("a keyed CSV whose header names no variable, and a line that is not KEY,value: the line number, not the line")
    func badKeyedFiles() throws {
        try withTemporaryDirectory { dir in
            let a = dir.path("a.csv"), b = dir.path("b.csv")
            try "login,password\njdoe,x\n".write(toFile: a, atomically: true, encoding: .utf8)
            try "sAMAccountName,password\njdoe,x\nsecret-without-comma\n".write(toFile: b, atomically: true, encoding: .utf8)
            for (path, message) in [(a, "--secret s: \(a) starts with a header VARIABLE,value (as sAMAccountName,password), the variable a user's row is found by"),
                                    (b, "--secret s: line 3 of \(b) is not KEY,value: it has 1 fields (a value that holds a comma is quoted)")] {
                do {
                    _ = try SecretStore([SecretSource(name: "s", kind: .file(path))])
                    Issue.record("\(path) was taken")
                } catch let error as Problem {
                    #expect(error.message == message)
                    #expect(!error.message.contains("secret-without-comma"))
                }
            }
        }
    }
}
