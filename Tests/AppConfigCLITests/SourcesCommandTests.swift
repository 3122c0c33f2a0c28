import AppConfigBatch
@testable import AppConfigCLI
import Foundation
import TestSupport
import Testing

/// `appconfig sources` through the built binary: counts, problems, exit statuses, and a password
/// that appears nowhere.
@Suite("appconfig sources, end to end", .serialized)
struct SourcesCommandTests {
    @Test("the demo fixtures: every device accounted for, missing users listed with their CSV line, status 3")
    func demo() throws {
        let r = try appconfig(["sources", "--inventory", Paths.fixture("demo/inventory.csv"),
                                                       "--directory", Paths.fixture("demo/directory.ldif"), "--show-problems", "1"])
        #expect(r.status == 3, "\(r.stderr)")
        let lines = r.stdout.split(separator: "\n").map(String.init)
        #expect(lines[0].hasPrefix("inventory \(Paths.fixture("demo/inventory.csv")): 1000 devices in 1000 rows, delimiter ',' (detected), 0 problems, 277"))
        #expect(lines[1].hasPrefix("directory \(Paths.fixture("demo/directory.ldif")): 900 users, 0 problems"))
        // The mapping: the keys, then where each variable comes from.
        #expect(lines[2] == "mapping (Jamf Pro export): device key \"UDID\"; user key \"Email Address\" = attribute mail")
        #expect(lines[3] == "  \"Display Name\" names the device, never a user variable")
        #expect(lines.contains("  displayName            attribute displayName or cn"))
        #expect(lines.contains("  serialNumber           column \"Serial Number\""))
        #expect(lines.contains("  imsi                   missing"))
        #expect(lines[26].hasPrefix("join: 985 of 1000 devices found their user, 15 did not"))
        #expect(lines[27] == "  \(Paths.fixture("demo/inventory.csv")):85, device 070AA671-7E505868A60C485F: error: no user has "
                + "gone0000083@corp.example in the directory (\(Paths.fixture("demo/directory.ldif"))) [join.user-not-found]")
        #expect(lines[28] == "  ... and 14 more")
    }

    @Test("the shifted Jamf Pro export: the checks say so with examples; --strict-inventory refuses it (status 1)",
          .enabled(if: Paths.hasCorpus, "../shared/corpus is absent"))
    func shiftedExport() throws {
        let path = try #require(Paths.corpusFile("inventory/jamf-reports-community/harbor_mobile_insights_all_devices.csv"))
        // Every value of the columns read is suspect: refused (status 1), unless --allow-suspect.
        let refused = try appconfig(["sources", "--inventory", path])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("error: column \"Wi-Fi MAC Address\" (wifiMacAddress): all 16 of 16 values do not look like MAC addresses"), "\(refused.stderr)")
        let r = try appconfig(["sources", "--inventory", path, "--allow-suspect"])
        #expect(r.status == 3)
        #expect(r.stdout.contains("\n  \(path):1: warning: column \"Email Address\" (emailAddress): 16 of 16 values do not look like email addresses, "
                                  + "e.g. \"0\" (line 2), \"25\" (line 6), \"50\" (line 14) [inventory.suspect-values]\n"), "\(r.stdout)")
        // Read as Jamf Pro's: the device's name is not the user's.
        #expect(r.stdout.contains("mapping (Jamf Pro export): device key \"Serial Number\"; user key \"Email Address\"\n"))
        #expect(r.stdout.contains("\n  displayName            column \"Full Name\"\n"))
        let strict = try appconfig(["sources", "--inventory", path, "--strict-inventory", "--allow-suspect"])
        #expect(strict.status == 1)
        #expect(strict.stderr == "\(path):1: error: 19 of 35 rows repeat a device key of column \"Serial Number\": a device key names one device [inventory.duplicate-keys]\n"
                + "    hint: does the header line up with the rows? (--strict-inventory refuses such an export)\n")
        let preset = try appconfig(["sources", "--inventory", path, "--inventory-preset", "jamf"])
        #expect(preset.status == 2)
        #expect(preset.stderr.contains("--inventory-preset takes auto, jamf-pro, jamf-school, intune, workspace-one, generic, not \"jamf\""))
    }

    @Test("render --explain: one device's user, assignments, variables with their sources, and its plist; nothing written")
    func explain() throws {
        let base = ["render", "--spec", Paths.fixture("demo/spec.xml"), "--values", Paths.fixture("demo/assignments.json"),
                    "--inventory", Paths.fixture("demo/inventory.csv"), "--directory", Paths.fixture("demo/directory.ldif")]
        let r = try appconfig(base + ["--explain", "R4G45DDN63HX"])
        #expect(r.status == 0, "\(r.stderr)")
        let lines = r.stdout.split(separator: "\n").map(String.init)
        #expect(Array(lines.prefix(5)) == [
            "device 12156CB8-29FAC3AC50E5D997 (\(Paths.fixture("demo/inventory.csv")):3)",
            "user: CN=José Okafor 1,OU=South,OU=Sales,OU=APAC,DC=corp,DC=example (\"Email Address\" u0000001@corp.example = attribute mail)",
            "assignments: sales, hq, everyone",
            "variables:",
            "  emailAddressDomain = \"corp.example\"  <- attribute mail (after the @)",
        ])
        #expect(lines.contains("  serialNumber       = \"R4G45DDN63HX\"  <- column \"Serial Number\""))
        #expect(lines.contains("output (XML; the job writes binary):"))
        #expect(lines.contains("\t<string>R4G45DDN63HX</string>"))
        // A device without its user fails, and says why.
        let failing = try appconfig(base + ["--explain", "070AA671-7E505868A60C485F"])
        #expect(failing.status == 1)
        #expect(failing.stdout.contains("user: not found (no user has mail gone0000083@corp.example in \(Paths.fixture("demo/directory.ldif")))\n"))
        #expect(failing.stdout.hasSuffix("error: $(emailAddressDomain) is missing for this device [device.missing-variable]\n"))
        let unknown = try appconfig(base + ["--explain", "nope"])
        #expect(unknown.status == 2)
        #expect(unknown.stderr == "appconfig: no device \"nope\" in \(Paths.fixture("demo/inventory.csv")) (its device key column is \"UDID\"; a serial number, a user's e-mail address or name, or a device name find one too) [explain.unknown-device]\n")
    }

    @Test func missingInventory() throws {
        let r = try appconfig(["sources", "--inventory", "/nonexistent.csv"])
        #expect(r.status == 1)
        #expect(r.stderr == "appconfig: cannot read /nonexistent.csv: No such file or directory [input.read]\n")
    }

    @Test("LDAP: a wrong password from the environment gives one clear line and never shows the password",
          .enabled(if: LDAPTestServer.available, "slapd is needed"))
    func ldapPassword() throws {
        let server = try LDAPTestServer(users: 300)
        defer { try? server.stop() }
        let wrong = "not-\(UUID().uuidString)"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Paths.appconfigBinary)
        process.arguments = ["sources", "--inventory", server.inventory, "--directory", server.url, "--ldap-base", server.base,
                             "--ldap-bind-dn", server.bindDN, "--ldap-password-env", "TEST_LDAP_PASSWORD"]
        process.environment = ["TEST_LDAP_PASSWORD": wrong]
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let (outData, errData) = readBoth(out, err)
        let stdout = String(decoding: outData, as: UTF8.self), stderr = String(decoding: errData, as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 1)
        #expect(stderr == "appconfig: \(server.url): bind as \(server.bindDN) refused: invalid credentials (check the bind DN and the password's source) [ldap.bind]\n")
        #expect(!stdout.contains(wrong) && !stderr.contains(wrong))
        #expect(!((try? String(contentsOfFile: server.directory + "/slapd.log", encoding: .utf8)) ?? "").contains(wrong))
        // The bind is checked before the inventory is read: a missing inventory is not what is reported.
        let wrongFile = server.directory + "/wrong-password"
        try "\(wrong)\n".write(toFile: wrongFile, atomically: true, encoding: .utf8)
        let early = try appconfig(["sources", "--inventory", "/nonexistent.csv", "--directory", server.url,
                                                           "--ldap-bind-dn", server.bindDN, "--ldap-password-file", wrongFile])
        #expect(early.status == 1)
        #expect(early.stderr.hasSuffix("appconfig: \(server.url): bind as \(server.bindDN) refused: invalid credentials (check the bind DN and the password's source) [ldap.bind]\n"), "\(early.stderr)")

        // The right password from a file: all 300 users, every device joined.
        let ok = try appconfig(["sources", "--inventory", server.inventory, "--directory", server.url,
                                                        "--ldap-bind-dn", server.bindDN,
                                                        "--ldap-password-file", server.passwordFile, "--ldap-targeted", "never"])
        #expect(ok.status == 0, "\(ok.stderr)")
        #expect(ok.stderr == "\(server.url): warning: the bind password crosses the network in clear text: use ldaps:// or --ldap-starttls [ldap.bind]\n")
        #expect(ok.stdout.contains(": 300 users, 0 problems"))
        #expect(ok.stdout.contains("join: 300 of 300 devices found their user, 0 did not"))
        #expect(!ok.stdout.contains(server.password) && !ok.stderr.contains(server.password))
    }

    @Test("a bind DN without a password source is a usage error; there is no password option")
    func noPasswordOnTheCommandLine() throws {
        let r = try appconfig(["sources", "--inventory", Paths.fixture("demo/inventory.csv"),
                                                       "--directory", "ldap://127.0.0.1:1", "--ldap-base", "dc=x", "--ldap-bind-dn", "cn=a"])
        #expect(r.status == 2)
        #expect(r.stderr.contains("--ldap-bind-dn needs --ldap-password-env or --ldap-password-file"))
        let help = try appconfig(["sources", "--help"])
        #expect(!help.stdout.contains("--ldap-password ") && !help.stdout.contains("--password"))
    }

    @Test("LDAP options that cannot be right: one line, status 2, and a password in a URL is never echoed", arguments: [
        (["--directory", "ldap://admin:s3cret-pw@127.0.0.1:1", "--ldap-base", "dc=x"],
         "Error: the LDAP URL holds credentials (user:password@host): they are refused and not used; give --ldap-bind-dn and --ldap-password-env or --ldap-password-file"),
        (["--directory", "ldap://127.0.0.1:1", "--ldap-base", "dc=x", "--ldap-password-env", "HOME"],
         "Error: a password needs --ldap-bind-dn: without one the bind is anonymous"),
        (["--directory", "ldap://127.0.0.1:1", "--ldap-base", "dc=x", "--ldap-timeout", "0"],
         "Error: --ldap-timeout and --ldap-deadline take a number of seconds above 0"),
    ])
    func ldapOptionErrors(arguments: [String], message: String) throws {
        let r = try appconfig(["sources", "--inventory", Paths.fixture("demo/inventory.csv")] + arguments)
        #expect(r.status == 2)
        #expect(r.stderr.split(separator: "\n").first.map(String.init) == message)
        #expect(r.stderr.hasSuffix("Usage: appconfig sources [<options>] --inventory <inventory>\n  See 'appconfig sources --help' for more information.\n"))
        #expect(!r.stderr.contains("s3cret") && !r.stdout.contains("s3cret"))
    }

    @Test("a password file's one trailing line break is dropped; everything else is the password", arguments: [
        ("pw\n", "pw"), ("pw\r\n", "pw"), ("pw", "pw"), ("pw\n\n", "pw\n"), (" pw \n", " pw "), ("p\u{E9}\r\n", "p\u{E9}"),
    ])
    func passwordFileLine(file: String, password: String) {
        #expect(JobSettings.LDAP.passwordLine(file) == password)
    }
}
