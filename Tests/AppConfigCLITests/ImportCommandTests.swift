import Foundation
import TestSupport
import Testing

/// `appconfig import`: other consoles' app configurations into values files.
@Suite("appconfig import, end to end")
struct ImportCommandTests {
    static let fragment = """
        <dict>
            <key>serverURL</key>
            <string>https://mdm.example.com/$USERNAME?mail={{mail}}&amp;sn={DeviceSerialNumber}</string>
            <key>syncIntervalMinutes</key>
            <integer>15</integer>
            <key>offlineMode</key>
            <true/>
            <key>allowedDomains</key>
            <array><string>a.example</string><string>{EmailDomain}</string></array>
            <key>region</key>
            <string>{{partialupn}} costs $5 {{accountid}}</string>
            <key>nested</key>
            <dict><key>x</key><string>y</string></dict>
        </dict>
        """

    @Test("a pasted <dict>: tokens translated, the rest listed with the fragment's real lines, the result checked against the spec")
    func jamfFragment() throws {
        try withTemporaryDirectory { dir in
            let file = dir.path("jamf.xml"), out = dir.path("values.json")
            try Self.fragment.write(toFile: file, atomically: true, encoding: .utf8)
            let r = try appconfig(["import", "--from", "jamf", file, "--out", out])
            #expect(r.status == 0, "\(r.stderr)")
            #expect(try String(contentsOfFile: out, encoding: .utf8) == """
                {
                  "serverURL": "https://mdm.example.com/$(sAMAccountName)?mail=$(emailAddress)&sn=$(serialNumber)",
                  "syncIntervalMinutes": 15,
                  "offlineMode": true,
                  "allowedDomains": ["a.example", "$(emailAddressDomain)"],
                  "region": "$(upn|split:@:0) costs $$5 {{accountid}}"
                }

                """)
            #expect(r.stderr == """
                \(file):11:5: warning: "region": {{accountid}} (Intune) has no equivalent; it is kept as literal text [values.foreign-variable]
                \(file):13:5: warning: "nested": a <dict> has no place in a values file; left out [values.type]

                """)
            // Against the demo spec: the untranslated token is an error there, status 1.
            let checked = try appconfig(["import", "--from", "jamf", file, "--spec", Paths.fixture("demo/spec.xml")])
            #expect(checked.status == 1)
            #expect(checked.stderr.contains("(imported values):6:13: error: \"region\": {{accountid}} is Intune's variable"))
            #expect(checked.stdout.hasPrefix("{\n  \"serverURL\""))
        }
    }

    @Test("Jamf's tokens nobody can translate are listed by import and warned of by lint, never shipped silently")
    func jamfIDs() throws {
        try withTemporaryDirectory { dir in
            let file = dir.path("jamf.xml"), out = dir.path("values.json")
            let spec = dir.path("spec.xml")
            try """
                <dict>
                  <key>dept</key><string>$DEPARTMENTNAME / $DEPARTMENTID</string>
                  <key>user</key><string>${EMAIL} $USERNAME $DEVICEID</string>
                  <key>odd</key><string>$DEPT_NAME</string>
                </dict>
                """.write(toFile: file, atomically: true, encoding: .utf8)
            try """
                <managedAppConfiguration><version>1</version><bundleId>com.example.app</bundleId>
                <dict><string keyName="dept"/><string keyName="user"/><string keyName="odd"/></dict></managedAppConfiguration>
                """.write(toFile: spec, atomically: true, encoding: .utf8)
            let r = try appconfig(["import", "--from", "jamf", file, "--out", out])
            #expect(r.status == 0)
            #expect(try String(contentsOfFile: out, encoding: .utf8) == """
                {
                  "dept": "$(device.Department) / $$DEPARTMENTID",
                  "user": "$(emailAddress) $(sAMAccountName) $(device.Device ID)",
                  "odd": "$$DEPT_NAME"
                }

                """)
            #expect(r.stderr == """
                \(file):2:18: warning: "dept": $DEPARTMENTID (Jamf Pro) has no equivalent; it is kept as literal text [values.foreign-variable]
                \(file):4:17: warning: "odd": $DEPT_NAME is written like Jamf Pro's variables but is not one of them; it is kept as literal text [values.foreign-variable]

                """)
            let lint = try appconfig(["lint", spec, "--values", out])
            #expect(lint.status == 0)
            #expect(lint.stdout.contains("\(out):2:11: warning: \"dept\": the literal text $DEPARTMENTID is Jamf Pro's variable, which devices would receive as text; "
                                         + "map it to an inventory column: $(device.<Column>) [values.foreign-literal]"), "\(lint.stdout)")
        }
    }

    @Test("what is not a configuration is refused with its place", arguments: [
        ("<array><string>x</string></array>", "DIR/c.xml:1:1: error: expected a <dict> (as pasted into Intune) or a <plist> holding one, not <array> [values.root]"),
        ("<dict><string>x</string></dict>", "DIR/c.xml:1:7: error: expected <key> then its value, found <string> [values.syntax]"),
        ("<dict><key>a</key>", "DIR/c.xml:1:19: error: element <dict> is not closed [xml.syntax]"),
    ])
    func refused(text: String, message: String) throws {
        try withTemporaryDirectory { dir in
            let file = dir.path("c.xml")
            try text.write(toFile: file, atomically: true, encoding: .utf8)
            let r = try appconfig(["import", "--from", "intune", file])
            #expect(r.status == 1)
            #expect(r.stderr == message.replacingOccurrences(of: "DIR", with: dir.path) + "\n")
        }
    }
}
