import AppConfigBatch
import AppConfigCore
import AppConfigSources
import ArgumentParser
import Foundation

/// Where devices and users come from, and how they join: shared by `sources` and `render`. Each
/// option is what the command line said (nil: not given), so that a job file's stands under it;
/// the library fills in the defaults (`JobSettings.Sources`).
struct SourceOptions: ParsableArguments {
    @Option(help: "The device inventory (CSV with a header row).")
    var inventory: String?

    @Option(help: "The user directory: an LDIF file, or ldap:// / ldaps:// URL (see the LDAP options).")
    var directory: String?

    @Option(help: "The CSV delimiter: a character, 'tab', or 'auto' (default: the one of ',', ';' and tab the header holds most of).")
    var delimiter: String?

    @Option(name: .customLong("device-key"), help: "The column naming a device (default: UDID, else Serial Number).")
    var deviceKey: String?

    @Option(name: .customLong("user-key"), help: "The column joining a device to its user (default: Email Address, OwnerEmail, Primary user email address or UPN, else Username).")
    var userKey: String?

    @Option(name: .customLong("user-attribute"), help: "The directory attribute the user key is matched against, case-insensitively (default: mail; e.g. userPrincipalName, sAMAccountName, uid).")
    var userAttribute: String?

    @Option(name: .customLong("map"), help: "A variable's column, VARIABLE=Column (e.g. serialNumber=Asset Tag, emailAddress=OwnerEmail); repeatable. A user variable mapped here is read from the inventory.")
    var columnMap: [String] = []

    @Option(name: .customLong("attribute"), help: "A user variable's directory attribute, VARIABLE=attribute (e.g. emailAddress=proxyAddresses); repeatable.")
    var attributeMap: [String] = []

    @Flag(inversion: .prefixedNo, help: "Fail on the first bad row or entry instead of reporting and skipping it.")
    var strict: Bool?

    @Flag(inversion: .prefixedNo, help: "Refuse an export whose columns do not look like what they are mapped to (serial numbers shaped like IP addresses, addresses without @, most rows wider or narrower than the header, most device keys repeated) instead of warning.")
    var strictInventory: Bool?

    @Flag(name: .customLong("allow-suspect"), inversion: .prefixedNo, help: "Render although every value of a column the job reads looks unlike what it is mapped to (by default an error: the export is shifted).")
    var allowSuspect: Bool?

    @Option(name: .customLong("inventory-preset"), help: "Whose export the inventory is, for its user columns: auto (default: found from the header), jamf-pro, jamf-school, intune, workspace-one or generic.")
    var inventoryPreset: String?

    @OptionGroup var ldap: LDAPOptions

    var settings: JobSettings.Sources {
        var s = JobSettings.Sources()
        (s.inventory, s.directory, s.delimiter, s.deviceKey, s.userKey) = (inventory, directory, delimiter, deviceKey, userKey)
        (s.userAttribute, s.strict, s.strictInventory, s.inventoryPreset) = (userAttribute, strict, strictInventory, inventoryPreset)
        (s.map, s.attribute) = (Entries(given: columnMap), Entries(given: attributeMap))
        s.allowSuspect = allowSuspect
        return s
    }

    /// The library's description of these sources (an LDAP password read from its env var or file).
    func fleetSources() throws -> FleetSources {
        guard let inventory else { throw ValidationError("give the inventory: --inventory FILE") }
        let sources = try settingsProblems {
            try settings.fleetSources(inventory: inventory, ldap: ldap.settings, environment: ProcessInfo.processInfo.environment)
        }
        warnIfInsecure(sources)
        return sources
    }
}

/// `--ldap-insecure` is said out loud every time it is used.
func warnIfInsecure(_ sources: FleetSources) {
    if case .ldap(let configuration)? = sources.directory, configuration.insecure {
        writeStandardError("appconfig: warning: --ldap-insecure: the server's certificate is not verified\n")
    }
}
