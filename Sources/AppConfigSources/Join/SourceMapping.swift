import AppConfigCore

/// Which column or attribute each variable is read from, and which columns name the device and
/// its user: what `sources` prints and `render` says in one line, so that a variable read from the
/// wrong column (a device's name taken for its user's) is seen before a device receives it.
public struct SourceMapping: Sendable {
    /// Whose export the inventory was read as (`Jamf Pro`, `generic`...).
    public let preset: String
    public let deviceKeyColumn: String
    /// The user key column, nil when the inventory names no user.
    public let userKeyColumn: String?
    /// The directory attribute the user key is matched against, nil without a directory.
    public let joinAttribute: String?
    /// Each variable with where its value comes from (`column "Serial Number"`, `attribute
    /// displayName or cn`, `missing`), in the reference's order: user variables, then device.
    public let sources: [(variable: Variable, source: String)]
    /// Columns that name the device and are read as no user variable (Jamf Pro's `Display Name`).
    public let deviceNameColumns: [String]

    /// The mapping of `fleet`; `attributes` says which attributes the directory's user variables
    /// come from.
    public init(fleet: Fleet, attributes: AttributeMap) {
        let inventory = fleet.inventory
        func column(_ slot: Int) -> String { "column \"\(inventory.header[inventory.keptColumns[slot]])\"" }
        preset = inventory.preset.name
        deviceKeyColumn = inventory.header[inventory.keptColumns[inventory.deviceKeySlot]]
        userKeyColumn = inventory.userKeySlot.map { inventory.header[inventory.keptColumns[$0]] }
        joinAttribute = fleet.users == nil ? nil : attributes.joinAttribute
        deviceNameColumns = inventory.preset.deviceNameColumns.filter { name in inventory.header.contains { ColumnNames.folded($0) == ColumnNames.folded(name) } }
        let variables = UserVariable.allCases.map { Variable.user($0) } + DeviceVariable.allCases.map { Variable.device($0) }
        // The plan the renderer reads with: one description of where values come from.
        let plan = (try? fleet.plan(for: variables))
        var sources: [(Variable, String)] = []
        for (i, v) in variables.enumerated() {
            let described: String
            switch plan?.sources[i] ?? .none {
            case .column(let slot): described = column(slot)
            case .addressPart(let slot, let local): described = column(slot) + (local ? " (before the @)" : " (after the @)")
            case .user:
                guard case .user(let u) = v else { described = "missing"; break }
                switch u {
                case .dn: described = "the entry's DN"
                case .ou: described = "the DN's OU nearest the domain"
                case .cn: described = "the DN's leaf-most CN, else attribute cn"
                case .emailAddressLocalPart: described = "attribute \(Self.names(attributes.sources[.emailAddress])) (before the @)"
                case .emailAddressDomain: described = "attribute \(Self.names(attributes.sources[.emailAddress])) (after the @)"
                case .userName: described = "attribute \(Self.names(attributes.sources[.upn])), else \(Self.names(attributes.sources[.emailAddress]))"
                default: described = attributes.sources[u].map { "attribute " + Self.names($0) } ?? "missing"
                }
            case .none: described = "missing"
            }
            sources.append((v, described))
        }
        self.sources = sources
    }

    static func names(_ attributes: [String]?) -> String { (attributes ?? ["(none)"]).joined(separator: " or ") }

    /// The keys: `device key "UDID"; user key "Email Address" = attribute mail`.
    public var keys: String {
        var s = "device key \"\(deviceKeyColumn)\"; "
        if let userKeyColumn {
            s += "user key \"\(userKeyColumn)\"" + (joinAttribute.map { " = attribute \($0)" } ?? "")
        } else {
            s += "no user key column: devices have no user"
        }
        return s
    }

    /// What `sources` prints: the preset and keys, then a line per variable.
    public var lines: [String] {
        var lines = ["mapping (\(preset) export): " + keys]
        if !deviceNameColumns.isEmpty {
            lines.append("  " + deviceNameColumns.map { "\"\($0)\"" }.joined(separator: ", ") + " names the device, never a user variable")
        }
        let width = sources.map(\.variable.description.count).max() ?? 0
        for (v, source) in sources {
            lines.append("  " + v.description.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + source)
        }
        return lines
    }

    /// One line for a render's summary: the keys, and the variables the job reads.
    public func line(for variables: [Variable]) -> String {
        let used = sources.filter { variables.contains($0.variable) }.map { "\($0.variable) <- \($0.source)" }
        return "mapping (\(preset) export): " + keys + (used.isEmpty ? "" : "; " + used.joined(separator: ", "))
    }
}
