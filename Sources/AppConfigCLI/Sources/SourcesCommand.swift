import AppConfigBytes
import AppConfigSources
import AppConfigSpec
import ArgumentParser

/// Where devices and users come from, and how they join: shared by `sources` and `render`.
struct SourceOptions: ParsableArguments {
    @Option(help: "The device inventory (CSV with a header row).")
    var inventory: String

    @Option(help: "The user directory: an LDIF file, or ldap:// / ldaps:// URL (see the LDAP options).")
    var directory: String?

    @Option(help: "The CSV delimiter: a character, or 'tab'.")
    var delimiter: String = ","

    @Option(name: .customLong("device-key"), help: "The column naming a device (default: UDID, else Serial Number).")
    var deviceKey: String?

    @Option(name: .customLong("user-key"), help: "The column joining a device to its user (default: Email Address, else Username).")
    var userKey: String?

    @Option(name: .customLong("user-attribute"), help: "The directory attribute the user key is matched against, case-insensitively (e.g. userPrincipalName, mail, sAMAccountName, uid).")
    var userAttribute: String = "mail"

    @Option(name: .customLong("map"), help: "A device variable's column, VARIABLE=Column (e.g. serialNumber=Asset Tag); repeatable.")
    var columnMap: [String] = []

    @Option(name: .customLong("attribute"), help: "A user variable's directory attribute, VARIABLE=attribute (e.g. emailAddress=proxyAddresses); repeatable.")
    var attributeMap: [String] = []

    @Flag(help: "Fail on the first bad row or entry instead of reporting and skipping it.")
    var strict = false

    @OptionGroup var ldap: LDAPOptions

    func inventoryOptions(extraColumns: [String]?) throws -> InventoryOptions {
        var o = InventoryOptions()
        switch delimiter {
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
        o.extraColumns = extraColumns
        for entry in columnMap {
            let (name, column) = try Self.pair(entry, "--map")
            guard case .device(let v)? = Variable.named(name)?.variable else { throw ValidationError("--map: \"\(name)\" is not a device variable") }
            o.columnMap[v] = column
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

    /// Loads the directory: LDIF by default, LDAP for an ldap:// or ldaps:// URL.
    func loadDirectory(referencedKeys: () -> [String]) throws -> UserTable? {
        guard let directory else { return nil }
        let map = try attributes()
        if directory.hasPrefix("ldap://") || directory.hasPrefix("ldaps://") || directory.hasPrefix("ldapi://") {
            return try ldap.load(url: directory, map: map, referencedKeys: referencedKeys)
        }
        return try LDIFReader.load(directory, map: map)
    }
}

/// `appconfig sources`: load, join and account for every device and user, without rendering.
struct SourcesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sources",
        abstract: "Load the inventory and the directory, join them, and report counts, problems and throughput.",
        discussion: """
            Exit status: 0 when every row and entry loaded and every device found its user, 3 when some
            were reported (bad rows, missing users), 1 for a fatal error (with --strict: the first bad
            row), 2 for usage or I/O.
            """
    )

    @OptionGroup var sources: SourceOptions

    @Option(help: "How many problems to list (all are counted).")
    var showProblems = 20

    func run() throws {
        do {
            var clock = monotonicSeconds()
            func lap() -> Double { let now = monotonicSeconds(); defer { clock = now }; return now - clock }
            let inventory = try InventoryTable.load(sources.inventory, options: try sources.inventoryOptions(extraColumns: []))
            let inventorySeconds = lap()
            print("inventory \(inventory.file): \(inventory.rowCount) devices, \(inventory.problems.count) problems, "
                  + "\(inventory.byteCount) bytes in \(ms(inventorySeconds)) (\(String(format1: Double(inventory.byteCount) / inventorySeconds / 1e6)) MB/s)")
            var problems = inventory.problems
            let users = try sources.loadDirectory {
                guard let slot = inventory.userKeySlot else { return [] }
                return (0..<inventory.rowCount).map { inventory.string(row: $0, slot: slot) }
            }
            if let users {
                let seconds = lap()
                print("directory \(users.source): \(users.count) users, \(users.problems.count) problems, in \(ms(seconds)) "
                      + "(\(formatRate(Double(users.count) / seconds))entries/s)")
                problems += users.problems
                let fleet = Fleet(inventory: inventory, users: users)
                print("join: \(fleet.matchedCount) of \(fleet.deviceCount) devices found their user, \(fleet.problems.count) did not, in \(ms(lap()))")
                problems += fleet.problems
            }
            for p in problems.prefix(showProblems) { print("  \(p)") }
            if problems.count > showProblems { print("  ... and \(problems.count - showProblems) more") }
            if !problems.isEmpty { throw ExitCode(3) }
        } catch let error as SourceError {
            writeStandardError("appconfig: \(error)\n")
            throw ExitCode(AppConfigCommand.Status.failed)
        }
    }

    func ms(_ seconds: Double) -> String { String(format1: seconds * 1000) + " ms" }
}
