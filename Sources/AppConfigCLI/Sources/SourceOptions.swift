import AppConfigCore
import AppConfigSources
import ArgumentParser

/// Where devices and users come from, and how they join: shared by `sources` and `render`, and
/// turned into the library's `FleetSources`.
struct SourceOptions: ParsableArguments {
    @Option(help: "The device inventory (CSV with a header row).")
    var inventory: String

    @Option(help: "The user directory: an LDIF file, or ldap:// / ldaps:// URL (see the LDAP options).")
    var directory: String?

    @Option(help: "The CSV delimiter: a character, 'tab', or 'auto' (the one of ',', ';' and tab the header holds most of).")
    var delimiter: String = "auto"

    @Option(name: .customLong("device-key"), help: "The column naming a device (default: UDID, else Serial Number).")
    var deviceKey: String?

    @Option(name: .customLong("user-key"), help: "The column joining a device to its user (default: Email Address, OwnerEmail, Primary user email address or UPN, else Username).")
    var userKey: String?

    @Option(name: .customLong("user-attribute"), help: "The directory attribute the user key is matched against, case-insensitively (e.g. userPrincipalName, mail, sAMAccountName, uid).")
    var userAttribute: String = "mail"

    @Option(name: .customLong("map"), help: "A variable's column, VARIABLE=Column (e.g. serialNumber=Asset Tag, emailAddress=OwnerEmail); repeatable. A user variable mapped here is read from the inventory.")
    var columnMap: [String] = []

    @Option(name: .customLong("attribute"), help: "A user variable's directory attribute, VARIABLE=attribute (e.g. emailAddress=proxyAddresses); repeatable.")
    var attributeMap: [String] = []

    @Flag(inversion: .prefixedNo, help: "Fail on the first bad row or entry instead of reporting and skipping it.")
    var strict = false

    @Flag(inversion: .prefixedNo, help: "Refuse an export whose columns do not look like what they are mapped to (serial numbers shaped like IP addresses, addresses without @, most rows wider or narrower than the header, most device keys repeated) instead of warning.")
    var strictInventory = false

    @Option(name: .customLong("inventory-preset"), help: "Whose export the inventory is, for its user columns: auto (found from the header), jamf-pro, jamf-school, intune, workspace-one or generic.")
    var inventoryPreset = "auto"

    @OptionGroup var ldap: LDAPOptions

    /// The library's description of these sources (an LDAP password read from its env var or file).
    func fleetSources() throws -> FleetSources {
        var s = FleetSources(inventory: inventory)
        s.inventoryOptions = try inventoryOptions()
        s.attributes = try attributes()
        if let directory {
            if FleetSources.Directory.isServerURL(directory) {
                let configuration = try ldap.configuration(url: directory)
                if configuration.insecure { writeStandardError("appconfig: warning: --ldap-insecure: the server's certificate is not verified\n") }
                s.directory = .ldap(configuration)
            } else {
                s.directory = .ldif(directory)
            }
        }
        return s
    }

    func inventoryOptions() throws -> InventoryOptions {
        var o = InventoryOptions()
        switch delimiter {
        case "auto": o.delimiter = nil
        case "tab", "\\t", "\t": o.delimiter = 0x09
        default:
            guard delimiter.utf8.count == 1, let d = delimiter.utf8.first, d != UInt8(ascii: "\""), d != 0x0A, d != 0x0D else {
                throw ValidationError("--delimiter takes one ASCII character other than a quote or a line break, or 'tab'")
            }
            o.delimiter = d
        }
        o.deviceKeyColumn = deviceKey
        o.userKeyColumn = userKey
        o.strict = strict
        o.strictInventory = strictInventory
        if inventoryPreset != "auto" {
            guard let preset = InventoryPreset.named(inventoryPreset) else {
                throw ValidationError("--inventory-preset takes auto, " + InventoryPreset.all.map(\.id).joined(separator: ", ") + ", not \"\(inventoryPreset)\"")
            }
            o.preset = preset
        }
        for entry in columnMap {
            let (name, column) = try Self.pair(entry, "--map")
            switch Variable.named(name)?.variable {
            case .device(let v)?: o.columnMap[v] = column
            case .user(let v)?: o.userColumnMap[v] = column
            default: throw ValidationError("--map: \"\(name)\" is not a user or device variable")
            }
        }
        return o
    }

    func attributes() throws -> AttributeMap {
        var map = AttributeMap()
        map.joinAttribute = userAttribute
        for entry in attributeMap {
            let (name, attribute) = try Self.pair(entry, "--attribute")
            guard case .user(let v)? = Variable.named(name)?.variable else { throw ValidationError("--attribute: \"\(name)\" is not a user variable") }
            map.set(v, to: attribute)
        }
        return map
    }

    static func pair(_ entry: String, _ option: String) throws -> (String, String) {
        guard let eq = entry.firstIndex(of: "="), eq != entry.startIndex else { throw ValidationError("\(option) takes NAME=VALUE, not \"\(entry)\"") }
        return (String(entry[..<eq]), String(entry[entry.index(after: eq)...]))
    }
}
