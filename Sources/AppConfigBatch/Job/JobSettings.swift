import AppConfigCompiler
import AppConfigCore
import AppConfigRender
import AppConfigSources

/// A render job as a job file or a command line says it: every setting optional (what was said),
/// in groups, each spelled as `render`'s long option (`"changed-only": true`). Flat in JSON, as
/// the job files written so far are. `RenderJob(settings:)` fills in the defaults and checks the
/// whole; `overlaid(by:)` lays a command line over a job file.
public struct JobSettings: Codable, Sendable, Equatable {
    /// The spec, the admin values, how they compile.
    public struct Inputs: Codable, Sendable, Equatable {
        public var spec: String?
        public var values: String?
        public var lenient: Bool?
        public var missing: MissingValuePolicy?
        /// `KEY=fail|omit|empty`.
        public var keyMissing: Entries?
        enum CodingKeys: String, CodingKey, CaseIterable {
            case spec, values, lenient, missing, keyMissing = "key-missing"
        }
        public init() {}
    }

    /// The inventory and the directory, and how they join.
    public struct Sources: Codable, Sendable, Equatable {
        public var inventory: String?
        /// An LDIF file, or an `ldap://` / `ldaps://` URL (see `LDAP`).
        public var directory: String?
        /// A character, `tab` or `auto`.
        public var delimiter: String?
        public var deviceKey: String?
        public var userKey: String?
        public var userAttribute: String?
        /// `VARIABLE=Column`.
        public var map: Entries?
        /// `VARIABLE=attribute`.
        public var attribute: Entries?
        public var strict: Bool?
        public var strictInventory: Bool?
        /// Render although every value of a column read is suspect (a shifted export).
        public var allowSuspect: Bool?
        public var inventoryPreset: String?
        enum CodingKeys: String, CodingKey, CaseIterable {
            case inventory, directory, delimiter, deviceKey = "device-key", userKey = "user-key", userAttribute = "user-attribute",
                 map, attribute, strict, strictInventory = "strict-inventory", allowSuspect = "allow-suspect", inventoryPreset = "inventory-preset"
        }
        public init() {}
    }

    /// An LDAP directory: where to search and how to connect. The password is named (an environment
    /// variable, a file), never given.
    public struct LDAP: Codable, Sendable, Equatable {
        public var base: String?
        public var bindDN: String?
        public var passwordEnv: String?
        public var passwordFile: String?
        public var filter: String?
        public var scope: LDAPConfiguration.Scope?
        public var pageSize: Int?
        public var startTLS: Bool?
        public var caFile: String?
        public var insecure: Bool?
        public var timeout: Double?
        public var deadline: Double?
        public var retries: Int?
        public var targeted: LDAPConfiguration.Targeting?
        enum CodingKeys: String, CodingKey, CaseIterable {
            case base = "ldap-base", bindDN = "ldap-bind-dn", passwordEnv = "ldap-password-env", passwordFile = "ldap-password-file",
                 filter = "ldap-filter", scope = "ldap-scope", pageSize = "ldap-page-size", startTLS = "ldap-starttls",
                 caFile = "ldap-ca-file", insecure = "ldap-insecure", timeout = "ldap-timeout", deadline = "ldap-deadline",
                 retries = "ldap-retries", targeted = "ldap-targeted"
        }
        public init() {}
    }

    /// How the devices are rendered: format, threads, shard, checks.
    public struct Rendering: Codable, Sendable, Equatable {
        public var format: OutputFormat?
        public var jobs: Int?
        /// `I/N`.
        public var shard: String?
        /// The shard count, for an index a scheduler gives in the environment.
        public var shardCount: Int?
        public var shardBase: Int?
        public var verify: Bool?
        public var allowUnjoined: Bool?
        enum CodingKeys: String, CodingKey, CaseIterable {
            case format, jobs, shard, shardCount = "shard-count", shardBase = "shard-base", verify, allowUnjoined = "allow-unjoined"
        }
        public init() {}
    }

