import AppConfigCompiler
import AppConfigCore
import AppConfigOutput
import AppConfigRender
import AppConfigSources
import AppConfigSpec
import Foundation

extension RenderJob {
    /// The job the settings describe, with the defaults for what they leave out: what `render`
    /// runs, and what an embedder gets from a job file (`RenderJob(settings: try
    /// JobSettings(jobFile: path))`). `environment` holds the LDAP password variable and a
    /// scheduler's shard index. A setting that cannot be taken is a `job.setting` problem (a
    /// usage error) naming its option.
    public init(settings s: JobSettings, environment: [String: String] = ProcessInfo.processInfo.environment) throws(Problem) {
        guard let spec = s.inputs.spec else { throw Problem(.jobSetting, "give the spec: --spec FILE") }
        guard let inventory = s.sources.inventory else { throw Problem(.jobSetting, "give the inventory: --inventory FILE") }
        let d = s.destination, r = s.rendering, g = s.guards
        let dryRun = d.dryRun == true || s.console.explain != nil || s.console.plan == true
        if !dryRun && (d.out == nil) == (d.tar == nil) { throw Problem(.jobSetting, "give one of --out DIR and --tar FILE (or --dry-run, or --explain DEVICE)") }
        if let jobs = r.jobs, jobs < 1 { throw Problem(.jobSetting, "--jobs must be at least 1") }
        if let base = r.shardBase, base != 0 && base != 1 { throw Problem(.jobSetting, "--shard-base is 0 or 1") }
        if let keep = d.keep, keep < 1 { throw Problem(.jobSetting, "--keep must be at least 1") }
        if ![g.maxFailureRatio, g.maxChangeRatio, g.maxRemovalRatio].allSatisfy({ $0.map((0...1).contains) ?? true }) {
            throw Problem(.jobSetting, "--max-failure-ratio, --max-change-ratio and --max-removal-ratio take a share from 0 to 1")
        }
        let delivery = try s.delivery.options()
        guard let format = delivery.delivery.plistFormat(r.format) else { throw Problem(.jobSetting, delivery.delivery.formatRefusal) }

        self.init(spec: spec, sources: try s.sources.fleetSources(inventory: inventory, ldap: s.ldap, environment: environment))
        values = s.inputs.values
        specOptions.lenient = s.inputs.lenient ?? false
        compileOptions = try s.inputs.compileOptions()
        self.delivery = delivery
        batch.format = format
        batch.jobs = r.jobs ?? Parallelism.machine
        batch.verify = r.verify ?? false
        batch.shard = try Self.shard(r, environment: environment)
        output = dryRun ? .dryRun : d.out.map { .directory($0) } ?? (d.tar == "-" ? .tarStdout : .tar(d.tar!))
        keepGenerations = d.keep ?? keepGenerations
        allowUnjoined = r.allowUnjoined ?? false
        nightly.since = s.nightly.since
        // A dry run of a nightly job compares with the job's output, as the real night does.
        if dryRun && nightly.since == nil {
            if let out = d.out { nightly.since = GenerationFolder.published(out) }
            else if let tar = d.tar, tar != "-", FileManager.default.fileExists(atPath: tar) { nightly.since = tar }
        }
        plan = s.console.plan ?? false
        nightly.changedOnly = s.nightly.changedOnly ?? false
        nightly.rerender = s.nightly.rerender ?? false
        nightly.removeMissing = s.nightly.removeMissing ?? false
        nightly.maxFailures = g.maxFailures
        nightly.maxFailureRatio = g.maxFailureRatio ?? nightly.maxFailureRatio
        nightly.maxChangeRatio = g.maxChangeRatio ?? nightly.maxChangeRatio
        nightly.maxRemovalRatio = g.maxRemovalRatio ?? nightly.maxRemovalRatio
        nightly.force = g.force ?? false
        secrets = try (s.delivery.secrets?.items ?? []).map { text throws(Problem) in try SecretSource(parsing: text) }
        if let t = s.delivery.secretTimeout {
            guard t > 0 && t <= 86_400 else { throw Problem(.jobSetting, "--secret-timeout takes seconds above 0 (at most a day), not \(t)") }
            secretTimeout = t
        }
        withheldEnvironment = s.ldap.passwordEnv.map { [$0] } ?? []
        secretAssetKey = try s.delivery.secretAssetKey.map { text throws(Problem) in try SecretSource(parsing: "secret-asset-key=" + text) }
        report = s.report.report
        redact = s.report.redact ?? false
    }

