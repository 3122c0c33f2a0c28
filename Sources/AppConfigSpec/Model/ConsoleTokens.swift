/// Every console's variable tokens beside ours, in one table read both ways: `import` and lint
/// translate a console's token into ours (`ForeignVariables`), `export` ours into the console's.
/// One table, so that the two directions cannot drift. Where a console has several tokens for
/// one of ours (Jamf's `$REALNAME` and `$FULLNAME`), export writes the first listed.
///
/// Sources: Jamf Pro's payload variables for App Config; Workspace ONE's lookup values;
/// Microsoft's "Add app configuration policies for managed iOS/iPadOS devices" token list;
/// Ivanti Neurons for MDM's user variables (`${userEmailAddress}`, `${userUPN}`...); Fleet's
/// `FleetVarsSupportedInAppleAppConfig` (fleetdm/fleet). docs/export.md prints the table.
public enum ConsoleTokens {
    public enum Console: String, Sendable, CaseIterable {
        case jamf = "Jamf Pro", ws1 = "Workspace ONE", intune = "Intune", ivanti = "Ivanti", fleet = "Fleet"

        /// A token of this console as written in a configuration.
        public func written(_ name: String) -> String {
            switch self {
            case .jamf: "$" + name
            case .ws1: "{" + name + "}"
            case .intune: "{{" + name + "}}"
            case .ivanti: "${" + name + "}"
            case .fleet: "$FLEET_VAR_" + name
            }
        }
    }

    public struct Row: Sendable, Equatable {
        public var console: Console
        /// The token's name as the console documents it (`EMAIL`, `EmailAddress`, `mail`).
        public var name: String
        /// Ours, canonical (`$(emailAddress)`); nil when we have none.
        public var ours: String?
    }