    /// Where the output goes: a folder, a tar (`-`: standard output), or nowhere.
    public struct Destination: Codable, Sendable, Equatable {
        public var out: String?
        public var tar: String?
        public var dryRun: Bool?
        public var keep: Int?
        enum CodingKeys: String, CodingKey, CaseIterable {
            case out, tar, dryRun = "dry-run", keep
        }
        public init() {}
    }

    /// How the configuration reaches the device, and the secrets its credentials name.
    public struct DeliverySettings: Codable, Sendable, Equatable {
        public var delivery: Delivery?
        public var assetBaseURL: String?
        public var secretAssetBaseURL: String?
        public var bundleID: String?
        public var appStoreID: String?
        public var manifestURL: String?
        public var appConfigKey: AppConfigKey?
        public var install: AppInstall?
        public var license: LicenseAssignment?
        public var includeInBackup: Bool?
        public var ddmLayout: DDMLayout?
        /// `COMPOSED-ID=VALUES`.
        public var extensions: Entries?
        /// `COMPOSED-ID=SPEC`.
        public var extensionSpecs: Entries?
        public var commandNonce: String?
        /// `NAME=env:VAR`, `NAME=file:PATH`, `NAME=exec:COMMAND`.
        public var secrets: Entries?
        /// How long an `exec:` secret may run, in seconds.
        public var secretTimeout: Double?
        /// The key secret documents are named by (`env:`, `file:`, `exec:`).
        public var secretAssetKey: String?
        /// Secret documents' declarations carry `Hash-SHA-256`.
        public var secretAssetHash: Bool?
        /// DDM: every set carries the status subscription to `app.managed.list` (default true).
        public var statusSubscription: Bool?
        /// `InstallApplication`'s `ManagementFlags`.
        public var managementFlags: Int?
        /// `InstallApplication`'s `Options`, `NAME=VALUE`.
        public var installOptions: Entries?
        enum CodingKeys: String, CodingKey, CaseIterable {
            case delivery, assetBaseURL = "asset-base-url", secretAssetBaseURL = "secret-asset-base-url", bundleID = "bundle-id",
                 appStoreID = "app-store-id", manifestURL = "manifest-url", appConfigKey = "app-config-key", install, license,
                 includeInBackup = "include-in-backup", ddmLayout = "ddm-layout", extensions = "extension",
                 extensionSpecs = "extension-spec", commandNonce = "command-nonce", secrets = "secret",
                 secretTimeout = "secret-timeout", secretAssetKey = "secret-asset-key", secretAssetHash = "secret-asset-hash",
                 statusSubscription = "status-subscription",
                 managementFlags = "management-flags", installOptions = "install-option"
        }
        public init() {}
    }

    /// What the night compares with and what it writes of the change.
    public struct Nightly: Codable, Sendable, Equatable {
        public var since: String?
        public var changedOnly: Bool?
        public var rerender: Bool?
        public var removeMissing: Bool?
        enum CodingKeys: String, CodingKey, CaseIterable {
            case since, changedOnly = "changed-only", rerender, removeMissing = "remove-missing"
        }
        public init() {}
    }

    /// What holds a bad night back.
    public struct Guards: Codable, Sendable, Equatable {
        public var maxFailures: Int?
        public var maxFailureRatio: Double?
        public var maxChangeRatio: Double?
        public var maxRemovalRatio: Double?
        public var force: Bool?
        enum CodingKeys: String, CodingKey, CaseIterable {
            case maxFailures = "max-failures", maxFailureRatio = "max-failure-ratio", maxChangeRatio = "max-change-ratio",
                 maxRemovalRatio = "max-removal-ratio", force
        }
        public init() {}
    }

    /// The account of the run.
    public struct Report: Codable, Sendable, Equatable {
        public var report: String?
        public var redact: Bool?
        enum CodingKeys: String, CodingKey, CaseIterable {
            case report, redact
        }
        public init() {}
    }

