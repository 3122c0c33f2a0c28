import AppConfigSpec
import Testing

/// `values.secret-literal`: a key that says it holds a secret, given a literal, is a warning (every
/// device's plist and every MDM log would carry it); a template, an empty string and other keys are not.
@Suite("Lint: secrets given as plain text")
struct SecretLiteralTests {
    static let spec: Spec = {
        let xml = """
            <?xml version="1.0" encoding="UTF-8"?>
            <managedAppConfiguration>
              <version>1</version>
              <bundleId>com.example.secrets</bundleId>
              <dict>
                <string keyName="servicePassword"/>
                <string keyName="APIToken"/>
                <string keyName="client_secret"/>
                <string keyName="licenseKey"/>
                <string keyName="keyboardLayout"/>
                <string keyName="hotKey"/>
                <string keyName="serverURL"/>
                <string keyName="enrollmentCode"/>
                <stringArray keyName="tokens"/>
              </dict>
              <presentation defaultLocale="en-US">
                <field keyName="enrollmentCode" type="input">
                  <label><language value="en-US">Enrollment code</language></label>
                  <description><language value="en-US">The passphrase users type once.</language></description>
                </field>
              </presentation>
            </managedAppConfiguration>
            """
        let result = SpecParser.parse(Array(xml.utf8), file: "secrets.xml")
        precondition(!result.hasErrors, "\(result.diagnostics)")
        return result.spec!
    }()

    static let cases: [(value: String, warning: String?)] = [
        (#"{"servicePassword": "hunter2"}"#, #""servicePassword" looks like a secret (its name says password)"#),
        (#"{"APIToken": "abc123"}"#, #""APIToken" looks like a secret (its name says token)"#),
        (#"{"client_secret": "s3"}"#, #""client_secret" looks like a secret (its name says secret)"#),
        (#"{"licenseKey": "XXXX-YYYY"}"#, #""licenseKey" looks like a secret (its name says license key)"#),
        (#"{"enrollmentCode": "open sesame"}"#, #""enrollmentCode" looks like a secret (its description says passphrase)"#),
        (#"{"tokens": ["t1", "$(udid)"]}"#, #""tokens" looks like a secret (its name says tokens)"#),
        (#"{"keyboardLayout": "dvorak"}"#, nil),
        (#"{"hotKey": "F5"}"#, nil),
        (#"{"serverURL": "https://example.com"}"#, nil),
        (#"{"servicePassword": "$(sAMAccountName)"}"#, nil),
        (#"{"APIToken": ""}"#, nil),
    ]

    @Test("a secret-looking key with a literal warns, with its reason and where; others do not", arguments: cases)
    func secretLiterals(value: String, warning: String?) {
        let r = AdminValuesReader.read(Array(value.utf8), file: "v.json", spec: Self.spec)
        let found = r.diagnostics.filter { $0.code.rawValue == "values.secret-literal" }
        #expect(!r.hasErrors, "\(r.diagnostics)")
        guard let warning else {
            #expect(found.isEmpty, "\(found)")
            return
        }
        #expect(found.count == 1)
        #expect(found.first?.severity == .warning)
        #expect(found.first?.message == warning + " and is given as plain text: every device's configuration, every copy of the output and every MDM log carries it")
        #expect(found.first?.location.line == 1)
    }
}
