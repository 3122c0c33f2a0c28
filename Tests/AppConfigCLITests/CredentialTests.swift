import AppConfigBatch
@testable import AppConfigOutput
import Foundation
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Credentials (issue 29): passwords, certificates and identities per device, delivered as DDM
/// credential assets, checked against Apple's schemas, and never leaked.
@Suite("Credentials: secrets as DDM credential assets", .serialized)
struct CredentialTests {
    static let base = "https://cdn.example.com/appconfig"
    static let secretBase = "https://mdm.example.com/appconfig-secrets"
    /// Secrets of known values, with characters that JSON escapes (`"`, `\`, `/`).
    static let challenge = #"scep-"Chall\enge/42"#
    static let p12Password = #"p12-"Pass\word/7"#
    static func userPassword(_ n: Int) -> String { #"user-\#(n)-"pw\x/"# }

    /// A test folder with the inputs: values with five credentials, the per-user passwords (every
    /// user but u0000000), a PKCS#12 identity and a CA certificate made by openssl.
    struct Inputs {
        let dir: URL
        var path: String { dir.path }

        init() throws {
            dir = try Paths.temporaryDirectory()
            let openssl = try #require(which("openssl"))
            func run(_ args: [String]) throws {
                let r = try runProcess(openssl, args)
                #expect(r.status == 0, "\(args): \(r.stderr)")
            }
            try run(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", path + "/key.pem", "-out", path + "/ca.pem",
                     "-subj", "/CN=Northwind Test CA", "-days", "2"])
            try CredentialTests.p12Password.write(toFile: path + "/p12-password", atomically: true, encoding: .utf8)
            try run(["pkcs12", "-export", "-inkey", path + "/key.pem", "-in", path + "/ca.pem", "-out", path + "/identity.p12",
                     "-passout", "file:" + path + "/p12-password"])
            var csv = "sAMAccountName,password\n"
            for n in 1..<1000 { csv += String(format: "u%07d,", n) + CredentialTests.userPassword(n) + "\n" }
            try csv.write(toFile: path + "/passwords.csv", atomically: true, encoding: .utf8)
            try Self.values(path).write(toFile: path + "/values.json", atomically: true, encoding: .utf8)
            try #"{"serverURL": "https://$(ou).fs.northwind.example/tenant/$(sAMAccountName)", "theme": "system"}"#
                .write(toFile: path + "/plain-values.json", atomically: true, encoding: .utf8)
        }

        static func values(_ dir: String) -> String {
            """
            {"values": {"serverURL": "https://$(ou).fs.northwind.example/tenant/$(sAMAccountName)", "theme": "system"},
             "credentials": [
              {"identifier": "server-password", "kind": "password",
               "UserName": "$(sAMAccountName)", "Password": {"secret": "user-passwords"}},
              {"identifier": "device-identity", "kind": "acme",
               "DirectoryURL": "https://ca.example.com/acme/directory", "ClientIdentifier": "$(udid)",
               "KeyType": "ECSECPrimeRandom", "KeySize": 384, "HardwareBound": true, "Attest": true,
               "Subject": [[["CN", "$(udid)"]]], "SubjectAltName": {"rfc822Name": "$(emailAddress)"}},
              {"identifier": "wifi", "kind": "scep", "URL": "https://scep.example.com/$(ou|lower)",
               "Challenge": {"secret": "scep-challenge"}, "Keysize": 2048,
               "Subject": [[["CN", "$(upn)"]], [["O", "Northwind"]]], "SubjectAltName": {"ntPrincipalName": "$(upn)"}},
              {"identifier": "vpn-identity", "kind": "identity",
               "Identity": {"file": "\(dir)/identity.p12"}, "Password": {"secret": "p12-password"}},
              {"identifier": "corp-ca", "kind": "certificate", "Certificate": {"file": "\(dir)/ca.pem"}}]}
            """
        }

        var secrets: [String] {
            ["--secret", "user-passwords=file:" + path + "/passwords.csv", "--secret", "scep-challenge=env:SCEP_CHALLENGE",
             "--secret", "p12-password=exec:cat '" + path + "/p12-password'"]
        }
    }

