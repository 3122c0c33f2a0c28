import AppConfigCore
import AppConfigSources

/// What a push is asked to do: the settings `appconfig push` takes, for an embedder too.
public struct PushOptions: Sendable {
    /// What `render` published: an `--out` folder (its symlink, or a generation) or a tar.
    public var source: String
    public var server: ServerKind
    /// The server's base URL (https://, or http:// on loopback).
    public var url: String
    /// The API key: the Basic password. Never printed, never in a report.
    public var apiKey: String
    /// The journal's path (default: `SOURCE.push-journal`, beside the output).
    public var journal: String?
    /// A device's enrollment ID when it is not its device key (device key -> enrollment ID).
    public var enrollmentIDs: [String: String]?
    /// A staged rollout's stage: only these devices are sent (the others wait for a later stage),
    /// and nothing is collected (a waiting device's set still names its old declarations).
    public var devices: Set<String>?
    /// Concurrent requests (devices in flight): the connection pool's size too.
    public var jobs = 16
    /// Print the plan, send nothing.
    public var dryRun = false
    /// GET each new asset's DataURL and compare its size and SHA-256 before its device goes.
    public var verifyAssets = false
    /// PEM certificates to trust for https (default: the system's).
    public var caFile: String?
    /// Removals allowed without `force`, as a share of the devices the journal holds.
    public var maxRemovalRatio = 0.01
    public var force = false
    /// Attempts after the first for a request that may succeed later.
    public var retries = 6
    /// Seconds a request may take.
    public var timeout = 30.0
    /// Ids per notify call: KMFDDM's notifier sends later chunks of 30 empty (docs/push.md).
    public var notifyChunk = 30
    /// Ids per NanoMDM push call.
    public var pushChunk = 100
    /// The first retry's delay in seconds (it doubles): tests make it short.
    public var firstRetryDelay = 0.2

    public init(source: String, server: ServerKind, url: String, apiKey: String) {
        self.source = source
        self.server = server
        self.url = url
        self.apiKey = apiKey
    }

    /// The device's enrollment ID: its key, or what `enrollmentIDs` gives (a device it lacks fails).
    func enrollment(for key: String) throws(PushFailure) -> String {
        guard let ids = enrollmentIDs else { return key }
        guard let id = ids[key] else {
            throw PushFailure(problem: Problem(PushCode.source, at: Location(), "device \(key): the inventory gives it no enrollment ID"), fatal: false)
        }
        return id
    }

    /// The journal's path.
    public var journalPath: String {
        if let journal { return journal }
        var s = source
        while s.count > 1 && s.hasSuffix("/") { s.removeLast() }
        return s + ".push-journal"
    }
}


extension PushOptions {
    /// The enrollment ID of each device when it is not the device key: the column `variable` maps
    /// to in the inventory the output was rendered from (`--enrollment-id udid` for a fleet keyed
    /// by serial number). A device without a value fails when it is pushed.
    public static func enrollmentIDs(inventory: String, variable: String, deviceKeyColumn: String?, columnMap: [String: String] = [:]) throws(Problem) -> [String: String] {
        guard let v = DeviceVariable(rawValue: variable) else {
            throw Problem(PushCode.usage, at: Location(), "--enrollment-id \(variable): not a device variable (one of \(DeviceVariable.allCases.map(\.rawValue).joined(separator: ", ")))")
        }
        var options = InventoryOptions()
        options.deviceKeyColumn = deviceKeyColumn
        for (name, column) in columnMap {
            if let mapped = DeviceVariable(rawValue: name) { options.columnMap[mapped] = column }
        }
        options.deviceVariables = [v]
        options.extraColumns = []
        let table = try InventoryTable.load(inventory, options: options)
        guard let slot = table.variableSlots[v] else {
            throw Problem(PushCode.usage, at: Location(file: inventory), "\(inventory) has no column for \(variable) (give --map \(variable)=COLUMN)")
        }
        var ids: [String: String] = [:]
        for row in 0..<table.rowCount {
            let value = table.string(row: row, slot: slot)
            if !value.isEmpty { ids[table.deviceKey(row)] = value }
        }
        return ids
    }
}