    /// `--shard I/N`, else the scheduler's index in the environment, else the whole fleet.
    static func shard(_ r: JobSettings.Rendering, environment: [String: String]) throws(Problem) -> Shard {
        if let text = r.shard {
            guard let shard = Shard(parsing: text) else { throw Problem(.jobSetting, "--shard takes I/N with 0 <= I < N, not \"\(text)\"") }
            return shard
        }
        return try Shard.fromEnvironment(environment, count: r.shardCount, base: r.shardBase ?? 0) ?? .whole
    }
}

extension JobSettings {
    /// `NAME=VALUE`, split at the first `=` (a variable or a composed identifier has none).
    static func pair(_ entry: String, _ option: String, _ form: String) throws(Problem) -> (String, String) {
        guard let eq = entry.firstIndex(of: "="), eq != entry.startIndex else { throw Problem(.jobSetting, "\(option) takes \(form), not \"\(entry)\"") }
        return (String(entry[..<eq]), String(entry[entry.index(after: eq)...]))
    }
}

extension JobSettings.Inputs {
    /// `--missing` and each `--key-missing KEY=POLICY`.
    public func compileOptions() throws(Problem) -> CompileOptions {
        var policies: [String: MissingValuePolicy] = [:]
        for entry in keyMissing?.items ?? [] {
            guard let eq = entry.lastIndex(of: "="), let policy = MissingValuePolicy(rawValue: String(entry[entry.index(after: eq)...])) else {
                throw Problem(.jobSetting, "--key-missing takes KEY=fail|omit|empty, not \"\(entry)\"")
            }
            policies[String(entry[..<eq])] = policy
        }
        return CompileOptions(missingValuePolicy: missing, keyPolicies: policies)
    }
}

extension JobSettings.Sources {
    /// The library's description of these sources; an LDAP password is read from the variable or
    /// file the LDAP settings name.
    public func fleetSources(inventory: String, ldap: JobSettings.LDAP, environment: [String: String]) throws(Problem) -> FleetSources {
        var s = FleetSources(inventory: inventory)
        s.inventoryOptions = try inventoryOptions()
        s.attributes = try attributes()
        if let directory {
            s.directory = FleetSources.Directory.isServerURL(directory)
                ? .ldap(try ldap.configuration(url: directory, environment: environment)) : .ldif(directory)
        }
        return s
    }

    public func inventoryOptions() throws(Problem) -> InventoryOptions {
        var o = InventoryOptions()
        switch delimiter ?? "auto" {
        case "auto": o.delimiter = nil
        case "tab", "\\t", "\t": o.delimiter = 0x09
        case let text:
            guard text.utf8.count == 1, let d = text.utf8.first, d != UInt8(ascii: "\""), d != 0x0A, d != 0x0D else {
                throw Problem(.jobSetting, "--delimiter takes one ASCII character other than a quote or a line break, or 'tab'")
            }
            o.delimiter = d
        }
        o.deviceKeyColumn = deviceKey
        o.userKeyColumn = userKey
        o.strict = strict ?? false
        o.strictInventory = strictInventory ?? false
        o.allowSuspect = allowSuspect ?? false
        if let inventoryPreset, inventoryPreset != "auto" {
            guard let preset = InventoryPreset.named(inventoryPreset) else {
                throw Problem(.jobSetting, "--inventory-preset takes auto, " + InventoryPreset.all.map(\.id).joined(separator: ", ") + ", not \"\(inventoryPreset)\"")
            }
            o.preset = preset
        }
        for entry in map?.items ?? [] {
            let (name, column) = try JobSettings.pair(entry, "--map", "NAME=VALUE")
            switch Variable.named(name)?.variable {
            case .device(let v)?: o.columnMap[v] = column
            case .user(let v)?: o.userColumnMap[v] = column
            default: throw Problem(.jobSetting, "--map: \"\(name)\" is not a user or device variable")
            }
        }
        return o
    }

    public func attributes() throws(Problem) -> AttributeMap {
        var map = AttributeMap()
        map.joinAttribute = userAttribute ?? map.joinAttribute
        for entry in attribute?.items ?? [] {
            let (name, attribute) = try JobSettings.pair(entry, "--attribute", "NAME=VALUE")
            guard case .user(let v)? = Variable.named(name)?.variable else { throw Problem(.jobSetting, "--attribute: \"\(name)\" is not a user variable") }
            map.set(v, to: attribute)
            map.given[v] = attribute
        }
        return map
    }

}