    static func render(_ arguments: [String], values: String) throws -> ProcessResult {
        var environment = ProcessInfo.processInfo.environment
        environment["SCEP_CHALLENGE"] = challenge
        return try runProcess(Paths.appconfigBinary, ["render", "--spec", Paths.fixture("demo/spec.xml"), "--values", values,
                                                      "--inventory", Paths.fixture("demo/inventory.csv"),
                                                      "--directory", Paths.fixture("demo/directory.ldif")] + arguments,
                              environment: environment)
    }

    func validate(_ output: String, _ plain: String) throws -> (status: Int32, summary: String, output: String) {
        let python = try #require(which("python3"))
        let r = try runProcess(python, [Paths.root.appendingPathComponent("Tests/Oracles/ddm_validator.py").path,
                                        Paths.root.appendingPathComponent("Tests/Oracles/apple-device-management").path, "ddm", output, plain])
        return (r.status, r.stdout.split(separator: "\n").last.map(String.init) ?? "", r.stdout + r.stderr)
    }

    @Test("every credential declaration and document valid against Apple's schemas (folder, tar, files layout); the AppConfig arrays name them by Identifier and type; a user without a password fails alone")
    func validates() throws {
        let inputs = try Inputs()
        defer { try? FileManager.default.removeItem(at: inputs.dir) }
        let plain = inputs.path + "/plain", out = inputs.path + "/ddm", tar = inputs.path + "/ddm.tar", report = inputs.path + "/report"
        let files = inputs.path + "/files"
        #expect(try Self.render(["--out", plain, "--quiet"], values: inputs.path + "/plain-values.json").status == 3)
        for output in [["--out", out], ["--tar", tar], ["--out", files, "--ddm-layout", "files"]] {
            let r = try Self.render(["--delivery", "ddm", "--asset-base-url", Self.base, "--secret-asset-base-url", Self.secretBase, "--quiet",
                                     "--report", report] + inputs.secrets + output, values: inputs.path + "/values.json")
            #expect(r.status == 3, "\(r.stdout)\(r.stderr)")
        }
        // u0000000 has no password: both its devices fail, alone, with the one problem.
        let errors = try String(contentsOfFile: report + "/errors.jsonl", encoding: .utf8).split(separator: "\n")
            .map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any] }
        let missing = errors.filter { $0["code"] as? String == "device.secret-missing" }
        #expect(missing.count == 2)
        for m in missing {
            #expect(m["message"] as? String
                    == #"credential "server-password", Password: the secret "user-passwords" has no value for this device's $(sAMAccountName) "u0000000""#)
        }
        // The plain run's devices, less those two.
        let gone = Set(missing.compactMap { $0["device"] as? String })
        #expect(gone.contains("A8B14A37-9FAD6EA111EF0B59"))
        for name in try FileManager.default.subpathsOfDirectory(atPath: plain + "/") where gone.contains(where: { name.hasSuffix("/\($0).plist") }) {
            try FileManager.default.removeItem(atPath: plain + "/" + name)
        }
        for output in [out, tar, files] {
            let v = try validate(output, plain)
            #expect(v.status == 0, "\(v.output)")
            #expect(v.summary.hasSuffix(" 973 devices, 0 problems"), "\(v.summary)")
        }
        // Secret documents are their owner's alone; the others are readable.
        let published = try #require(GenerationFolder.published(out))
        var folder = stat()
        #expect(stat(published + "/secret-assets", &folder) == 0 && folder.st_mode & 0o777 == 0o700)
        for name in try FileManager.default.contentsOfDirectory(atPath: published + "/secret-assets") {
            var s = stat()
            #expect(stat(published + "/secret-assets/" + name, &s) == 0 && s.st_mode & 0o777 == 0o600)
        }
    }

    @Test("ACME and SCEP documents per device from the CSV (udid) and the directory (mail, upn, ou): exact JSON; a per-user password from the keyed CSV")
    func perDeviceDocuments() throws {
        let inputs = try Inputs()
        defer { try? FileManager.default.removeItem(at: inputs.dir) }
        let out = inputs.path + "/ddm"
        let r = try Self.render(["--delivery", "ddm", "--asset-base-url", Self.base, "--secret-asset-base-url", Self.secretBase, "--quiet",
                                 "--out", out] + inputs.secrets, values: inputs.path + "/values.json")
        #expect(r.status == 3, "\(r.stderr)")
        let published = try #require(GenerationFolder.published(out))
        let declarations = try DeliveryTests.declarations(published)
        // The device of u0000005 (John Haddad, OU EMEA): its documents, by the AppConfig arrays.
        let index = try String(contentsOfFile: published + "/index.jsonl", encoding: .utf8).split(separator: "\n")
            .map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any] }
        let rows = try String(contentsOfFile: Paths.fixture("demo/inventory.csv"), encoding: .utf8).components(separatedBy: "\r\n")
        let row = try #require(rows.first { $0.contains("u0000005@corp.example") })
        let udid = try #require(row.split(separator: ",").first { $0.count == 25 && $0.contains("-") }).description
        let entry = try #require(index.first { $0["device"] as? String == udid })
        let ids = entry["declarations"] as! [String]
        let configuration = declarations[ids[1]]!.payload
        let appConfig = configuration["AppConfig"] as! [String: Any]
        func document(_ array: String, _ identifier: String) throws -> String {
            let items = try #require(appConfig[array] as? [[String: String]])
            let reference = try #require(items.first { $0["Identifier"] == identifier }?["AssetReference"])
            let payload = declarations[reference]!.payload
            let ref = payload["Reference"] as! [String: Any]
            let folder = payload["Authentication"] == nil ? "assets" : "secret-assets"
            let ending = ref["ContentType"] as? String == "application/pem" ? ".pem" : ".json"
            // A secret document's declaration carries no Hash-SHA-256: its file is named as its DataURL ends.
            let name = try #require((ref["DataURL"] as? String)?.split(separator: "/").last)
            return try String(contentsOfFile: published + "/\(folder)/\(name)\(ending)", encoding: .utf8)
        }
        #expect(try document("Identities", "device-identity") == #"{"Attest":true,"ClientIdentifier":"\#(udid)","DirectoryURL":"https://ca.example.com/acme/directory","HardwareBound":true,"KeySize":384,"KeyType":"ECSECPrimeRandom","Subject":[[["CN","\#(udid)"]]],"SubjectAltName":{"rfc822Name":"u0000005@corp.example"}}"#)
        #expect(try document("Identities", "wifi") == #"{"Challenge":"scep-\"Chall\\enge/42","Keysize":2048,"Subject":[[["CN","u0000005@corp.example"]],[["O","Northwind"]]],"SubjectAltName":{"ntPrincipalName":"u0000005@corp.example"},"URL":"https://scep.example.com/emea"}"#)
        #expect(try document("Passwords", "server-password") == #"{"Password":"user-5-\"pw\\x/","UserName":"u0000005"}"#)
        #expect(try document("Certificates", "corp-ca") == String(contentsOfFile: inputs.path + "/ca.pem", encoding: .utf8))
        let identity = try JSONSerialization.jsonObject(with: Data(try document("Identities", "vpn-identity").utf8)) as! [String: String]
        #expect(identity["Password"] == Self.p12Password)
        #expect(Data(base64Encoded: identity["Identity"]!) == FileManager.default.contents(atPath: inputs.path + "/identity.p12"))
    }

    @Test("no secret leaks: every byte the run writes outside secret-assets/ (outputs, report, stdout, stderr), searched for each secret, its base64 and its JSON-escaped forms")
    func noLeaks() throws {
        let inputs = try Inputs()
        defer { try? FileManager.default.removeItem(at: inputs.dir) }
        let out = inputs.path + "/out", tar = inputs.path + "/out.tar", report = inputs.path + "/report"
        var written: [(String, Data)] = []
        for output in [["--out", out], ["--tar", tar], ["--dry-run"]] {
            let r = try Self.render(["--delivery", "ddm", "--asset-base-url", Self.base, "--secret-asset-base-url", Self.secretBase,
                                     "--report", report] + inputs.secrets + output, values: inputs.path + "/values.json")
            #expect(r.status == 3, "\(r.stderr)")
            written += [("stdout", Data(r.stdout.utf8)), ("stderr", Data(r.stderr.utf8))]
            for folder in [inputs.path + "/out.generations", report] {
                for name in (try? FileManager.default.subpathsOfDirectory(atPath: folder)) ?? [] where !name.contains("secret-assets/") {
                    if let data = FileManager.default.contents(atPath: folder + "/" + name) { written.append((folder + "/" + name, data)) }
                }
            }
        }
        // The tar's members outside secret-assets/, and what lies beside it.
        let python = try #require(which("python3"))
        let listing = try runProcess(python, ["-c", """
            import sys, tarfile
            t = tarfile.open(sys.argv[1])
            for m in t.getmembers():
                if not m.name.startswith("secret-assets/"):
                    sys.stdout.buffer.write(t.extractfile(m).read())
            """, tar])
        written.append(("tar", Data(listing.stdout.utf8)))
        written.append(("tar manifest", FileManager.default.contents(atPath: tar + ".manifest.tsv") ?? Data()))
        let secrets = [Self.challenge, Self.p12Password] + [1, 5, 500, 999].map(Self.userPassword)
        var forms: [String] = []
        for s in secrets {
            var escaped: [UInt8] = []
            appendJSONTestString(s, to: &escaped)
            forms += [s, Data(s.utf8).base64EncodedString(), String(decoding: escaped, as: UTF8.self)]
        }
        #expect(written.count > 2000)
        for (name, data) in written {
            for form in forms { #expect(data.range(of: Data(form.utf8)) == nil, "\(name) holds \(form)") }
        }
        // The secrets are in secret-assets/ (the search looks where they are not).
        let published = try #require(GenerationFolder.published(out))
        let documents = try FileManager.default.contentsOfDirectory(atPath: published + "/secret-assets")
            .compactMap { FileManager.default.contents(atPath: published + "/secret-assets/" + $0) }
        var escapedChallenge: [UInt8] = []
        appendJSONTestString(Self.challenge, to: &escapedChallenge)
        #expect(documents.contains { $0.range(of: Data(escapedChallenge)) != nil })
    }

    @Test("--changed-only with credentials: the changed device's documents written, every other live one linked from the previous generation (secret-assets/ 0600), assets.live listing all")
    func changedOnly() throws {
        let inputs = try Inputs()
        defer { try? FileManager.default.removeItem(at: inputs.dir) }
        let out = inputs.path + "/out"
        let options = ["--delivery", "ddm", "--asset-base-url", Self.base, "--secret-asset-base-url", Self.secretBase, "--quiet", "--out", out] + inputs.secrets
        #expect(try Self.render(options, values: inputs.path + "/values.json").status == 3)
        let first = try #require(GenerationFolder.published(out))
        // Tonight one user's password changes: that user's devices alone change.
        var csv = try String(contentsOfFile: inputs.path + "/passwords.csv", encoding: .utf8)
        csv = csv.replacingOccurrences(of: "u0000005," + Self.userPassword(5), with: "u0000005,new-password")
        try csv.write(toFile: inputs.path + "/passwords.csv", atomically: true, encoding: .utf8)
        let r = try Self.render(options + ["--changed-only"], values: inputs.path + "/values.json")
        #expect(r.status == 3, "\(r.stderr)")
        let second = try #require(GenerationFolder.published(out))
        #expect(second != first)
        let devices = try String(contentsOfFile: Paths.fixture("demo/inventory.csv"), encoding: .utf8).components(separatedBy: "u0000005@corp.example").count - 1
        #expect(try String(contentsOfFile: second + "/index.jsonl", encoding: .utf8).split(separator: "\n").count == devices)
        let live = try String(contentsOfFile: second + "/assets.live", encoding: .utf8).split(separator: "\n").map(String.init)
        let secret = live.filter { $0.hasPrefix("secret-assets/") }
        #expect(secret.count > 1000)
        var files = Set<String>()
        for folder in ["assets", "secret-assets"] {
            for name in try FileManager.default.contentsOfDirectory(atPath: second + "/" + folder) { files.insert(folder + "/" + name) }
        }
        #expect(files == Set(live))
        for name in secret.prefix(50) {
            var s = stat()
            #expect(stat(second + "/" + name, &s) == 0 && s.st_mode & 0o777 == 0o600)
        }
        // The changed password is in a new document; the old one is no longer live.
        let documents = secret.compactMap { FileManager.default.contents(atPath: second + "/" + $0) }
        #expect(documents.contains { $0.range(of: Data("new-password".utf8)) != nil })
        var oldPassword: [UInt8] = []
        appendJSONTestString(Self.userPassword(5), to: &oldPassword)
        #expect(!documents.contains { $0.range(of: Data(oldPassword)) != nil })
    }

    @Test("an extension's credentials: its own AppConfig dictionary in ExtensionConfigs names them; valid for the validator")
    func extensionCredentials() throws {
        let inputs = try Inputs()
        defer { try? FileManager.default.removeItem(at: inputs.dir) }
        let plain = inputs.path + "/plain", out = inputs.path + "/ddm"
        let vpn = inputs.path + "/vpn.json"
        try #"""
            {"values": {"theme": "dark"},
             "credentials": [{"identifier": "vpn-identity", "kind": "acme", "DirectoryURL": "https://ca.example.com/acme",
               "ClientIdentifier": "vpn-$(udid)", "KeyType": "RSA", "KeySize": 2048, "HardwareBound": false,
               "Subject": [[["CN", "$(udid)"]]]},
              {"identifier": "vpn-password", "kind": "password", "UserName": "$(upn)", "Password": {"secret": "user-passwords"}}]}
            """#.write(toFile: vpn, atomically: true, encoding: .utf8)
        #expect(try Self.render(["--out", plain, "--quiet"], values: inputs.path + "/plain-values.json").status == 3)
        let r = try Self.render(["--delivery", "ddm", "--asset-base-url", Self.base, "--secret-asset-base-url", Self.secretBase, "--quiet",
                                 "--out", out, "--extension", "com.northwind.fieldservice.vpn=" + vpn] + inputs.secrets,
                                values: inputs.path + "/values.json")
        #expect(r.status == 3, "\(r.stderr)")
        // u0000000's two devices fail (no password): the plain output without them.
        for name in try FileManager.default.subpathsOfDirectory(atPath: plain + "/") {
            guard name.hasSuffix(".plist"), let data = FileManager.default.contents(atPath: plain + "/" + name),
                  let o = try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any],
                  (o["serverURL"] as? String)?.hasSuffix("/tenant/u0000000") == true else { continue }
            try FileManager.default.removeItem(atPath: plain + "/" + name)
        }
        let v = try validate(out, plain)
        #expect(v.status == 0, "\(v.output)")
        let published = try #require(GenerationFolder.published(out))
        let line = try #require(try String(contentsOfFile: published + "/declarations.jsonl", encoding: .utf8).split(separator: "\n")
            .first { $0.contains("\"ExtensionConfigs\"") })
        let configuration = try JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any]
        let extensionConfig = try #require(((configuration["Payload"] as? [String: Any])?["ExtensionConfigs"] as? [String: Any])?["com.northwind.fieldservice.vpn"] as? [String: Any])
        #expect(extensionConfig.keys.sorted() == ["DataAssetReference", "Identities", "Passwords"])
        #expect((extensionConfig["Identities"] as? [[String: String]])?.map { $0["Identifier"] } == ["vpn-identity"])
        #expect((extensionConfig["Passwords"] as? [[String: String]])?.map { $0["Identifier"] } == ["vpn-password"])
    }

    @Test("an assignment's credentials: EMEA devices get their own Wi-Fi identity and a replaced server password, the others the file's")
    func assignmentCredentials() throws {
        let inputs = try Inputs()
        defer { try? FileManager.default.removeItem(at: inputs.dir) }
        let values = inputs.path + "/assigned.json"
        try #"""
            {"values": {"theme": "system"},
             "credentials": [{"identifier": "server-password", "kind": "password", "UserName": "$(sAMAccountName)", "Password": {"secret": "user-passwords"}}],
             "assignments": [{"name": "emea", "match": {"ou": "EMEA"},
               "credentials": [{"identifier": "emea-wifi", "kind": "acme", "DirectoryURL": "https://ca.emea.example.com/acme",
                                "ClientIdentifier": "$(udid)", "KeyType": "RSA", "KeySize": 2048, "HardwareBound": false, "Subject": [[["CN", "$(udid)"]]]},
                               {"identifier": "server-password", "kind": "password", "UserName": "emea\\$(sAMAccountName)", "Password": {"secret": "user-passwords"}}]}]}
            """#.write(toFile: values, atomically: true, encoding: .utf8)
        let out = inputs.path + "/ddm"
        let r = try Self.render(["--delivery", "ddm", "--asset-base-url", Self.base, "--secret-asset-base-url", Self.secretBase, "--quiet",
                                 "--out", out] + inputs.secrets, values: values)
        #expect(r.status == 3, "\(r.stderr)")
        let published = try #require(GenerationFolder.published(out))
        let declarations = try DeliveryTests.declarations(published)
        var emea = 0, others = 0
        for line in try String(contentsOfFile: published + "/index.jsonl", encoding: .utf8).split(separator: "\n") {
            let entry = try JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any]
            let ids = entry["declarations"] as! [String]
            let appConfig = (declarations[ids[1]]!.payload)["AppConfig"] as! [String: Any]
            let passwords = try #require(appConfig["Passwords"] as? [[String: String]])
            let payload = declarations[passwords[0]["AssetReference"]!]!.payload
            let name = ((payload["Reference"] as! [String: Any])["DataURL"] as! String).split(separator: "/").last!
            let document = try String(contentsOfFile: published + "/secret-assets/\(name).json", encoding: .utf8)
            if let identities = appConfig["Identities"] as? [[String: String]] {
                #expect(identities.map { $0["Identifier"] } == ["emea-wifi"])
                #expect(document.contains(#""UserName":"emea\\u"#), "\(document)")
                emea += 1
            } else {
                #expect(!document.contains("emea"))
                others += 1
            }
            #expect(passwords.map { $0["Identifier"] } == ["server-password"])
        }
        #expect(emea > 100 && others > 100, "\(emea) \(others)")
    }

    @Test("credentials where they cannot be delivered: one line, status 2, before any input is read, nothing written")
    func undeliverable() throws {
        let inputs = try Inputs()
        defer { try? FileManager.default.removeItem(at: inputs.dir) }
        let out = inputs.path + "/out"
        let extensionValues = inputs.path + "/ext.json"
        try #"""
            {"values": {}, "assignments": [{"name": "a", "match": {"ou": "EMEA"},
              "credentials": [{"identifier": "p", "kind": "password", "UserName": "u", "Password": {"secret": "s"}}]}]}
            """#.write(toFile: extensionValues, atomically: true, encoding: .utf8)
        let cases: [([String], String)] = [
            (["--delivery", "mdm-settings"],
             "the values file has credentials: they are delivered as DDM credential assets (--delivery ddm), not with --delivery mdm-settings"),
            (["--delivery", "ddm", "--asset-base-url", Self.base],
             "credentials that hold secrets need --secret-asset-base-url https://… (where secret-assets/ is served, with MDM authentication)"),
        ]
        for (options, message) in cases {
            let r = try Self.render(options + ["--out", out] + inputs.secrets, values: inputs.path + "/values.json")
            #expect(r.status == 2, "\(options)")
            #expect(r.stderr == "appconfig: \(message) [delivery.option]\n", "\(options)")
        }
        let r = try Self.render(["--delivery", "ddm", "--asset-base-url", Self.base, "--out", out, "--extension", "com.northwind.fieldservice.vpn=" + extensionValues],
                                values: inputs.path + "/plain-values.json")
        #expect(r.status == 2)
        #expect(r.stderr == #"appconfig: the values of --extension com.northwind.fieldservice.vpn give credentials in assignments: an extension's credentials are its file's "credentials", for every device [delivery.option]"# + "\n")
        #expect(!FileManager.default.fileExists(atPath: out) && !FileManager.default.fileExists(atPath: out + ".generations"))
    }

    @Test("exec: a vault's output is the secret; a failing command is one line with its first line of stderr, never its output; nothing written")
    func execSecrets() throws {
        let inputs = try Inputs()
        defer { try? FileManager.default.removeItem(at: inputs.dir) }
        let out = inputs.path + "/out"
        let failing = ["--secret", "user-passwords=file:" + inputs.path + "/passwords.csv", "--secret", "scep-challenge=env:SCEP_CHALLENGE",
                       "--secret", "p12-password=exec:echo out-SECRET-9; echo 'vault: permission denied' >&2; echo second >&2; exit 3"]
        let r = try Self.render(["--delivery", "ddm", "--asset-base-url", Self.base, "--secret-asset-base-url", Self.secretBase, "--out", out] + failing,
                                values: inputs.path + "/values.json")
        #expect(r.status == 2)
        #expect(r.stderr == "appconfig: --secret p12-password: exec:echo out-SECRET-9; echo 'vault: permission denied' >&2; echo second >&2; exit 3 failed (status 3): vault: permission denied [secret.source]\n")
        #expect(!r.stdout.contains("out-SECRET-9") && r.stdout.isEmpty)
        #expect(GenerationFolder.published(out) == nil)
    }

    @Test("bad credentials and secrets: one clear line each, with its place; nothing written", arguments: [
        (#"{"credentials": [{"identifier": "x", "kind": "password", "UserName": "u", "Password": "plain"}]}"#,
         #"values.json:1:87: error: Password is a secret: give it as {"secret": NAME} and its value with --secret NAME=..., never in a values file [credential.field]"#),
        (#"{"credentials": [{"identifier": "x", "kind": "acme", "DirectoryURL": "https://ca", "ClientIdentifier": "c", "KeySize": 256, "KeyType": "DSA", "HardwareBound": false, "Subject": [[["CN", "x"]]]}]}"#,
         #"values.json:1:136: error: KeyType is one of RSA, ECSECPrimeRandom, not "DSA" [credential.field]"#),
        (#"{"credentials": [{"identifier": "x", "kind": "token"}]}"#,
         #"values.json:1:46: error: a credential's kind is one of password, certificate, identity, scep, acme [credential.syntax]"#),
        (#"{"credentials": [{"identifier": "x", "kind": "password", "UserName": "u", "Passwd": {"secret": "s"}}]}"#,
         #"values.json:1:75: error: a password credential has no field "Passwd" (its fields: Password, UserName) [credential.field]"#),
    ])
    func badCredentials(values: String, message: String) throws {
        try withTemporaryDirectory { dir in
            let file = dir.path("values.json")
            try values.write(toFile: file, atomically: true, encoding: .utf8)
            let lint = try appconfig(["lint", Paths.fixture("demo/spec.xml"), "--values", file])
            #expect(lint.status == 1)
            #expect(lint.stdout.split(separator: "\n").first.map(String.init) == message.replacingOccurrences(of: "values.json", with: file), "\(lint.stdout)")
        }
    }

    @Test("per device: a PKCS#12 its password does not open, a file that is not a certificate, a file that is missing: device.credential-file, the others render")
    func badFiles() throws {
        let inputs = try Inputs()
        defer { try? FileManager.default.removeItem(at: inputs.dir) }
        let cases: [(String, String)] = [
            (#"{"identifier": "i", "kind": "identity", "Identity": {"file": "\#(inputs.path)/identity.p12"}, "Password": {"secret": "wrong"}}"#,
             "credential \"i\", Identity: \(inputs.path)/identity.p12 cannot be used: its password does not open it"),
            (#"{"identifier": "c", "kind": "certificate", "Certificate": {"file": "\#(inputs.path)/passwords.csv"}}"#,
             "credential \"c\", Certificate: \(inputs.path)/passwords.csv cannot be delivered: not an X.509 certificate (PEM or DER)"),
            (#"{"identifier": "c", "kind": "certificate", "Certificate": {"file": "\#(inputs.path)/certs/$(sAMAccountName).pem"}}"#,
             "credential \"c\", Certificate: cannot read \(inputs.path)/certs/u0000005.pem: No such file or directory"),
        ]
        for (credential, message) in cases {
            let values = inputs.path + "/bad.json"
            try #"{"values": {"theme": "system"}, "credentials": [\#(credential)]}"#.write(toFile: values, atomically: true, encoding: .utf8)
            try "not-the-password".write(toFile: inputs.path + "/wrong", atomically: true, encoding: .utf8)
            let report = inputs.path + "/report"
            let r = try Self.render(["--delivery", "ddm", "--asset-base-url", Self.base, "--secret-asset-base-url", Self.secretBase, "--dry-run",
                                     "--report", report, "--secret", "wrong=file:" + inputs.path + "/wrong", "--max-failure-ratio", "1"], values: values)
            #expect(r.status == 1 || r.status == 3, "\(r.stderr)")
            let errors = try String(contentsOfFile: report + "/errors.jsonl", encoding: .utf8).split(separator: "\n")
                .map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any] }
            let messages = errors.filter { $0["code"] as? String == "device.credential-file" }.compactMap { $0["message"] as? String }
            #expect(messages.contains(message), "\(messages.prefix(3))")
        }
    }
}

/// A JSON string's escaped content, as a writer of JSON would put it (`"` and `\` escaped).
func appendJSONTestString(_ s: String, to out: inout [UInt8]) {
    for b in s.utf8 {
        if b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") { out.append(UInt8(ascii: "\\")) }
        out.append(b)
    }
}
