@testable import AppConfigBatch
@testable import AppConfigOutput
import Foundation
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Issue 53's defects, each named for what the probe found; each failed on the main before it. The
/// suite runs as the job runs at night: as root where the machine lets it, with files of another
/// user (uid 65534) made by `chown`.
@Suite("Faults, round 4: data never chooses a local file; secrets, merge and generations", .serialized)
struct FaultsRound4Tests {
    static let base = "https://cdn.example.com/appconfig", secretBase = "https://mdm.example.com/appconfig-secrets"
    static let isRoot = geteuid() == 0

    /// The demo's inputs with u0000005's `sAMAccountName` (in the user's own directory entry) set
    /// to `name` (base64 when it holds a NUL or starts with a space, as LDIF writes it).
    static func directory(samAccountName name: String, in dir: TemporaryDirectory) throws -> String {
        let text = try String(contentsOfFile: Paths.fixture("demo/directory.ldif"), encoding: .utf8)
        let line = name.utf8.contains(0) || name.hasPrefix(" ") ? "sAMAccountName:: " + Data(name.utf8).base64EncodedString() : "sAMAccountName: " + name
        return try dir.write(text.replacingOccurrences(of: "sAMAccountName: u0000005\n", with: line + "\n"), to: "directory.ldif")
    }

    static func render(_ arguments: [String], values: String, directory: String = Paths.fixture("demo/directory.ldif"),
                       environment extra: [String: String] = [:], cwd: String? = nil) throws -> ProcessResult {
        var environment = ProcessInfo.processInfo.environment
        for (k, v) in extra { environment[k] = v }
        return try runProcess(Paths.appconfigBinary, ["render", "--spec", Paths.fixture("demo/spec.xml"), "--values", values,
                                                      "--inventory", Paths.fixture("demo/inventory.csv"), "--directory", directory,
                                                      "--delivery", "ddm", "--asset-base-url", base, "--quiet"] + arguments, environment: environment)
    }

