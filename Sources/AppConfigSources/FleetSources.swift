import AppConfigCore

/// Where a fleet comes from: the inventory and how to read it, the directory (if any) and which of
/// its attributes feed the user variables. One description that `sources`, `render` and an
/// embedding program load the same way.
public struct FleetSources: Sendable {
    /// An LDIF file, or an LDAP server.
    public enum Directory: Sendable {
        case ldif(String)
        case ldap(LDAPConfiguration)

        /// `ldap://`, `ldaps://` and `ldapi://` URLs are servers; anything else an LDIF file.
        public static func isServerURL(_ text: String) -> Bool {
            text.hasPrefix("ldap://") || text.hasPrefix("ldaps://") || text.hasPrefix("ldapi://")
        }
    }

    public var inventory: String
    public var inventoryOptions = InventoryOptions()
    public var directory: Directory?
    public var attributes = AttributeMap()

    public init(inventory: String, directory: Directory? = nil) {
        self.inventory = inventory
        self.directory = directory
    }

    /// Reads the inventory, keeping the columns a program reads through `$(device.<Column>)`
    /// (`extraColumns`, an error when missing; nil keeps every column), those assignments match
    /// on (`matchColumns`, kept where present), and those of the device variables read
    /// (`deviceVariables`; nil: every mapped one).
    /// `keepingRecords`: the file's records kept with the table, for an image (`InventoryImage`);
    /// `image`: one of another version of the file, whose records need not be parsed again.
    public func loadInventory(extraColumns: [String]?, matchColumns: [String] = [], deviceVariables: Set<DeviceVariable>? = nil,
                              keepingRecords: Bool = false, image: String? = nil) throws(Problem) -> InventoryTable {
        var options = inventoryOptions
        options.keepRecords = keepingRecords
        options.extraColumns = extraColumns
        options.matchColumns = matchColumns
        options.deviceVariables = deviceVariables
        // Without a directory, the inventory's own user columns are the users (`Email Address`...).
        if directory == nil { options.userVariablesFromColumns = true }
        return try InventoryTable.load(inventory, options: options, previous: image)
    }

    /// Connects to an LDAP directory and binds, then lets go: run before the inventory is read,
    /// so that a wrong password or an unreachable server is found at once. Nothing for LDIF.
    public func checkDirectory(warning: (Problem) -> Void = { _ in }) throws(Problem) {
        if case .ldap(let configuration) = directory { try LDAPDirectory.check(configuration, warning: warning) }
    }

    /// Reads the directory, nil without one. An LDAP directory may look up only the users the
    /// inventory names (targeted mode): their keys come from the inventory's user key column.
    /// `warning` hears each LDAP attempt that failed and will be retried, and a password sent in clear.
    /// `keepingSegments`: an LDIF file's segments are kept with its table (`LDIFReader.load`).
    public func loadDirectory(for inventory: InventoryTable, keepingSegments: Bool = false, warning: (Problem) -> Void = { _ in }) throws(Problem) -> UserTable? {
        switch directory {
        case nil:
            return nil
        case .ldif(let path):
            return try LDIFReader.load(path, map: attributes, keepingSegments: keepingSegments)
        case .ldap(let configuration):
            return try LDAPDirectory.load(configuration, map: attributes, referencedKeys: {
                guard let slot = inventory.userKeySlot else { return [] }
                return (0..<inventory.rowCount).map { inventory.string(row: $0, slot: slot) }
            }, warning: warning)
        }
    }
}