    public static let rows: [Row] = {
        func rows(_ console: Console, _ pairs: KeyValuePairs<String, String?>) -> [Row] { pairs.map { Row(console: console, name: $0.key, ours: $0.value) } }
        // Jamf's `$USERNAME` is Jamf's Username, the short name (`sAMAccountName` in AD; the export's
        // `Username` column without a directory), not the UPN. IDs Jamf keeps and exports do not
        // (`$DEPARTMENTID`, `$SITEID`) have no equivalent.
        let jamf = rows(.jamf, [
            "EMAIL": "$(emailAddress)", "SERIALNUMBER": "$(serialNumber)", "UDID": "$(udid)", "USERNAME": "$(sAMAccountName)",
            "REALNAME": "$(displayName)", "FULLNAME": "$(displayName)", "IMEI": "$(imei)", "ICCID": "$(iccid)", "MEID": "$(meid)",
            "MACADDRESS": "$(wifiMacAddress)", "DEVICENAME": "$(device.Display Name)",
            "DEPARTMENT": "$(device.Department)", "DEPARTMENTNAME": "$(device.Department)",
            "BUILDING": "$(device.Building)", "BUILDINGNAME": "$(device.Building)", "ROOM": "$(device.Room)", "POSITION": "$(device.Position)",
            "PHONE": "$(device.User Phone Number)", "ASSET_TAG": "$(device.Asset Tag)", "SITENAME": "$(device.Site)",
            "JSSID": "$(device.JSS Mobile Device ID)", "MANAGEMENTID": "$(device.Device ID)", "DEVICEID": "$(device.Device ID)",
            "DEPARTMENTID": nil, "BUILDINGID": nil, "SITEID": nil, "PROFILEJSSID": nil,
        ])
        // Workspace ONE matches its lookup values whatever their case.
        let ws1 = rows(.ws1, [
            "EmailAddress": "$(emailAddress)", "EmailUserName": "$(emailAddressLocalPart)", "EmailDomain": "$(emailAddressDomain)",
            "EnrollmentUser": "$(sAMAccountName)", "UserPrincipalName": "$(upn)", "FirstName": "$(firstName)", "LastName": "$(lastName)",
            "UserDistinguishedName": "$(dn)", "DeviceSerialNumber": "$(serialNumber)", "DeviceUid": "$(udid)", "DeviceUdid": "$(udid)",
            "DeviceModel": "$(model)", "DeviceImei": "$(imei)", "DeviceWLANMac": "$(wifiMacAddress)", "DevicePhoneNumber": "$(phoneNumber)",
            "DeviceFriendlyName": "$(device.Friendly Name)", "DeviceAssetNumber": "$(device.Asset Number)",
            "DevicePlatform": nil, "DeviceOperatingSystem": nil, "DeviceReportedName": nil, "GroupCode": nil, "EnrollmentUserId": nil,
            "UserDomain": nil,
        ])
        // Microsoft's `{{username}}` is the user's display name (`John Doe`); `{{partialupn}}` the
        // UPN before its `@`. Intune matches tokens whatever their case.
        let intune = rows(.intune, [
            "userprincipalname": "$(upn)", "mail": "$(emailAddress)", "username": "$(displayName)", "partialupn": "$(upn|split:@:0)",
            "serialnumber": "$(serialNumber)", "serialnumberlast4digits": "$(serialNumber|last:4)", "udidlast4digits": "$(udid|last:4)",
            "devicename": "$(device.Device name)", "deviceid": "$(device.Device ID)", "imei": "$(imei)",
            "accountid": nil, "userid": nil, "aaddeviceid": nil,
        ])
        let ivanti = rows(.ivanti, [
            "userEmailAddress": "$(emailAddress)", "userUPN": "$(upn)", "userFirstName": "$(firstName)", "userLastName": "$(lastName)",
            "userDisplayName": "$(displayName)", "userUID": nil,
        ])
        // Fleet's IdP username is the UPN its identity provider gives (an address); `HOST_UUID` is
        // an Apple device's UDID.
        let fleet = rows(.fleet, [
            "HOST_END_USER_EMAIL_IDP": "$(emailAddress)", "HOST_END_USER_IDP_USERNAME": "$(upn)",
            "HOST_END_USER_IDP_USERNAME_LOCAL_PART": "$(upn|split:@:0)", "HOST_END_USER_IDP_FULLNAME": "$(displayName)",
            "HOST_HARDWARE_SERIAL": "$(serialNumber)", "HOST_UUID": "$(udid)",
            "HOST_END_USER_IDP_GROUPS": nil, "HOST_END_USER_IDP_DEPARTMENT": nil, "HOST_PLATFORM": nil,
        ])
        return jamf + ws1 + intune + ivanti + fleet
    }()

    /// Import's direction: a console's token name (upper case for Jamf, lower case for the
    /// others, which match whatever the case) to ours, or nil when we have none.
    static func lookup(_ console: Console) -> [String: String?] {
        var out: [String: String?] = [:]
        for row in rows where row.console == console { out[console == .jamf ? row.name : row.name.lowercased()] = .some(row.ours) }
        return out
    }

    /// Export's direction: the token that writes `ours` (canonical, `$(upn|split:@:0)`) in
    /// `console`, or nil when it has none.
    public static func token(for ours: String, in console: Console) -> String? {
        rows.first { $0.console == console && $0.ours == ours }.map { console.written($0.name) }
    }

    /// The table as docs/export.md prints it (a test keeps the two the same): per console, each
    /// token, ours, and the direction it goes in (import reads Jamf Pro, Workspace ONE and
    /// Intune; where a console has two tokens for one of ours, export writes the first).
    public static var markdown: String {
        var out = "| console | token | ours | direction |\n|---|---|---|---|\n"
        for row in rows {
            let first = row.ours.map { ours in rows.first { $0.console == row.console && $0.ours == ours } == row } ?? false
            let imported = row.console == .jamf || row.console == .ws1 || row.console == .intune
            let direction = row.ours == nil ? (imported ? "none: import reports it, kept as text" : "none") : !first ? "import only" : imported ? "both" : "export"
            out += "| \(row.console.rawValue) | `\(row.console.written(row.name))` | " + (row.ours.map { "`\($0)`" } ?? "") + " | \(direction) |\n"
        }
        return out
    }
}
