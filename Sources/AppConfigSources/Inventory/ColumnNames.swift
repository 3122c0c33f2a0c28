import AppConfigSpec

/// How inventory columns are named: the Jamf Pro export headers map to device variables without
/// configuration. Names compare trimmed, case-insensitively, ignoring spaces, `-` and `_`
/// (`Wi-Fi MAC Address` = `wifiMacAddress`).
public enum ColumnNames {
    /// Each device variable's own name matches too; these are the other spellings seen in exports.
    public static let aliases: [DeviceVariable: [String]] = [
        .udid: ["UDID", "Device UDID"],
        .serialNumber: ["Serial Number", "Serial"],
        .imei: ["IMEI"],
        .imsi: ["IMSI"],
        .meid: ["MEID"],
        .iccid: ["ICCID"],
        .model: ["Model", "Product Name"],
        .phoneNumber: ["Device Phone Number", "Phone Number"],
        .wifiMacAddress: ["Wi-Fi MAC Address", "WiFi MAC Address", "MAC Address"],
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

    /// The first column with this name (trimmed, case-insensitive).
    static func index(of name: String, in header: [String]) -> Int? {
        let wanted = trimmed(name).lowercased()
        return header.firstIndex { $0.lowercased() == wanted }
    }

    /// The column a device variable reads by default: its own name or an alias, folded.
    static func column(for variable: DeviceVariable, in header: [String]) -> Int? {
        let names = Set(([variable.rawValue] + (aliases[variable] ?? [])).map(folded))
        return header.firstIndex { names.contains(folded($0)) }
    }
}
