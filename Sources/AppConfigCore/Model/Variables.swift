/// The 13 user variables of the AppConfig reference (values from the directory).
public enum UserVariable: String, CaseIterable, Sendable, Codable {
    case cn, displayName, dn, emailAddress, emailAddressDomain, emailAddressLocalPart
    case firstName, lastName, locale, ou, sAMAccountName, userName, upn
}

/// The 9 device variables of the AppConfig reference (values from the inventory).
public enum DeviceVariable: String, CaseIterable, Sendable, Codable {
    case iccid, imei, imsi, meid, model, phoneNumber, serialNumber, udid, wifiMacAddress
}

/// A value a key can take per device. `deviceAttribute` is an inventory column by name, written
/// `$(device.<Column>)` in admin templates: custom attributes are what admins ask for most.
public enum Variable: Hashable, Sendable, CustomStringConvertible {
    case user(UserVariable)
    case device(DeviceVariable)
    case deviceAttribute(String)

    /// The spelling the reference gives (`imei`, `userName`), or `device.<Column>`.
    public var description: String {
        switch self {
        case .user(let v): v.rawValue
        case .device(let v): v.rawValue
        case .deviceAttribute(let column): "device.\(column)"
        }
    }

    /// A user or device variable by name, matched case-insensitively (`IMEI`, `username` are seen in
    /// real specs). `canonical` is false when the spelling differs from the reference's.
    public static func named(_ name: String) -> (variable: Variable, canonical: Bool)? {
        let folded = name.lowercased()
        if let u = UserVariable.allCases.first(where: { $0.rawValue.lowercased() == folded }) {
            return (.user(u), u.rawValue == name)
        }
        if let d = DeviceVariable.allCases.first(where: { $0.rawValue.lowercased() == folded }) {
            return (.device(d), d.rawValue == name)
        }
        return nil
    }

    /// All 22 names, for messages.
    public static let allNames = UserVariable.allCases.map(\.rawValue) + DeviceVariable.allCases.map(\.rawValue)
}

extension Set<Variable> {
    /// The device variables among them (the inventory columns a render keeps).
    package var deviceVariables: Set<DeviceVariable> { Set<DeviceVariable>(compactMap { if case .device(let v) = $0 { v } else { nil } }) }

    /// The user variables among them (what a render's user table keeps).
    package var userVariables: Set<UserVariable> { Set<UserVariable>(compactMap { if case .user(let v) = $0 { v } else { nil } }) }
}
