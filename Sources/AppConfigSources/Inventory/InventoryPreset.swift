import AppConfigCore

/// Which columns of a vendor's device export name the device's user and carry the user's own
/// variables. Device columns map the same way for every vendor (`ColumnNames.aliases`); user
/// columns do not: Jamf Pro's `Display Name` names the device (`Lobby Apple TV`), not the user,
/// and a generic `displayName` column would be the user's. A preset is found from the header
/// (`detect`) or named with `--inventory-preset`.
public struct InventoryPreset: Sendable, Equatable {
    /// The option's spelling: `jamf-pro`, `jamf-school`, `intune`, `workspace-one`, `generic`.
    public let id: String
    /// How messages and `sources` name it.
    public let name: String
    /// The header is this vendor's when it has every column of one of these sets.
    let signatures: [[String]]
    /// The columns that name the device's user, in the order tried.
    public let userKeyColumns: [String]
    /// The columns each user variable is read from when the inventory is the only source of users
    /// (no directory, or `--map`), in the order tried.
    public let userColumns: [UserVariable: [String]]
    /// Whether a user variable's own name (folded) is a user column too: only for a generic CSV,
    /// where a `displayName` column is the user's.
    let ownNames: Bool
    /// Columns that name the device: never read as a user variable, said so in the mapping.
    public let deviceNameColumns: [String]

    /// Jamf Pro's mobile device export: `Username` is the short name (`userName`, and the
    /// `sAMAccountName` Jamf's `$USERNAME` stands for), `Full Name` the user's name, `Display Name`
    /// the device's.
    public static let jamfPro = InventoryPreset(
        id: "jamf-pro", name: "Jamf Pro",
        signatures: [["Display Name", "JSS Mobile Device ID"], ["Display Name", "Last Inventory Update"],
                     ["Display Name", "Wi-Fi MAC Address", "Serial Number"]],
        userKeyColumns: ["Email Address", "Username"],
        userColumns: [.emailAddress: ["Email Address"], .userName: ["Username"], .sAMAccountName: ["Username"], .displayName: ["Full Name"]],
        ownNames: false, deviceNameColumns: ["Display Name"])

    /// Jamf School's device export: the owner's columns (`OwnerEmail`, `OwnerUsername`,
    /// `OwnerFirstName`, `OwnerLastName`, `OwnerName`); `Name` is the device's.
    public static let jamfSchool = InventoryPreset(
        id: "jamf-school", name: "Jamf School",
        signatures: [["OwnerEmail"], ["OwnerUsername"], ["OwnerName"], ["DeviceUDID"]],
        userKeyColumns: ["OwnerEmail", "OwnerUsername", "Owner"],
        userColumns: [.emailAddress: ["OwnerEmail"], .userName: ["OwnerUsername"], .sAMAccountName: ["OwnerUsername"], .firstName: ["OwnerFirstName"],
                      .lastName: ["OwnerLastName"], .displayName: ["OwnerName"]],
        ownNames: false, deviceNameColumns: ["Name", "DeviceName"])

    /// Microsoft Intune's device export: the primary user's UPN, address and display name.
    public static let intune = InventoryPreset(
        id: "intune", name: "Microsoft Intune",
        signatures: [["Primary user UPN"], ["Primary user email address"], ["Primary user display name"]],
        userKeyColumns: ["Primary user email address", "Primary user UPN"],
        userColumns: [.emailAddress: ["Primary user email address"], .upn: ["Primary user UPN"],
                      .displayName: ["Primary user display name"]],
        ownNames: false, deviceNameColumns: ["Device name"])

    /// Workspace ONE UEM's device list export: `Friendly Name` is the device's.
    public static let workspaceOne = InventoryPreset(
        id: "workspace-one", name: "Workspace ONE",
        signatures: [["Friendly Name"]],
        userKeyColumns: ["Email Address", "User Email", "Username"],
        userColumns: [.emailAddress: ["Email Address", "User Email"], .userName: ["Username"], .sAMAccountName: ["Username"],
                      .firstName: ["First Name"], .lastName: ["Last Name"]],
        ownNames: false, deviceNameColumns: ["Friendly Name"])

    /// Any other CSV: each user variable's own name, and the spellings the vendors use.
    public static let generic = InventoryPreset(
        id: "generic", name: "generic",
        signatures: [],
        userKeyColumns: ["Email Address", "OwnerEmail", "Primary user email address", "Primary user UPN", "Username", "Owner", "User Name"],
        userColumns: [.emailAddress: ["Email Address", "Email"], .upn: ["User Principal Name"],
                      .displayName: ["Full Name"], .userName: ["Username", "User Name"]],
        ownNames: true, deviceNameColumns: [])

    /// Whether the console writes a list column in brackets: Jamf School's `MemberOf` is
    /// `[[District] All iPads,Grade 7,Office Apps]`.
    public var listsInBrackets: Bool { id == InventoryPreset.jamfSchool.id }

    public static let all = [jamfPro, jamfSchool, intune, workspaceOne, generic]

    /// A preset by its option spelling.
    public static func named(_ id: String) -> InventoryPreset? { all.first { $0.id == id } }

    /// The first vendor whose signature the header has, else `generic`.
    static func detect(_ header: FoldedHeader) -> InventoryPreset {
        all.first { preset in preset.signatures.contains { $0.allSatisfy { header.index(of: $0) != nil } } } ?? generic
    }

    /// The columns a user variable is looked for under, in order.
    func columns(for variable: UserVariable) -> [String] {
        (ownNames ? [variable.rawValue] : []) + (userColumns[variable] ?? [])
    }
}
