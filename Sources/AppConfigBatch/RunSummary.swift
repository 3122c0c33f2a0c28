import AppConfigCore
import Foundation

/// What a render job did: counts, time per phase, whether the output was published, and every
/// problem. `summary.json` is its JSON (the failures and problems go to `errors.jsonl`).
public struct RunSummary: Sendable, Codable {
    public var spec: String
    public var bundleId: String
    public var version: Int
    public var programHash: String
    public var format: String
    /// `I/N`.
    public var shard: String
    public var devices = Devices()
    /// Where the job's variables were read from (`SourceMapping.line(for:)`): the keys, and each
    /// variable the job reads with its column or attribute.
    public var mapping: String?
    /// Problems by code, device failures and source problems alike.
    public var errorsByCode: [String: Int] = [:]
    /// Seconds per phase: compile, since (the lock, the report folder), inventory, directory, join,
    /// render, publish. The previous manifest is read beside the inventory and the directory: what
    /// is left of it when they are read counts in join.
    public var seconds: [Phase: Double] = [:]
    /// The job's time from its start to the end of publishing: the phases add up to it (writing
    /// the report comes after; the summary the job returns has it as `report`).
    public var wallSeconds = 0.0
    public var devicesPerSecond = 0
    public var published = false
    public var interrupted = false
    public var dryRun = false
    /// Where the output was published.
    public var output: String?
    /// Why nothing was published, when the run was not interrupted and it could have been.
    public var notPublished: String?
    /// The error that ended the run before it could publish (an input that cannot be read, a spec
    /// that does not compile, a refused join): `summary.json` is rewritten on every exit, so that
    /// last night's `"published": true` is never left standing after a fatal night.
    public var error: RunError?

    public struct RunError: Sendable, Codable, Equatable {
        public var code: String
        public var message: String
    }
    /// `--changed-only` found nothing added, changed or removed: nothing new was published (the
    /// previous generation stays current); not a failure.
    public var nothingChanged = false
    /// The previous generation's manifest has this run's program, options and input fingerprints:
    /// nothing was read past them, rendered or published (`nothingChanged` too).
    public var inputsUnchanged = false
    /// The previous generation compared with, and what changed since it.
    public var since: String?
    /// The saved user table the directory was loaded from instead of parsing its LDIF file (the
    /// file's fingerprint and reading were the image's: `UserTableImage`); nil when it was read.
    public var directoryImage: String?
    /// The saved user table of another version of the LDIF file, read the same way, from which
    /// the users were taken, only the file's segments with new bytes read (`IncrementalDirectory`).
    public var directoryIncremental: DirectoryIncremental?

    public struct DirectoryIncremental: Codable, Sendable, Equatable {
        /// The image, the file's segments read tonight (of `segments`), and the users they held.
        public var image: String
        public var segments: Int
        public var segmentsRead: Int
        public var usersRead: Int
    }
    /// The saved inventory table of another version of the inventory file, read the same way, from
    /// which the rows were taken, only its records with new bytes parsed (`IncrementalInventory`).
    public var inventoryIncremental: InventoryIncremental?

    public struct InventoryIncremental: Codable, Sendable, Equatable {
        /// The image, the file's records parsed tonight (of `records`), and the rows they held.
        public var image: String
        public var records: Int
        public var recordsRead: Int
        public var rowsRead: Int
    }
    public var changes: ChangeCounts?
    /// DDM into a folder: live assets (named by a set the devices keep) this generation could not
    /// link from the previous one (it is a tar, or lacks them); `assets.live` lists every live asset.
    public var assetsNotLinked = 0
    /// A whole generation into a folder: devices kept from the previous generation (failed or
    /// missing tonight) whose files could not be linked from it (it is a tar, or was
    /// `--changed-only`): their files are not in this generation although its manifest keeps them.
    public var keptNotLinked = 0
    /// Every device that did not render, in row order.
    public var failures: [DeviceFailure] = []
    /// Every row, entry or join problem of the sources.
    public var problems: [Problem] = []
    /// Per inventory row named by a failure or a problem: the device's serial number and user key
    /// where the inventory has them, for `errors.jsonl`.
    public var identities: [Int: DeviceIdentity] = [:]

    public struct DeviceIdentity: Sendable, Equatable {
        public var serialNumber: String?
        public var userKey: String?
        /// The assignments that applied to the device, when the values file has assignments.
        public var assignments: [String]?
    }
    /// With assignments: devices of the shard per assignment name (every name, 0 included), and
    /// how many distinct sets of assignments (program variants) the devices make, the set of none counted.
    public var assignments: [String: Int]?
    /// `--plan`: the night's plan as a person reads it (not in summary.json: diff.jsonl holds it).
    public var plan: String?
    public var variants: Int?

    public struct Devices: Sendable, Codable {
        /// Every data row of the inventory, whether it became a device or not.
        public var inventoryRows = 0
        /// Rows that name no device but continue the one above (Jamf Pro's per-app, per-group rows).
        public var continuationRows = 0
        /// Devices the inventory holds (rows kept).
        public var inventoryDevices = 0
        public var inShard = 0
        public var rendered = 0
        public var failed = 0
        /// Rows skipped as bad (not counting warnings such as a duplicate column name).
        public var skipped = 0
        /// Devices whose user key names no user of the directory.
        public var usersNotFound = 0
        /// Devices with no user at all (their user key empty: shared devices), no user looked up.
        public var devicesWithoutUser = 0
        /// Left out by the values file's `exclude` (in this shard's rows or not): not rendered, not failed.
        public var excluded = 0
        /// Of `rendered`, those whose inputs' digest was the previous manifest's (`--changed-only`):
        /// their output is unchanged, taken from it without rendering.
        public var carried = 0
    }

    enum CodingKeys: String, CodingKey {
        case spec, bundleId, version, programHash, format, shard, devices, mapping, errorsByCode, seconds, wallSeconds, devicesPerSecond
        case published, interrupted, dryRun, output, notPublished, error, nothingChanged, inputsUnchanged, since, directoryImage, directoryIncremental, inventoryIncremental, changes, assignments, variants, assetsNotLinked, keptNotLinked
    }

    /// The exit status scripts read: 130 interrupted, 1 not published for too many failures, 3
    /// published with failures or skipped rows, else 0.
    public var exitStatus: Int32 {
        if interrupted { return ExitStatus.interrupted }
        if notPublished != nil { return ExitStatus.failed }
        return devices.failed > 0 || devices.skipped > 0 ? ExitStatus.partial : ExitStatus.ok
    }

    /// `summary.json`'s text: sorted keys, indented.
    public func json() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: (try? encoder.encode(self)) ?? Data("{}".utf8), as: UTF8.self) + "\n"
    }
}
