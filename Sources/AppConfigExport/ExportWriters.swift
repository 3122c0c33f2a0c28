import AppConfigSpec
import Foundation

/// The files of one variant for one console: each a name under the target's folder and its bytes.
struct ExportWriters {
    let target: ExportTarget
    let spec: Spec
    let intuneXML: Bool
    /// Intune's ID of the app (`targetedMobileApps`), when given.
    let intuneAppID: String?

    func files(_ v: ExportVariant, stem: String) throws -> [(name: String, bytes: [UInt8])] {
        let display = "\(spec.bundleId) - \(v.name)"
        switch target {
        case .intune:
            var body: [String: Any] = [
                "@odata.type": "#microsoft.graph.iosMobileAppConfiguration", "displayName": display,
                "description": v.match.isEmpty ? "appconfig export: every device" : "appconfig export: \(v.match)",
                "targetedMobileApps": intuneAppID.map { [$0] } ?? [],
            ]
            if intuneXML {
                body["encodedSettingXml"] = Data(Self.plistDict(v.keys).utf8).base64EncodedString()
            } else {
                body["settings"] = v.keys.map { key, value in
                    ["appConfigKey": key, "appConfigKeyType": Self.intuneType(value), "appConfigKeyValue": value.text] as [String: Any]
                }
            }
            let target: [String: Any] = v.name == "all" ? ["@odata.type": "#microsoft.graph.allDevicesAssignmentTarget"]
                : ["@odata.type": "#microsoft.graph.groupAssignmentTarget", "groupId": v.group]
            let assign: [String: Any] = ["assignments": [["@odata.type": "#microsoft.graph.managedDeviceMobileAppConfigurationAssignment", "target": target]]]
            return [(stem + ".json", try Self.json(body)), (stem + ".assign.json", try Self.json(assign))]
        case .intuneMAM:
            let body: [String: Any] = [
                "@odata.type": "#microsoft.graph.targetedManagedAppConfiguration", "displayName": display,
                "description": v.match.isEmpty ? "appconfig export: every user" : "appconfig export: \(v.match)",
                "customSettings": v.keys.map { ["name": $0.key, "value": $0.value.text] },
            ]
            // The app is a relationship: set by the targetApps action, after the policy is made.
            let apps: [String: Any] = ["apps": [["@odata.type": "#microsoft.graph.managedMobileApp",
                                                 "mobileAppIdentifier": ["@odata.type": "#microsoft.graph.iosMobileAppIdentifier", "bundleId": spec.bundleId]]]]
            let target: [String: Any] = v.name == "all" ? ["@odata.type": "#microsoft.graph.allLicensedUsersAssignmentTarget"]
                : ["@odata.type": "#microsoft.graph.groupAssignmentTarget", "groupId": v.group]
            let assign: [String: Any] = ["assignments": [["@odata.type": "#microsoft.graph.targetedManagedAppPolicyAssignment", "target": target]]]
            return [(stem + ".json", try Self.json(body)), (stem + ".targetApps.json", try Self.json(apps)), (stem + ".assign.json", try Self.json(assign))]
        case .jamf:
            let scope: [String: Any] = ["variant": v.name, "scope": v.name == "all" ? "All Mobile Devices" : v.group, "match": v.match]
            return [(stem + ".plist", Array(Self.plistDict(v.keys).utf8)), (stem + ".scope.json", try Self.json(scope))]
        case .ws1:
            let body: [String: Any] = [
                "assignment_group": v.name == "all" ? "All Devices" : v.group,
                "application_configuration": v.keys.map { ["key": $0.key, "type": Self.ws1Type($0.value), "value": $0.value.text] },
            ]
            return [(stem + ".json", try Self.json(body))]
        case .ivanti:
            let body: [String: Any] = [
                "label": v.name == "all" ? "All-Smartphones" : v.group,
                "app_config": v.keys.map { ["key": $0.key, "value": $0.value.text] },
            ]
            return [(stem + ".json", try Self.json(body))]
        case .fleet:
            let body: [String: Any] = [
                "team": v.name == "all" ? "All teams" : v.group,
                "configuration": Self.plistDocument(v.keys),
            ]
            return [(stem + ".json", try Self.json(body))]
        }
    }

    static func intuneType(_ v: ConsoleValue) -> String {
        switch v {
        case .integer: "integerType"
        case .real: "realType"
        case .boolean: "booleanType"
        case .string, .date, .array: "stringType"
        }
    }

    static func ws1Type(_ v: ConsoleValue) -> String {
        switch v {
        case .integer: "Integer"
        case .real: "Float"
        case .boolean: "Boolean"
        case .string, .date, .array: "String"
        }
    }

    static func json(_ object: Any) throws -> [UInt8] {
        Array(try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])) + [0x0A]
    }

    /// The `<dict>` the consoles' plist fields take (Jamf's App Configuration, Intune's XML).
    static func plistDict(_ keys: [(key: String, value: ConsoleValue)]) -> String {
        var out = "<dict>\n"
        for (key, value) in keys {
            out += "\t<key>\(escaped(key))</key>\n"
            append(value, indent: "\t", to: &out)
        }
        return out + "</dict>\n"
    }

    /// A whole XML plist document (Fleet's `configuration`).
    static func plistDocument(_ keys: [(key: String, value: ConsoleValue)]) -> String {
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0">

        """ + plistDict(keys) + "</plist>\n"
    }

    private static func append(_ value: ConsoleValue, indent: String, to out: inout String) {
        switch value {
        case .string(let s): out += "\(indent)<string>\(escaped(s))</string>\n"
        case .integer(let n): out += "\(indent)<integer>\(n)</integer>\n"
        case .real: out += "\(indent)<real>\(value.text)</real>\n"
        case .boolean(let b): out += "\(indent)<\(b ? "true" : "false")/>\n"
        case .date(let d): out += "\(indent)<date>\(d.description)</date>\n"
        case .array(let items):
            out += "\(indent)<array>\n"
            for item in items { append(item, indent: indent + "\t", to: &out) }
            out += "\(indent)</array>\n"
        }
    }

    private static func escaped(_ s: String) -> String {
        s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
    }
}
