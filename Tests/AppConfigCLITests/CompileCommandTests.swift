import Foundation
import TestSupport
import Testing

/// `appconfig compile` through the built binary: the listing, a one-device preview, exit statuses.
@Suite("appconfig compile, end to end")
struct CompileCommandTests {
    let example = Paths.fixture("reference/example.xml")
    let benchValues = Paths.fixture("reference/bench-values.json")

    @Test func disassembly() throws {
        let r = try appconfig(["compile", example, "--values", benchValues, "--disasm"])
        #expect(r.status == 0)
        #expect(r.stdout.hasPrefix("; com.myCompany.myApp version 123, hash "))
        #expect(r.stdout.contains("0048  literal      t1 \"CN=\"\n0049  variable     s2 $(cn)\n"))
        // The example's strkey1 is "CN=$(cn),OU=$(ou)": its pattern holds for every device.
        #expect(r.stdout.contains("0052  stringEnd\n      ; checkPattern p1 /CN=.*/ holds for every device: \"CN=\" matches it\n0053  endKey\n"))
        #expect(r.stdout.hasSuffix("halt\n"))
    }

    @Test("a preview renders one device exactly as plistlib would write it")
    func preview() throws {
        let r = try appconfig(["compile", example, "--values", benchValues, "--format", "xml",
                                                       "--var", "cn=Jane & Co", "--var", "ou=EMEA",
                                                       "--var", "emailAddress=jdoe@company.com", "--var", "serialNumber=C02ABC"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("\t<key>strkey1</key>\n\t<string>CN=Jane &amp; Co,OU=EMEA</string>\n"))
        #expect(r.stdout.contains("\t<key>strarraykey1</key>\n\t<array>\n\t\t<string>jdoe@company.com</string>\n\t\t<string>C02ABCX@company.com</string>\n\t</array>\n"))
    }

    @Test("a failing device: its error on stderr, status 1, nothing on stdout")
    func failingDevice() throws {
        let r = try appconfig(["compile", example, "--values", benchValues,
                                                       "--var", "cn=Jane", "--var", "ou=EMEA", "--var", "serialNumber=C02ABC"])
        #expect(r.status == 1)
        #expect(r.stdout.isEmpty)
        #expect(r.stderr == "appconfig: --var, key \"strarraykey1\": $(emailAddress) is missing for this device [device.missing-variable]\n")
    }

    @Test func statuses() throws {
        #expect(try appconfig(["compile", "/nonexistent.xml"]).status == 2)
        #expect(try appconfig(["compile", example, "--missing", "sometimes"]).status == 2)
        let corpusMac = Paths.corpusFile("specs/jamf-AppConfig-Generator/mac.xml")
        if let corpusMac {
            let r = try appconfig(["compile", corpusMac, "--lenient"])
            #expect(r.status == 1)
            #expect(r.stderr.contains("[compile.literal-breaks-constraint]"))
        }
    }
}
