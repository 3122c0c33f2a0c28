import AppConfigCore

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

    static func trimmed(_ s: String) -> String {
        var t = Substring(s)
        while let f = t.first, f == " " || f == "\t" { t.removeFirst() }
        while let l = t.last, l == " " || l == "\t" { t.removeLast() }
        return String(t)
    }

    static func folded(_ s: String) -> String {
        String(s.lowercased().filter { $0 != " " && $0 != "-" && $0 != "_" && $0 != "\t" })
    }
}

/// A header's names folded once, each to its first column: every lookup by name (an option's, an
/// alias's, `$(device.<Column>)`'s) is one dictionary hit, however wide the header.
struct FoldedHeader: Sendable {
    private let first: [String: Int]

    init(_ header: [String]) {
        var first: [String: Int] = [:]
        for (i, name) in header.enumerated() where first[ColumnNames.folded(name)] == nil { first[ColumnNames.folded(name)] = i }
        self.first = first
    }

    /// The first column with this name, folded.
    func index(of name: String) -> Int? { first[ColumnNames.folded(name)] }

    /// The first of `names` the header has, in the order of `names`.
    func firstColumn(named names: [String]) -> Int? {
        for name in names { if let c = index(of: name) { return c } }
        return nil
    }

    /// The column a device variable reads by default: its own name or an alias.
    func column(for variable: DeviceVariable) -> Int? {
        firstColumn(named: [variable.rawValue] + (ColumnNames.aliases[variable] ?? []))
    }
}