extension JobSettings.LDAP {
    /// The connection to `url`. The password is read from the environment variable or the file
    /// named: never given on a command line, where `ps` and shell history would show it.
    public func configuration(url: String, environment: [String: String]) throws(Problem) -> LDAPConfiguration {
        if LDAPConfiguration.holdsCredentials(url) { throw Problem(.jobSetting, LDAPConfiguration.credentialsRefusal) }
        var c = LDAPConfiguration(url: url, base: base ?? "")
        c.bindDN = bindDN
        c.filter = filter ?? c.filter
        c.scope = scope ?? c.scope
        c.pageSize = pageSize ?? c.pageSize
        c.startTLS = startTLS ?? false
        c.caFile = caFile
        c.insecure = insecure ?? false
        c.networkTimeout = timeout ?? c.networkTimeout
        c.deadline = deadline ?? c.deadline
        guard c.networkTimeout > 0, c.deadline > 0 else { throw Problem(.jobSetting, "--ldap-timeout and --ldap-deadline take a number of seconds above 0") }
        c.retries = retries ?? c.retries
        c.targeting = targeted ?? c.targeting
        if passwordEnv != nil && passwordFile != nil { throw Problem(.jobSetting, "give --ldap-password-env or --ldap-password-file, not both") }
        if let name = passwordEnv {
            guard let value = environment[name] else {
                throw Problem(.jobSetting, "--ldap-password-env: the environment variable \(name) is not set")
            }
            c.password = Secret(value)
        } else if let path = passwordFile {
            guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else {
                throw Problem(.jobSetting, "--ldap-password-file: cannot read \(path)")
            }
            c.password = Secret(Self.passwordLine(text))
        }
        if bindDN != nil && c.password == nil { throw Problem(.jobSetting, "--ldap-bind-dn needs --ldap-password-env or --ldap-password-file") }
        if bindDN == nil && c.password != nil { throw Problem(.jobSetting, "a password needs --ldap-bind-dn: without one the bind is anonymous") }
        return c
    }

    /// A password file's one trailing line break (`\n` or `\r\n`, as editors and `echo` leave it)
    /// is not part of the password; anything before it is, spaces and further line breaks included.
    /// (`ldapsearch -y` keeps the line break, which is why those files are often made with `echo -n`.)
    public static func passwordLine(_ text: String) -> String {
        var bytes = Array(text.utf8)
        if bytes.last == 0x0A {
            bytes.removeLast()
            if bytes.last == 0x0D { bytes.removeLast() }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension JobSettings.DeliverySettings {
    /// The library's delivery options; each `--extension-spec` must name an `--extension`.
    public func options() throws(Problem) -> DeliveryOptions {
        var o = DeliveryOptions(delivery: delivery ?? .plist)
        o.assetBaseURL = assetBaseURL
        o.secretAssetBaseURL = secretAssetBaseURL
        o.bundleID = bundleID
        o.appStoreID = appStoreID
        o.manifestURL = manifestURL
        o.appConfigKey = appConfigKey
        o.install = install
        o.license = license
        o.includeInBackup = includeInBackup
        o.ddmLayout = ddmLayout
        o.commandNonce = commandNonce
        o.secretAssetHash = secretAssetHash ?? false
        o.statusSubscription = statusSubscription
        o.managementFlags = managementFlags
        for entry in installOptions?.items ?? [] {
            let (name, value) = try JobSettings.pair(entry, "--install-option", "NAME=VALUE")
            o.installOptions.append((name, value))
        }
        var specs: [String: String] = [:]
        for entry in extensionSpecs?.items ?? [] {
            let (id, spec) = try JobSettings.pair(entry, "--extension-spec", "COMPOSED-ID=SPEC")
            specs[id] = spec
        }
        for entry in extensions?.items ?? [] {
            let (id, values) = try JobSettings.pair(entry, "--extension", "COMPOSED-ID=VALUES")
            o.extensions.append(ExtensionDelivery(composedID: id, values: values, spec: specs.removeValue(forKey: id)))
        }
        if let id = specs.keys.sorted().first { throw Problem(.jobSetting, "--extension-spec \(id) names no --extension") }
        return o
    }
}
