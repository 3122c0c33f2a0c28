import AppConfigBatch
import AppConfigCore
import AppConfigSources
import ArgumentParser

/// `appconfig sources`: load, join and account for every device and user, without rendering.
struct SourcesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sources",
        abstract: "Load the inventory and the directory, join them, and report counts, problems and throughput.",
        // `--inventory` is optional in the shared group (render's may come from a job file); here it is required.
        usage: "appconfig sources [<options>] --inventory <inventory>",
        discussion: """
            Exit status: 0 when every row and entry loaded and every device found its user, 3 when some \
            were reported (bad rows, missing users), 1 for a fatal error (with --strict: the first bad \
            row), 2 for usage or I/O.
            """
    )

    @OptionGroup var sources: SourceOptions

    @Option(help: "How many problems to list (all are counted).")
    var showProblems = 20

    func run() throws {
        let fleetSources = try sources.fleetSources()
        try reportingProblems {
            var clock = monotonicSeconds()
            func lap() -> Double { let now = monotonicSeconds(); defer { clock = now }; return now - clock }
            try fleetSources.checkDirectory(warning: { writeStandardError($0.description + "\n") })
            let inventory = try fleetSources.loadInventory(extraColumns: [])
            let inventorySeconds = lap()
            let continuation = inventory.continuationRows > 0 ? ", \(inventory.continuationRows) continuing the device above" : ""
            let delimiter = InventoryTable.name(of: inventory.delimiter) + (inventory.delimiterDetected ? " (detected)" : "")
            writeStandardOutput("inventory \(inventory.file): \(inventory.rowCount) devices in \(inventory.dataRows) rows\(continuation), delimiter \(delimiter), "
                  + "\(inventory.problems.count) problems, "
                  + "\(inventory.byteCount) bytes in \(ms(inventorySeconds)) (\(String(format1: Double(inventory.byteCount) / inventorySeconds / 1e6)) MB/s)")
            var problems = inventory.exportChecks + inventory.problems
            let users = try fleetSources.loadDirectory(for: inventory, warning: { writeStandardError($0.description + "\n") })
            let mapping = SourceMapping(fleet: Fleet(inventory: inventory, users: users), attributes: fleetSources.attributes)
            if users == nil { mapping.lines.forEach { writeStandardOutput($0) } }
            if let users {
                let seconds = lap()
                writeStandardOutput("directory \(users.source): \(users.count) users, \(users.problems.count) problems, in \(ms(seconds)) "
                      + "(\(formatRate(Double(users.count) / seconds))entries/s)")
                problems += users.problems
                mapping.lines.forEach { writeStandardOutput($0) }
                let fleet = Fleet(inventory: inventory, users: users)
                writeStandardOutput("join: \(fleet.matchedCount) of \(fleet.deviceCount) devices found their user, \(fleet.problems.count) did not, in \(ms(lap()))")
                if let diagnosis = fleet.joinDiagnosis() { writeStandardOutput("  \(diagnosis)") }
                problems += fleet.problems
            }
            for p in problems.prefix(showProblems) { writeStandardOutput("  \(p)") }
            if problems.count > showProblems { writeStandardOutput("  ... and \(problems.count - showProblems) more") }
            if !problems.isEmpty { throw ExitCode(ExitStatus.partial) }
        }
    }

    func ms(_ seconds: Double) -> String { String(format1: seconds * 1000) + " ms" }
}