    /// What the program running the job does with it: the library's `run` reads none of these.
    public struct Console: Codable, Sendable, Equatable {
        /// No progress display.
        public var quiet: Bool?
        /// The exit status of a published run with failed devices (0 or 3).
        public var partialExit: Int?
        /// Show one device instead of running the job.
        public var explain: String?
        /// The night's plan (a dry run): counts, removals, each change grouped by cause.
        public var plan: Bool?
        enum CodingKeys: String, CodingKey, CaseIterable {
            case quiet, partialExit = "partial-exit", explain, plan
        }
        public init() {}
    }

    public var inputs = Inputs()
    public var sources = Sources()
    public var ldap = LDAP()
    public var rendering = Rendering()
    public var destination = Destination()
    public var delivery = DeliverySettings()
    public var nightly = Nightly()
    public var guards = Guards()
    public var report = Report()
    public var console = Console()

    public init() {}

    /// Every group reads its own keys of the one flat object.
    public init(from decoder: any Decoder) throws {
        inputs = try Inputs(from: decoder)
        sources = try Sources(from: decoder)
        ldap = try LDAP(from: decoder)
        rendering = try Rendering(from: decoder)
        destination = try Destination(from: decoder)
        delivery = try DeliverySettings(from: decoder)
        nightly = try Nightly(from: decoder)
        guards = try Guards(from: decoder)
        report = try Report(from: decoder)
        console = try Console(from: decoder)
    }

    /// Every group writes its keys into the one flat object.
    public func encode(to encoder: any Encoder) throws {
        try inputs.encode(to: encoder)
        try sources.encode(to: encoder)
        try ldap.encode(to: encoder)
        try rendering.encode(to: encoder)
        try destination.encode(to: encoder)
        try delivery.encode(to: encoder)
        try nightly.encode(to: encoder)
        try guards.encode(to: encoder)
        try report.encode(to: encoder)
        try console.encode(to: encoder)
    }

    /// Every key a job file may hold: `render`'s long options.
    public static let keys: [String] = [
        Inputs.CodingKeys.allCases.map(\.rawValue), Sources.CodingKeys.allCases.map(\.rawValue), LDAP.CodingKeys.allCases.map(\.rawValue),
        Rendering.CodingKeys.allCases.map(\.rawValue), Destination.CodingKeys.allCases.map(\.rawValue),
        DeliverySettings.CodingKeys.allCases.map(\.rawValue), Nightly.CodingKeys.allCases.map(\.rawValue),
        Guards.CodingKeys.allCases.map(\.rawValue), Report.CodingKeys.allCases.map(\.rawValue), Console.CodingKeys.allCases.map(\.rawValue),
    ].flatMap { $0 }
}

/// A repeatable setting's entries, each `NAME=VALUE` as the command line spells it. A job file
/// gives them as an object (`"map": {"serialNumber": "Asset Tag"}`), an array of such strings, or
/// one string.
public struct Entries: Codable, Sendable, Equatable, ExpressibleByArrayLiteral {
    public var items: [String]

    public init(_ items: [String]) { self.items = items }

    /// A command line's repeated option: nil when it was not given (a job file's entries stand).
    public init?(given items: [String]) {
        guard !items.isEmpty else { return nil }
        self.items = items
    }
    public init(arrayLiteral items: String...) { self.items = items }

    public init(from decoder: any Decoder) throws {
        if let one = try? decoder.singleValueContainer().decode(String.self) {
            items = [one]
        } else if let list = try? decoder.singleValueContainer().decode([String].self) {
            items = list
        } else {
            let object = try decoder.container(keyedBy: NameKey.self)
            items = try object.allKeys.map { "\($0.stringValue)=\(try object.decode(String.self, forKey: $0))" }
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(items)
    }
}

/// Any key: an object's own names (`Entries`).
struct NameKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}
