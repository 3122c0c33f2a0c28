import AppConfigSpec

/// How inventory columns are named. The device exports of Jamf Pro, Jamf School, Microsoft Intune
/// and Workspace ONE map to device variables without configuration. Names compare folded: trimmed,
/// case-insensitively, ignoring spaces, `-` and `_` (`Wi-Fi MAC Address` = `wifiMacAddress`), and a
/// column named in an option (`--device-key`, `--user-key`, `--map`) matches the same way.
public enum ColumnNames {
    /// Each device variable's own name matches too; these are the other spellings seen in exports
    /// (Jamf Pro: `Serial Number`, `Wi-Fi MAC Address`, `Device Phone Number`; Jamf School:
    /// `DeviceUDID`, `SerialNumber`, `WiFiMAC`; Intune: `Serial number`, `Wi-Fi MAC`, `Phone number`;
    /// Workspace ONE: `Serial Number`, `UDID`, `Phone Number`, `MAC Address`).
    public static let aliases: [DeviceVariable: [String]] = [
        .udid: ["UDID", "Device UDID", "DeviceUDID"],
        .serialNumber: ["Serial Number", "Serial"],
        .imei: ["IMEI", "IMEI/MEID"],
        .imsi: ["IMSI"],
        .meid: ["MEID"],
        .iccid: ["ICCID"],
        .model: ["Model", "Product Name", "ModelName"],
        .phoneNumber: ["Device Phone Number", "Phone Number"],
        .wifiMacAddress: ["Wi-Fi MAC Address", "WiFi MAC Address", "Wi-Fi MAC", "WiFiMAC", "MAC Address"],
    ]

    /// The columns that name a device's user, in the order they are tried (Jamf Pro, Workspace ONE:
    /// `Email Address`, `Username`; Jamf School: `OwnerEmail`, `Owner`; Intune: `Primary user
    /// email address`, `Primary user UPN`).
    public static let userKeyColumns = ["Email Address", "OwnerEmail", "Primary user email address", "Primary user UPN",
                                        "Username", "Owner", "User Name"]

    /// User variables an inventory may carry itself, for fleets without a directory (each
    /// variable's own name matches too).
    public static let userAliases: [UserVariable: [String]] = [
        .emailAddress: ["Email Address", "OwnerEmail", "Primary user email address", "Email"],
        .upn: ["Primary user UPN", "User Principal Name"],
        .displayName: ["Full Name", "Primary user display name", "OwnerName"],  // Jamf's "Display Name" names the device
        .userName: ["Username", "User Name"],
    ]

    static func trimmed(_ s: String) -> String {
        var t = Substring(s)
        while let f = t.first, f == " " || f == "\t" { t.removeFirst() }
        while let l = t.last, l == " " || l == "\t" { t.removeLast() }
        return String(t)
    }

    static func folded(_ s: String) -> String {
        String(s.lowercased().filter { $0 != " " && $0 != "-" && $0 != "_" && $0 != "\t" })
    }

    /// The first column with this name, folded.
    static func index(of name: String, in header: [String]) -> Int? {
        let wanted = folded(name)
        return header.firstIndex { folded($0) == wanted }
    }

    /// The column a device variable reads by default: its own name or an alias, folded.
    static func column(for variable: DeviceVariable, in header: [String]) -> Int? {
        firstColumn(named: [variable.rawValue] + (aliases[variable] ?? []), in: header)
    }

    /// The first column of `header` holding one of `names` (folded), in the order of `names`.
    static func firstColumn(named names: [String], in header: [String]) -> Int? {
        let foldedHeader = header.map(folded)
        for name in names.map(folded) { if let c = foldedHeader.firstIndex(of: name) { return c } }
        return nil
    }
}