    /// `errors.jsonl`'s records.
    static func errors(_ report: String) throws -> [[String: Any]] {
        try String(contentsOfFile: report + "/errors.jsonl", encoding: .utf8).split(separator: "\n")
            .map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any] }
    }

    /// Every byte of a folder's files and a tar's (their concatenation).
    static func everyByte(_ paths: [String]) -> Data {
        var all = Data()
        for p in paths {
            if let sub = FileManager.default.subpaths(atPath: p) {
                for s in sub { all += FileManager.default.contents(atPath: p + "/" + s) ?? Data() }
            } else {
                all += FileManager.default.contents(atPath: p) ?? Data()
            }
        }
        return all
    }

    static func openssl(_ args: [String]) throws -> ProcessResult {
        let r = try runProcess(try #require(which("openssl")), args)
        #expect(r.status == 0, "\(args): \(r.stderr)")
        return r
    }

    /// A self-signed certificate and its key in `dir`: `NAME.pem`, `NAME.key`.
    static func certificate(_ name: String, in dir: TemporaryDirectory, days: Int = 2) throws {
        _ = try openssl(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", dir.path(name + ".key"), "-out", dir.path(name + ".pem"),
                         "-subj", "/CN=\(name)", "-days", String(days)])
    }

    /// `ca.pem` (a self-signed certificate) and a copy of it per demo user, `certs/u0000000.pem` ...:
    /// what a template `certs/$(sAMAccountName).pem` reads.
    static func certificatePerUser(in dir: TemporaryDirectory) throws {
        try FileManager.default.createDirectory(atPath: dir.path("certs"), withIntermediateDirectories: true)
        try certificate("ca", in: dir)
        for n in 0..<1000 { try FileManager.default.copyItem(atPath: dir.path("ca.pem"), toPath: dir.path(String(format: "certs/u%07d.pem", n))) }
    }

    // MARK: 1. Paths from data

    @Test("1. a directory value in a credential file template (../, absolute, NUL-cut suffix, a control character) fails the device; no other file is read",
          arguments: ["../../../../../../../../etc/passwd", "/etc/passwd", "victim\u{0}", "u0000005\u{1}", ".."])
    func credentialPathFromDirectory(_ hostile: String) throws {
        try withTemporaryDirectory { dir in
            // Every user's certificate, in the template's folder.
            try Self.certificatePerUser(in: dir)
            // What the hostile value aims at: a file beside the folder, as ../victim.pem or victim\0.pem would name it.
            try "SECRET-OF-ROOT\n".write(toFile: dir.path("victim"), atomically: true, encoding: .utf8)
            let values = try dir.write(#"{"values": {"theme": "system"}, "credentials": [{"identifier": "ca", "kind": "certificate", "Certificate": {"file": "certs/$(sAMAccountName).pem"}}]}"#, to: "values.json")
            let directory = try Self.directory(samAccountName: hostile, in: dir)
            let out = dir.path("out"), report = dir.path("report")
            // Run from another folder: the template is relative to the values file's folder, not the working directory.
            let r = try Self.render(["--out", out, "--report", report], values: values, directory: directory)
            #expect(r.status == 3, "\(r.stderr)")
            let failed = try Self.errors(report).filter { $0["code"] as? String == "device.credential-path" }
            #expect(failed.count == 2, "\(failed)")  // u0000005's two devices
            #expect(failed.allSatisfy { ($0["message"] as? String)?.hasPrefix(#"credential "ca", Certificate: the value of $(sAMAccountName) holds"#) == true })
            #expect(failed.allSatisfy { $0["variable"] as? String == "sAMAccountName" })
            let bytes = Self.everyByte([out + ".generations", report])
            #expect(bytes.range(of: Data("SECRET-OF-ROOT".utf8)) == nil)
            #expect(bytes.range(of: Data("root:x:0:0".utf8)) == nil)
        }
    }

    @Test("1. the file a template names must be a regular file of the job's user or root, not writable by others: a symlink, a FIFO (never blocks), a device, another user's file are refused")
    func credentialFileKinds() throws {
        try withTemporaryDirectory { dir in
            try Self.certificatePerUser(in: dir)
            // u0000005: a symlink to a root-only file; u0000006: a FIFO; u0000007: world-writable; u0000008: another user's.
            try "SECRET-OF-ROOT\n".write(toFile: dir.path("shadow"), atomically: true, encoding: .utf8)
            chmod(dir.path("shadow"), 0o600)
            try FileManager.default.removeItem(atPath: dir.path("certs/u0000005.pem"))
            try FileManager.default.createSymbolicLink(atPath: dir.path("certs/u0000005.pem"), withDestinationPath: dir.path("shadow"))
            try FileManager.default.removeItem(atPath: dir.path("certs/u0000006.pem"))
            #expect(mkfifo(dir.path("certs/u0000006.pem"), 0o600) == 0)
            chmod(dir.path("certs/u0000007.pem"), 0o666)
            let foreign = Self.isRoot && chown(dir.path("certs/u0000008.pem"), 65534, 65534) == 0
            let values = try dir.write(#"{"values": {"theme": "system"}, "credentials": [{"identifier": "ca", "kind": "certificate", "Certificate": {"file": "certs/$(sAMAccountName).pem"}}]}"#, to: "values.json")
            let report = dir.path("report")
            let started = Date()
            let r = try Self.render(["--out", dir.path("out"), "--report", report], values: values)
            #expect(Date().timeIntervalSince(started) < 20)
            #expect(r.status == 3, "\(r.stderr)")
            let messages = try Self.errors(report).filter { $0["code"] as? String == "device.credential-file" }.compactMap { $0["message"] as? String }
            #expect(messages.contains { $0.hasSuffix("u0000005.pem: it is a symlink, which is not followed") }, "\(messages)")
            #expect(messages.contains { $0.hasSuffix("u0000006.pem is not a regular file") }, "\(messages)")
            #expect(messages.contains { $0.hasSuffix("u0000007.pem is writable by others") }, "\(messages)")
            if foreign { #expect(messages.contains { $0.hasSuffix("u0000008.pem is owned by user 65534, not by the job's user or root") }, "\(messages)") }
            #expect(Self.everyByte([dir.path("out.generations")]).range(of: Data("SECRET-OF-ROOT".utf8)) == nil)
        }
    }

    @Test("1. a path the admin wrote whole (no variable) may be a symlink they made, as a distribution's CA link")
    func literalSymlink() throws {
        try withTemporaryDirectory { dir in
            try Self.certificate("ca", in: dir)
            try FileManager.default.createSymbolicLink(atPath: dir.path("current-ca.pem"), withDestinationPath: dir.path("ca.pem"))
            let values = try dir.write(#"{"values": {"theme": "system"}, "credentials": [{"identifier": "ca", "kind": "certificate", "Certificate": {"file": "current-ca.pem"}}]}"#, to: "values.json")
            let r = try Self.render(["--dry-run"], values: values)
            #expect(r.status == 3, "\(r.stderr)")
            #expect(!r.stdout.contains("device.credential"), "\(r.stdout)")
        }
    }

    // MARK: 2. Certificates shipped parsed

    @Test("2. a certificate file with a private key, a password line, a second certificate or text beside it fails the device; a clean one ships as openssl re-encodes it")
    func certificateParsed() throws {
        try withTemporaryDirectory { dir in
            try Self.certificate("ca", in: dir)
            try Self.certificate("other", in: dir)
            let pem = try String(contentsOfFile: dir.path("ca.pem"), encoding: .utf8), key = try String(contentsOfFile: dir.path("ca.key"), encoding: .utf8)
            let other = try String(contentsOfFile: dir.path("other.pem"), encoding: .utf8)
            let cases: [(String, String, String)] = [
                ("combined", key + pem, "it holds a PRIVATE KEY block: only a certificate is delivered"),
                ("password", "password=hunter2-SECRET\n" + pem, "it holds text beside its certificate (a password, a comment): only a certificate is delivered"),
                ("bundle", pem + other, "it holds 2 certificates: a credential certificate is one certificate (give each its own)"),
            ]
            for (name, text, why) in cases {
                let file = try dir.write(text, to: name + ".pem")
                let values = try dir.write(#"{"values": {"theme": "system"}, "credentials": [{"identifier": "ca", "kind": "certificate", "Certificate": {"file": "\#(file)"}}]}"#, to: name + ".json")
                let out = dir.path(name + ".tar"), report = dir.path(name + "-report")
                let r = try Self.render(["--tar", out, "--report", report], values: values)
                #expect(r.status == 1, "\(name): \(r.stderr)")  // every device fails: held back
                let messages = Set(try Self.errors(report).compactMap { $0["message"] as? String })
                #expect(messages.contains(#"credential "ca", Certificate: \#(file) cannot be delivered: \#(why)"#), "\(name): \(messages)")
            }
            // The clean certificate: exactly `openssl x509`'s PEM of it, whatever else its file held around it.
            let values = try dir.write(#"{"values": {"theme": "system"}, "credentials": [{"identifier": "ca", "kind": "certificate", "Certificate": {"file": "\#(dir.path("ca.pem"))"}}]}"#, to: "clean.json")
            let out = dir.path("clean")
            #expect(try Self.render(["--out", out], values: values).status == 3)
            let reencoded = try Self.openssl(["x509", "-in", dir.path("ca.pem")]).stdout
            let published = try #require(GenerationFolder.published(out))
            let pems = try FileManager.default.contentsOfDirectory(atPath: published + "/assets").filter { $0.hasSuffix(".pem") }
            #expect(pems.count == 1)
            #expect(try String(contentsOfFile: published + "/assets/" + pems[0], encoding: .utf8) == reencoded)
        }
    }

    // MARK: 3. Secret sources

    static let passwordValues = #"{"values": {"theme": "system"}, "credentials": [{"identifier": "pw", "kind": "password", "UserName": "$(sAMAccountName)", "Password": {"secret": "pw"}}]}"#

    @Test("3. --secret file: of a FIFO is read to its end; of a device is refused; empty, non-UTF-8 and NUL secrets from any source stop the run (exit 2)")
    func secretSources() throws {
        try withTemporaryDirectory { dir in
            let values = try dir.write(Self.passwordValues, to: "values.json")
            func run(_ source: String, environment: [String: String] = [:]) throws -> ProcessResult {
                try Self.render(["--dry-run", "--secret-asset-base-url", Self.secretBase, "--secret", "pw=" + source], values: values, environment: environment)
            }
            // A FIFO with a writer: its text is the secret (the run renders; nothing empty is delivered).
            let fifo = dir.path("pw.fifo")
            #expect(mkfifo(fifo, 0o600) == 0)
            let writer = Process()
            writer.executableURL = URL(fileURLWithPath: "/bin/sh")
            writer.arguments = ["-c", "printf 'from-a-pipe' > '\(fifo)'"]
            try writer.run()
            #expect(try run("file:" + fifo).status == 3)
            writer.waitUntilExit()
            try "".write(toFile: dir.path("empty"), atomically: true, encoding: .utf8)
            try Data([0x70, 0xFF, 0x77]).write(to: URL(fileURLWithPath: dir.path("latin1")))
            try Data([0x70, 0x00, 0x77]).write(to: URL(fileURLWithPath: dir.path("nul")))
            let cases: [(String, [String: String], String)] = [
                ("file:/dev/zero", [:], "appconfig: --secret pw: /dev/zero is a device or a socket, not a file or a pipe [secret.source]\n"),
                ("file:" + dir.path("empty"), [:], "appconfig: --secret pw: \(dir.path("empty")) is empty: a secret has a value [secret.empty]\n"),
                ("env:PW_EMPTY", ["PW_EMPTY": ""], "appconfig: --secret pw: env:PW_EMPTY is empty: a secret has a value [secret.empty]\n"),
                ("exec:true", [:], "appconfig: --secret pw: exec:true is empty: a secret has a value [secret.empty]\n"),
                ("file:" + dir.path("latin1"), [:], "appconfig: --secret pw: \(dir.path("latin1")) is not UTF-8 text [secret.source]\n"),
                ("file:" + dir.path("nul"), [:], "appconfig: --secret pw: \(dir.path("nul")) holds a NUL byte, which no secret can [secret.source]\n"),
            ]
            for (source, environment, message) in cases {
                let r = try run(source, environment: environment)
                #expect(r.status == 2, "\(source): \(r.stderr)")
                #expect(r.stderr.hasSuffix(message), "\(source): \(r.stderr)")
            }
        }
    }

    @Test("3. --secret file: a symlink into a folder others can write (/tmp) is refused")
    func secretSymlinkIntoSharedFolder() throws {
        try withTemporaryDirectory { dir in
            let values = try dir.write(Self.passwordValues, to: "values.json")
            let shared = dir.path("shared")
            try FileManager.default.createDirectory(atPath: shared, withIntermediateDirectories: true)
            chmod(shared, 0o1777)
            try "planted-by-another-user".write(toFile: shared + "/pw", atomically: true, encoding: .utf8)
            try FileManager.default.createSymbolicLink(atPath: dir.path("pw"), withDestinationPath: shared + "/pw")
            let r = try Self.render(["--dry-run", "--secret-asset-base-url", Self.secretBase, "--secret", "pw=file:" + dir.path("pw")], values: values)
            #expect(r.status == 2)
            #expect(r.stderr.contains("is a symlink to \(shared)/pw, in a folder other users can write"), "\(r.stderr)")
        }
    }

    // MARK: 4. Tars that hold secrets

    @Test("4. a tar holding secret-assets/ is created 0600 (its temporary and its final file), and so is merge's output of such tars")
    func secretTarMode() throws {
        try withTemporaryDirectory { dir in
            let values = try dir.write(Self.passwordValues, to: "values.json")
            try "hunter2-\u{00E9}".write(toFile: dir.path("pw"), atomically: true, encoding: .utf8)
            // Shards of one run share the key secret documents are named by.
            let key = try dir.write("0123456789abcdef0123456789abcdef", to: "asset-key")
            chmod(key, 0o600)
            var shards: [String] = []
            for (i, name) in ["s0.tar", "s1.tar"].enumerated() {
                let r = try Self.render(["--tar", dir.path(name), "--shard", "\(i)/2", "--secret-asset-base-url", Self.secretBase,
                                         "--secret", "pw=file:" + dir.path("pw"), "--secret-asset-key", "file:" + key], values: values)
                #expect(r.status == 3, "\(r.stderr)")
                shards.append(dir.path(name))
            }
            let m = try appconfig(["merge"] + shards + ["--tar", dir.path("merged.tar")])
            #expect(m.status == 0, "\(m.stderr)")
            for name in ["s0.tar", "s1.tar", "merged.tar"] {
                var s = stat()
                #expect(stat(dir.path(name), &s) == 0 && s.st_mode & 0o777 == 0o600, "\(name): \(String(s.st_mode & 0o777, radix: 8))")
            }
        }
    }

    // MARK: 5. Shared keys

    @Test("5. a user who copied another's sAMAccountName: both users' devices fail with credential.shared-key naming the two users; neither is given a password")
    func sharedKey() throws {
        try withTemporaryDirectory { dir in
            let values = try dir.write(Self.passwordValues, to: "values.json")
            var csv = "sAMAccountName,password\n"
            for n in 0..<1000 { csv += String(format: "u%07d,pw-%d-SECRET\n", n, n) }
            let passwords = try dir.write(csv, to: "passwords.csv")
            // u0000006 sets their own sAMAccountName to u0000005's.
            let text = try String(contentsOfFile: Paths.fixture("demo/directory.ldif"), encoding: .utf8)
            let directory = try dir.write(text.replacingOccurrences(of: "sAMAccountName: u0000006\n", with: "sAMAccountName: u0000005\n"), to: "directory.ldif")
            let report = dir.path("report"), out = dir.path("out")
            let r = try Self.render(["--out", out, "--report", report, "--secret-asset-base-url", Self.secretBase, "--secret", "pw=file:" + passwords],
                                    values: values, directory: directory)
            #expect(r.status == 3, "\(r.stderr)")
            let shared = try Self.errors(report).filter { $0["code"] as? String == "credential.shared-key" }
            #expect(shared.count >= 2, "\(shared)")
            let message = try #require(shared.first?["message"] as? String)
            #expect(message.hasPrefix(#"the secret "pw" by $(sAMAccountName) "u0000005" is given by two users, "#), "\(message)")
            #expect(message.contains("and"), "\(message)")
            // Nobody got u0000005's password.
            let published = try #require(GenerationFolder.published(out))
            #expect(Self.everyByte([published + "/secret-assets"]).range(of: Data("pw-5-SECRET".utf8)) == nil)
        }
    }

    @Test("5. two users whose file paths differ only before a filter (U0000005|lower, u0000005|lower) share the file: both fail")
    func sharedPathAfterFilter() throws {
        try withTemporaryDirectory { dir in
            try Self.certificatePerUser(in: dir)
            let values = try dir.write(#"{"values": {"theme": "system"}, "credentials": [{"identifier": "ca", "kind": "certificate", "Certificate": {"file": "certs/$(sAMAccountName|lower).pem"}}]}"#, to: "values.json")
            let text = try String(contentsOfFile: Paths.fixture("demo/directory.ldif"), encoding: .utf8)
            let directory = try dir.write(text.replacingOccurrences(of: "sAMAccountName: u0000006\n", with: "sAMAccountName: U0000005\n"), to: "directory.ldif")
            let report = dir.path("report")
            let r = try Self.render(["--dry-run", "--report", report], values: values, directory: directory)
            #expect(r.status == 3, "\(r.stderr)")
            let shared = try Self.errors(report).filter { $0["code"] as? String == "credential.shared-key" }.compactMap { $0["message"] as? String }
            #expect(shared.count >= 2 && shared.allSatisfy { $0.hasPrefix(#"the file certs/$(sAMAccountName|lower).pem as "certs/u0000005.pem" is given by two users, "#) }, "\(shared)")
        }
    }

    // MARK: 6. exec: sources

    @Test("6. exec: past --secret-timeout is killed with its process group (one line, exit 2); its environment lacks the other secrets and LDAP_PASSWORD")
    func execSources() throws {
        try withTemporaryDirectory { dir in
            let values = try dir.write(#"{"values": {"theme": "system"}, "credentials": [{"identifier": "pw", "kind": "password", "UserName": "$(sAMAccountName)", "Password": {"secret": "pw"}}, {"identifier": "scep", "kind": "scep", "URL": "https://scep.example.com", "Challenge": {"secret": "challenge"}}]}"#, to: "values.json")
            let pidFile = dir.path("grandchild.pid")
            let started = Date()
            let slow = try Self.render(["--dry-run", "--secret-asset-base-url", Self.secretBase, "--secret-timeout", "1",
                                        "--secret", "pw=exec:sleep 60 & echo $! > '\(pidFile)'; wait", "--secret", "challenge=env:CHALLENGE"],
                                       values: values, environment: ["CHALLENGE": "c-1"])
            #expect(Date().timeIntervalSince(started) < 15)
            #expect(slow.status == 2)
            #expect(slow.stderr.hasSuffix("did not finish within 1 s (--secret-timeout): it was killed [secret.source]\n"), "\(slow.stderr)")
            // The background `sleep` of the child went with its group.
            let pid = Int32(try String(contentsOfFile: pidFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines))!
            // Gone, or a zombie waiting for the machine's init to reap it: never still sleeping.
            usleep(200_000)
            let state = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8))?.split(separator: ")").last?.split(separator: " ").first
            #expect(state == nil || state == "Z", "\(String(describing: state))")
            // What the child sees of the environment.
            let envFile = dir.path("env")
            let r = try Self.render(["--dry-run", "--secret-asset-base-url", Self.secretBase,
                                     "--secret", "pw=exec:env > '\(envFile)'; echo from-vault", "--secret", "challenge=env:CHALLENGE"],
                                    values: values, environment: ["CHALLENGE": "challenge-SECRET", "LDAP_PASSWORD": "ldap-SECRET"])
            #expect(r.status == 3, "\(r.stderr)")
            let seen = try String(contentsOfFile: envFile, encoding: .utf8)
            #expect(!seen.contains("challenge-SECRET") && !seen.contains("ldap-SECRET") && seen.contains("PATH="))
        }
    }

    // MARK: 7. Keyed JSON secrets

    @Test("7. keyed JSON secret files: a key given twice and a syntax error name their line and column", arguments: [
        (#"{"key": "sAMAccountName", "values": {"u0000001": "a", "u0000001": "b"}}"#, ":1:55: error: --secret pw: the key \"u0000001\" is given twice"),
        ("{\"key\": \"sAMAccountName\",\n \"values\": {\"u0000001\": \"a\" \"u0000002\": \"b\"}}", ":2:29: error: --secret pw: expected ',' or '}'"),
    ])
    func keyedJSON(_ text: String, _ message: String) throws {
        try withTemporaryDirectory { dir in
            let values = try dir.write(Self.passwordValues, to: "values.json")
            let file = try dir.write(text, to: "pw.json")
            let r = try Self.render(["--dry-run", "--secret-asset-base-url", Self.secretBase, "--secret", "pw=file:" + file], values: values)
            #expect(r.status == 2)
            #expect(r.stderr.contains(file + message), "\(r.stderr)")
        }
    }

    // MARK: 8, 9. Secret documents' names; ACME

    @Test("8, 9. secret documents are named by an HMAC under the key kept beside the output (0600), never their SHA-256, with no Hash-SHA-256 unless asked; ACME documents are secret")
    func secretNames() throws {
        try withTemporaryDirectory { dir in
            let values = try dir.write(#"{"values": {"theme": "system"}, "credentials": [{"identifier": "pw", "kind": "password", "UserName": "$(sAMAccountName)", "Password": {"secret": "pw"}}, {"identifier": "acme", "kind": "acme", "DirectoryURL": "https://ca.example.com/acme", "ClientIdentifier": "$(udid)", "KeyType": "ECSECPrimeRandom", "KeySize": 384, "HardwareBound": true, "Subject": [[["CN", "$(udid)"]]]}]}"#, to: "values.json")
            try "tr0ub4dor&3".write(toFile: dir.path("pw"), atomically: true, encoding: .utf8)
            let out = dir.path("out")
            for night in 0..<2 {
                let r = try Self.render(["--out", out, "--secret-asset-base-url", Self.secretBase, "--secret", "pw=file:" + dir.path("pw"), "--rerender"], values: values)
                #expect(r.status == 3, "night \(night): \(r.stderr)")
            }
            var key = stat()
            #expect(stat(out + ".secret-asset-key", &key) == 0 && key.st_mode & 0o777 == 0o600)
            let published = try #require(GenerationFolder.published(out))
            let declarations = try String(contentsOfFile: published + "/declarations.jsonl", encoding: .utf8)
            // Hash-SHA-256 in every data asset's declaration, and in no other.
            let hashes = declarations.components(separatedBy: "Hash-SHA-256").count - 1
            #expect(hashes > 0 && hashes == declarations.components(separatedBy: "\"com.apple.asset.data\"").count - 1, "\(hashes)")
            let secretFiles = try FileManager.default.contentsOfDirectory(atPath: published + "/secret-assets")
            #expect(try FileManager.default.contentsOfDirectory(atPath: published + "/assets").allSatisfy { $0.hasSuffix(".plist") })  // ACME not public
            // Every secret document the sets name (assets.live lists them) is in secret-assets/, and no other.
            let live = try String(contentsOfFile: published + "/assets.live", encoding: .utf8).split(separator: "\n")
                .filter { $0.hasPrefix("secret-assets/") }.map { String($0.dropFirst("secret-assets/".count)) }
            #expect(!live.isEmpty && Set(secretFiles) == Set(live), "\(secretFiles.count) files, \(live.count) live")
            // Each name is HMAC-SHA256(key, bytes) (Python's hmac the oracle), never SHA-256(bytes).
            let python = try #require(which("python3"))
            let check = try runProcess(python, ["-c", """
                import hashlib, hmac, os, sys
                key = open(sys.argv[1], 'rb').read().rstrip(b'\\r\\n')
                folder = sys.argv[2]
                bad = 0
                for name in os.listdir(folder):
                    data = open(os.path.join(folder, name), 'rb').read()
                    stem = name.split('.')[0]
                    bad += stem != hmac.new(key, data, hashlib.sha256).hexdigest() or stem == hashlib.sha256(data).hexdigest()
                print(bad, len(os.listdir(folder)))
                """, out + ".secret-asset-key", published + "/secret-assets"])
            #expect(check.stdout == "0 \(secretFiles.count)\n", "\(check.stdout)\(check.stderr)")
            // --secret-asset-hash writes the hash back.
            let hashed = dir.path("hashed")
            #expect(try Self.render(["--out", hashed, "--secret-asset-base-url", Self.secretBase, "--secret", "pw=file:" + dir.path("pw"), "--secret-asset-hash"], values: values).status == 3)
            let withHash = try String(contentsOfFile: try #require(GenerationFolder.published(hashed)) + "/declarations.jsonl", encoding: .utf8)
            #expect(withHash.contains(#""Authentication":{"Type":"MDM"},"Reference":{"ContentType":"application/json","DataURL":"\#(Self.secretBase)/"#))
            #expect(withHash.components(separatedBy: "Hash-SHA-256").count > declarations.components(separatedBy: "Hash-SHA-256").count)
        }
    }

    // MARK: 10-12. Merge

    /// Three shard archives of the demo (plist delivery).
    static func shards(in dir: TemporaryDirectory, folder: Bool = false) throws -> [String] {
        try (0..<2).map { i in
            let path = dir.path(folder ? "o-s\(i)" : "s\(i).tar")
            let r = try appconfig(["render", "--spec", Paths.fixture("demo/spec.xml"), "--values", Paths.fixture("demo/values.json"),
                                                           "--inventory", Paths.fixture("demo/inventory.csv"), "--directory", Paths.fixture("demo/directory.ldif"),
                                                           "--quiet", "--shard", "\(i)/2", folder ? "--out" : "--tar", path])
            #expect(r.status == 3, "\(r.stderr)")
            return path
        }
    }

    /// Rewrites a tar's headers with Python's tarfile: `edit` is Python code run on each member `m` (index `i`).
    static func rewriteTar(_ path: String, to out: String, _ edit: String) throws {
        let python = try #require(which("python3"))
        let r = try runProcess(python, ["-c", """
            import sys, tarfile, io
            src = tarfile.open(sys.argv[1])
            members = [(m, src.extractfile(m).read()) for m in src.getmembers()]
            dst = tarfile.open(sys.argv[2], 'w', format=tarfile.USTAR_FORMAT)
            devices = [k for k, (m, _) in enumerate(members) if '/' in m.name]
            \(edit)
            for m, data in members:
                dst.addfile(m, io.BytesIO(data))
            dst.close()
            """, path, out])
        #expect(r.status == 0, "\(r.stderr)")
    }

    @Test("10. merge refuses device members out of their index's order or name: swapped members, ../ names, absolute names", arguments: [
        ("members[devices[0]], members[devices[1]] = members[devices[1]], members[devices[0]]", "which its index does not name there"),
        ("members[devices[0]][0].name = '../../escape.plist'", "which leaves the output's folder"),
        ("members[devices[0]][0].name = '/etc/cron.d/x'", "which leaves the output's folder"),
    ])
    func mergeMembers(_ edit: String, _ message: String) throws {
        try withTemporaryDirectory { dir in
            let shards = try Self.shards(in: dir)
            try Self.rewriteTar(shards[0], to: dir.path("edited.tar"), edit)
            let r = try appconfig(["merge", dir.path("edited.tar"), shards[1], "--tar", dir.path("m.tar")])
            #expect(r.status == 2)
            #expect(r.stderr.contains(message) && r.stderr.hasSuffix("[merge.input]\n"), "\(r.stderr)")
            #expect(!FileManager.default.fileExists(atPath: dir.path("m.tar")))
        }
    }

    @Test("11. merge of a tar whose member size is negative (or not octal) is merge.input, not a crash", arguments: ["-0000000001", "0000000001x", "77777777777777"])
    func mergeNegativeSize(_ field: String) throws {
        try withTemporaryDirectory { dir in
            let shards = try Self.shards(in: dir)
            var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: shards[0])))
            let text = Array(field.utf8.prefix(12)) + [UInt8](repeating: 0, count: max(0, 12 - field.utf8.count))
            bytes.replaceSubrange(124..<136, with: text)
            // The header's checksum made right, so only the size is wrong.
            bytes.replaceSubrange(148..<156, with: [UInt8](repeating: 0x20, count: 8))
            let sum = bytes[0..<512].reduce(0) { $0 + Int($1) }
            bytes.replaceSubrange(148..<156, with: Array(String(format: "%06o\0 ", sum).utf8))
            try Data(bytes).write(to: URL(fileURLWithPath: dir.path("bad.tar")))
            let r = try appconfig(["merge", dir.path("bad.tar"), shards[1], "--tar", dir.path("m.tar")])
            #expect(r.status == 2, "\(r.stderr)")
            #expect(r.stderr == "appconfig: \(dir.path("bad.tar")) is not an archive appconfig wrote: a header without a name or a size in octal digits at byte 0 [merge.input]\n", "\(r.stderr)")
        }
    }

    @Test("12. merge --out refuses a shard whose symlink names a folder that is not its generation, and files of another user (a planted hard link)")
    func mergeFolders() throws {
        try withTemporaryDirectory { dir in
            let shards = try Self.shards(in: dir, folder: true)
            // A folder elsewhere that looks like a generation, and the shard's symlink pointed at it.
            let generation = try #require(GenerationFolder.published(shards[0]))
            let elsewhere = dir.path("elsewhere")
            _ = try runProcess("/bin/cp", ["-a", generation, elsewhere])
            try FileManager.default.removeItem(atPath: shards[0])
            try FileManager.default.createSymbolicLink(atPath: shards[0], withDestinationPath: elsewhere)
            let r = try appconfig(["merge"] + shards + ["--out", dir.path("m")])
            #expect(r.status == 2)
            #expect(r.stderr.contains("is a symlink to \(elsewhere), which is not a generation of this output"), "\(r.stderr)")
            try FileManager.default.removeItem(atPath: shards[0])
            try FileManager.default.createSymbolicLink(atPath: shards[0], withDestinationPath: PathText.name(of: shards[0]) + ".generations/" + PathText.name(of: generation))
            let index = try String(contentsOfFile: generation + "/index.jsonl", encoding: .utf8)
            let path = try #require(index.split(separator: "\n").first.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }?["path"] as? String)
            // A file of another user planted in the generation (as a hard link would be): refused.
            if Self.isRoot {
                let planted = generation + "/" + PathText.folder(of: path) + "/planted.plist"
                try "root-only".write(toFile: planted, atomically: true, encoding: .utf8)
                #expect(chown(planted, 65534, 65534) == 0)
                let p = try appconfig(["merge"] + shards + ["--out", dir.path("m")])
                #expect(p.status == 2)
                #expect(p.stderr.contains("planted.plist belongs to another user than its generation"), "\(p.stderr)")
                try FileManager.default.removeItem(atPath: planted)
            }
            // A device file whose bytes were replaced: its digest is the index's no more.
            try FileManager.default.removeItem(atPath: generation + "/" + path)
            try "swapped".write(toFile: generation + "/" + path, atomically: true, encoding: .utf8)
            let s = try appconfig(["merge"] + shards + ["--out", dir.path("m")])
            #expect(s.status == 2)
            #expect(s.stderr.contains("does not hold the bytes its index names (SHA-256 differs)"), "\(s.stderr)")
        }
    }

    // MARK: 13-15. Generations

    static func plainRender(_ out: String, _ extra: [String] = []) throws -> ProcessResult {
        try appconfig(["render", "--spec", Paths.fixture("demo/spec.xml"), "--values", Paths.fixture("demo/values.json"),
                                               "--inventory", Paths.fixture("demo/inventory.csv"), "--directory", Paths.fixture("demo/directory.ldif"),
                                               "--quiet", "--out", out] + extra)
    }

    @Test("13. a generation marker holding Int.max (or garbage) does not crash the next run: it publishes")
    func markerOverflow() throws {
        try withTemporaryDirectory { dir in
            let out = dir.path("out")
            #expect(try Self.plainRender(out).status == 3)
            let generation = PathText.name(of: try #require(GenerationFolder.published(out)))
            try "appconfig-generation 9223372036854775807\n".write(toFile: out + ".generations/" + Generations.markerName(of: generation), atomically: true, encoding: .utf8)
            let r = try Self.plainRender(out, ["--rerender"])
            #expect(r.status == 3, "\(r.stderr)")
            #expect(GenerationFolder.published(out) != nil)
        }
    }

    @Test("14. a generations folder writable by others is refused; another user's generation is never removed; removal does not follow a folder swapped for a symlink")
    func generationsTrust() throws {
        try withTemporaryDirectory { dir in
            let out = dir.path("out")
            #expect(try Self.plainRender(out).status == 3)
            chmod(out + ".generations", 0o777)
            let r = try Self.plainRender(out, ["--rerender"])
            #expect(r.status == 1)
            #expect(r.stderr.contains("can be written by its group or others (mode 777)") && r.stderr.hasSuffix("[output.exists]\n"), "\(r.stderr)")
            chmod(out + ".generations", 0o755)
            if Self.isRoot {
                // Another user's complete-looking generation: left alone.
                let foreign = out + ".generations/g00000000000001-1"
                try FileManager.default.createDirectory(atPath: foreign, withIntermediateDirectories: true)
                try "x".write(toFile: foreign + "/manifest.tsv", atomically: true, encoding: .utf8)
                #expect(chown(foreign, 65534, 65534) == 0)
                for _ in 0..<3 { #expect(try Self.plainRender(out, ["--rerender", "--keep", "1"]).status == 3) }
                #expect(FileManager.default.fileExists(atPath: foreign + "/manifest.tsv"))
            }
        }
        // The removal itself: a folder inside the tree that is a symlink to another is unlinked, its target kept whole.
        try withTemporaryDirectory { dir in
            let victim = dir.path("victim")
            try FileManager.default.createDirectory(atPath: victim, withIntermediateDirectories: true)
            for n in 0..<50 { try "keep".write(toFile: victim + "/f\(n)", atomically: true, encoding: .utf8) }
            let root = dir.path("root")
            try FileManager.default.createDirectory(atPath: root + "/g1/a", withIntermediateDirectories: true)
            try "x".write(toFile: root + "/g1/a/file", atomically: true, encoding: .utf8)
            try FileManager.default.createSymbolicLink(atPath: root + "/g1/swapped", withDestinationPath: victim)
            Generations.remove("g1", in: root)
            #expect(!FileManager.default.fileExists(atPath: root + "/g1"))
            #expect(try FileManager.default.contentsOfDirectory(atPath: victim).count == 50)
        }
    }

    @Test("15. --out ./NAME publishes on every night, not only the first")
    func dotSlashOut() throws {
        try withTemporaryDirectory { dir in
            // Run from the folder (a shell's cd: the test process keeps its own working directory).
            let args = ["render", "--spec", Paths.fixture("demo/spec.xml"), "--values", Paths.fixture("demo/values.json"),
                        "--inventory", Paths.fixture("demo/inventory.csv"), "--directory", Paths.fixture("demo/directory.ldif"),
                        "--quiet", "--out", "./out", "--rerender"].map { "'\($0)'" }.joined(separator: " ")
            for night in 0..<3 {
                let r = try runProcess("/bin/sh", ["-c", "cd '\(dir.url.path)' && '\(Paths.appconfigBinary)' \(args)"])
                #expect(r.status == 3, "night \(night): \(r.stderr)")
            }
        }
    }

    // MARK: Weak spots

    /// A render that blocks in its compile step on an `exec:` secret that sleeps (its pid written
    /// to `pidFile`: `exec` keeps the shell's).
    static func blockedJob(in dir: TemporaryDirectory, pidFile: String) throws -> [String] {
        let values = try dir.write(passwordValues, to: "blocked-values.json")
        return ["render", "--spec", Paths.fixture("demo/spec.xml"), "--values", values, "--inventory", Paths.fixture("demo/inventory.csv"),
                "--directory", Paths.fixture("demo/directory.ldif"), "--quiet", "--delivery", "ddm", "--asset-base-url", base,
                "--secret-asset-base-url", secretBase, "--secret", "pw=exec:echo $$ > '\(pidFile)'; exec sleep 30"]
    }

    /// Whether the process whose pid `text` holds has ended (gone, or a zombie not yet reaped).
    static func hasEnded(_ text: String) -> Bool {
        guard let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)) else { return false }
        for _ in 0..<20 {
            let state = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8))?.split(separator: ")").last?.split(separator: " ").first
            if state == nil || state == "Z" { return true }
            usleep(50_000)
        }
        return false
    }

    @Test("--since a FIFO is refused at once, not opened (it blocked the night)")
    func sinceFIFO() throws {
        try withTemporaryDirectory { dir in
            let fifo = dir.path("since.fifo")
            #expect(mkfifo(fifo, 0o600) == 0)
            let started = Date()
            let r = try Self.plainRender(dir.path("out"), ["--since", fifo])
            #expect(Date().timeIntervalSince(started) < 10)
            #expect(r.status == 1)
            #expect(r.stderr == "appconfig: --since \(fifo) is not a file or a folder (a FIFO, a device or a socket): give a generation folder, its manifest.tsv or its tar [manifest.syntax]\n", "\(r.stderr)")
        }
    }

    @Test("a crash signal (SIGSEGV sent with kill) ends the run at once with nothing published, its exec: child with it")
    func crashSignal() throws {
        try withTemporaryDirectory { dir in
            let out = dir.path("out")
            let process = Process()
            process.executableURL = URL(fileURLWithPath: Paths.appconfigBinary)
            let pidFile = dir.path("child.pid")
            process.arguments = try Self.blockedJob(in: dir, pidFile: pidFile) + ["--out", out]
            let err = Pipe()
            process.standardError = err
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            usleep(800_000)
            kill(process.processIdentifier, SIGSEGV)
            process.waitUntilExit()
            #expect(process.terminationStatus == 128 + SIGSEGV)
            #expect(String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).hasSuffix("appconfig: crashed: nothing was published\n"))
            #expect(GenerationFolder.published(out) == nil)
            // The secret's command went with it.
            #expect(Self.hasEnded(try String(contentsOfFile: pidFile, encoding: .utf8)))
        }
    }

    @Test("--bundle-id that is not Apple's form and --app-store-id 0 are refused (exit 2)", arguments: [
        ["--bundle-id", "com.exämple.app"], ["--bundle-id", "."], ["--bundle-id", ".."], ["--bundle-id", "com..x"], ["--app-store-id", "0"],
    ])
    func appIdentifiers(_ option: [String]) throws {
        let r = try Self.render(["--dry-run"] + option, values: Paths.fixture("demo/values.json"))
        #expect(r.status == 2, "\(option): \(r.stderr)")
        #expect(r.stderr.hasSuffix("[delivery.option]\n"), "\(r.stderr)")
    }

    @Test("--explain prints inventory values with control characters escaped; an inventory header with a NUL or a BOM inside a column name is refused, named")
    func explainAndHeader() throws {
        try withTemporaryDirectory { dir in
            let text = try String(contentsOfFile: Paths.fixture("demo/inventory.csv"), encoding: .utf8)
            let inventory = try dir.write(text.replacingOccurrences(of: ",7X4X9Q34WXN6,", with: ",7X4X\u{1B}[2J9Q34,"), to: "escape.csv")
            let r = try appconfig(["render", "--spec", Paths.fixture("demo/spec.xml"), "--values", Paths.fixture("demo/values.json"),
                                                           "--inventory", inventory, "--directory", Paths.fixture("demo/directory.ldif"),
                                                           "--explain", "A8B14A37-9FAD6EA111EF0B59"])
            #expect(!r.stdout.contains("\u{1B}"))
            #expect(r.stdout.contains(#"serialNumber"#) && r.stdout.contains(#"7X4X\u001B[2J9Q34"#), "\(r.stdout)")
            for (name, bad) in [("nul", "U\u{0}DID"), ("bom", "U\u{FEFF}DID")] {
                let damaged = try dir.write(text.replacingOccurrences(of: ",UDID,", with: ",\(bad),"), to: name + ".csv")
                let d = try appconfig(["render", "--spec", Paths.fixture("demo/spec.xml"), "--values", Paths.fixture("demo/values.json"),
                                                               "--inventory", damaged, "--directory", Paths.fixture("demo/directory.ldif"), "--dry-run"])
                #expect(d.status == 1, "\(d.stderr)")
                #expect(d.stderr.contains("column 13 of the header") && d.stderr.hasSuffix("inside its name: the export is damaged (save it again as UTF-8 CSV) [csv.header-name]\n"), "\(d.stderr)")
            }
        }
    }

    @Test("an assignment or a credential with an empty name says so")
    func emptyNames() throws {
        try withTemporaryDirectory { dir in
            let values = try dir.write(#"{"values": {"theme": "system"}, "assignments": [{"name": "", "match": {"ou": "EMEA"}, "values": {"theme": "dark"}}], "credentials": [{"identifier": "", "kind": "password", "UserName": "x", "Password": {"secret": "pw"}}]}"#, to: "values.json")
            let r = try appconfig(["lint", Paths.fixture("demo/spec.xml"), "--values", values])
            #expect(r.status == 1)
            #expect(r.stdout.contains("error: an assignment's name is a non-empty string, not an empty one [assignment.syntax]"), "\(r.stdout)")
            #expect(r.stdout.contains("error: a credential's identifier is a non-empty string, not an empty one [credential.syntax]"), "\(r.stdout)")
        }
    }

    @Test("a PKCS#12 password with a NUL is refused, never cut to open the file")
    func passwordWithNUL() throws {
        #expect(CredentialFiles.identityProblem([0x30], password: Array("pass\u{0}word".utf8)) == "its password holds a NUL, which no PKCS#12 password can")
    }
}
