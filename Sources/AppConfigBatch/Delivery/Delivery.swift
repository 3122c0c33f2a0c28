import AppConfigCore
import AppConfigRender
import Foundation

/// How the configuration reaches the device (`--delivery`).
public enum Delivery: String, SettingChoice {
    /// One bare plist per device (the managed configuration dictionary itself).
    case plist
    /// Declarative device management: the plist as a `com.apple.asset.data` asset, with an
    /// AppManaged configuration and a simple activation naming it; a declaration set per device.
    case ddm
    /// One MDM `Settings` command per device (`ApplicationConfiguration` item), an XML plist.
    case mdmSettings = "mdm-settings"
    /// One MDM `InstallApplication` command per device, with the configuration, an XML plist.
    case mdmInstall = "mdm-install"

    /// MDM commands travel as XML plists: the dictionary is rendered as XML, nested in the command.
    public var isMDMCommand: Bool { self == .mdmSettings || self == .mdmInstall }

    /// The plist format this delivery renders in, the one place that decides it: MDM commands
    /// are XML plists (nothing asked: XML; binary asked: nil, refused with `formatRefusal`); the
    /// others take what is asked, `otherwise` when nothing is.
    public func plistFormat(_ requested: OutputFormat?, otherwise: OutputFormat = .binary) -> OutputFormat? {
        guard isMDMCommand else { return requested ?? otherwise }
        return requested == .binary ? nil : .xml
    }

    /// Why `plistFormat` refuses a binary plist.
    public var formatRefusal: String { "MDM commands are XML plists: --delivery \(rawValue) takes --format xml" }
}

/// Which AppManaged key names the data asset (`--app-config-key`). Apps written to the AppConfig
/// specification read `com.apple.configuration.managed` from user defaults, which DDM fills from
/// `LegacyAppConfigAssetReference`; apps built on the ManagedApp framework read
/// `AppConfig.DataAssetReference`. `both` serves either kind of app with one asset.
public enum AppConfigKey: String, SettingChoice {
    case legacy, managedapp, both

    var writesLegacy: Bool { self != .managedapp }
    var writesManagedApp: Bool { self != .legacy }
}

/// AppManaged's `InstallBehavior.Install` (`--install`).
public enum AppInstall: String, SettingChoice {
    case required, optional

    var schemaValue: String { self == .required ? "Required" : "Optional" }
}

/// AppManaged's `InstallBehavior.License.Assignment` (`--license`): required for App Store apps.
public enum LicenseAssignment: String, SettingChoice {
    case device, user

    var schemaValue: String { self == .device ? "Device" : "User" }
}

/// How a DDM output lays out its declarations (`--ddm-layout`).
public enum DDMLayout: String, SettingChoice {
    /// `declarations.jsonl` (each declaration once, a line each) and the sets in `index.jsonl`:
    /// what a server bulk-loads.
    case jsonl
    /// One JSON file per declaration (`declarations/<Identifier>.json`) and per device set.
    case files
}

/// An app extension's configuration (`--extension COMPOSED-ID=VALUES`): rendered per device like
/// the app's, into an asset of its own that AppManaged's `ExtensionConfigs` names.
public struct ExtensionDelivery: Sendable, Equatable {
    /// "Bundle-ID" or "Bundle-ID (Team-ID)".
    public var composedID: String
    public var values: String
    /// The extension's spec; nil: the app's.
    public var spec: String?

    public init(composedID: String, values: String, spec: String? = nil) {
        self.composedID = composedID
        self.values = values
        self.spec = spec
    }
}

/// What a delivery needs besides the rendered dictionary.
public struct DeliveryOptions: Sendable {
    public var delivery = Delivery.plist
    /// The app's bundle identifier (default: the spec's `bundleId`).
    public var bundleID: String?
    /// The App Store ID: AppManaged takes it instead of the bundle ID; InstallApplication as `iTunesStoreID`.
    public var appStoreID: String?
    /// An in-house app's manifest (`https://…`): AppManaged's and InstallApplication's `ManifestURL`.
    public var manifestURL: String?
    /// Where the DDM assets are served: `https://…`; each asset's URL is this plus `/` and its SHA-256.
    public var assetBaseURL: String?
    /// Where the credential documents that hold a secret are served (`secret-assets/`), with MDM
    /// authentication.
    public var secretAssetBaseURL: String?
    /// DDM: which key names the data asset (nil: `both`).
    public var appConfigKey: AppConfigKey?
    /// DDM: `InstallBehavior.Install` (nil: required).
    public var install: AppInstall?
    /// DDM: `InstallBehavior.License.Assignment` for App Store apps (nil: device).
    public var license: LicenseAssignment?
    /// DDM: `IncludeInBackup` (nil: left out, Apple's default true).
    public var includeInBackup: Bool?
    /// DDM: the layout of the declarations (nil: jsonl).
    public var ddmLayout: DDMLayout?
    /// DDM: app extensions' configurations, each its own asset.
    public var extensions: [ExtensionDelivery] = []
    /// MDM: mixed into every `CommandUUID`, so that an identical command can be queued again.
    public var commandNonce: String?
    /// DDM: secret documents' declarations carry `Hash-SHA-256` (by default left out: it would let
    /// a reader of the declarations test guesses of the secret).
    public var secretAssetHash = false
    /// DDM: every set carries a `com.apple.configuration.management.status-subscriptions`
    /// declaration subscribing to `app.managed.list`, named by its activation (nil: true), so that
    /// devices report each app's state and `config-state` (what `appconfig status` reads).
    public var statusSubscription: Bool?
    /// mdm-install: `InstallApplication`'s `ManagementFlags` (1: remove the app with the MDM
    /// profile; 4: no backup of its data).
    public var managementFlags: Int?
    /// mdm-install: `InstallApplication`'s `Options` (`PurchaseMethod=1`, `NotManaged=true`).
    public var installOptions: [(name: String, value: String)] = []

    public init(delivery: Delivery = .plist) { self.delivery = delivery }

    /// The options checked for the delivery, with the app settled. Every problem is a
    /// `delivery.option` (a usage error, one line: nothing is written).
    public func resolved(specBundleID: String) throws(Problem) -> ResolvedDelivery {
        let bundle = bundleID ?? specBundleID
        guard Self.isBundleID(bundle) else {
            throw Problem(.deliveryOption, "the app needs a bundle identifier (--bundle-id, or the spec's bundleId), not \"\(bundle)\"")
        }
        let sources = [bundleID.map { _ in "--bundle-id" }, appStoreID.map { _ in "--app-store-id" }, manifestURL.map { _ in "--manifest-url" }].compactMap { $0 }
        if sources.count > 1 {
            throw Problem(.deliveryOption, "give one app source (--bundle-id, --app-store-id or --manifest-url), not \(sources.joined(separator: " and "))")
        }
        if let appStoreID, appStoreID.isEmpty || !appStoreID.allSatisfy({ $0.isASCII && $0.isNumber }) || appStoreID.count > 18 || appStoreID.hasPrefix("0") {
            throw Problem(.deliveryOption, "--app-store-id takes the App Store's numeric ID, not \"\(appStoreID)\"")
        }
        if let manifestURL {
            guard delivery == .ddm || delivery == .mdmInstall else {
                throw Problem(.deliveryOption, "--manifest-url goes with --delivery ddm or mdm-install")
            }
            guard Self.isHTTPSURL(manifestURL, allowsQuery: true) else {
                throw Problem(.deliveryOption, "--manifest-url must be an https:// URL with a host, not \"\(Problem.printable(manifestURL))\"")
            }
        }
        // The options of one delivery given to another: refused, not ignored.
        let ddmOnly: [(String, Bool)] = [("--asset-base-url", assetBaseURL != nil), ("--secret-asset-base-url", secretAssetBaseURL != nil),
                                         ("--app-config-key", appConfigKey != nil),
                                         ("--install", install != nil), ("--license", license != nil),
                                         ("--include-in-backup", includeInBackup != nil), ("--ddm-layout", ddmLayout != nil),
                                         ("--extension", !extensions.isEmpty), ("--secret-asset-hash", secretAssetHash),
                                         ("--status-subscription", statusSubscription != nil)]
        if delivery != .ddm, let given = ddmOnly.first(where: \.1) {
            throw Problem(.deliveryOption, "\(given.0) goes with --delivery ddm")
        }
        // What names the app goes where an app is named: a bare plist names none, a Settings
        // command names it by bundle identifier only.
        if delivery == .plist, let given = [("--bundle-id", bundleID != nil), ("--app-store-id", appStoreID != nil)].first(where: \.1) {
            throw Problem(.deliveryOption, "\(given.0) goes with --delivery ddm, mdm-settings or mdm-install: a bare plist names no app")
        }
        if delivery == .mdmSettings && appStoreID != nil {
            throw Problem(.deliveryOption, "--app-store-id goes with --delivery ddm or mdm-install: a Settings command names the app by --bundle-id")
        }
        if delivery != .mdmInstall, let given = [("--management-flags", managementFlags != nil), ("--install-option", !installOptions.isEmpty)].first(where: \.1) {
            throw Problem(.deliveryOption, "\(given.0) goes with --delivery mdm-install")
        }
        if let flags = managementFlags, !(0...255).contains(flags) {
            throw Problem(.deliveryOption, "--management-flags takes InstallApplication's ManagementFlags, 0 to 255 (1: remove the app with the MDM profile, 4: no backup), not \(flags)")
        }
        var optionNames = Set<String>()
        for (name, _) in installOptions {
            guard !name.isEmpty, name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }), optionNames.insert(name).inserted else {
                throw Problem(.deliveryOption, "--install-option takes NAME=VALUE with a letters-and-digits NAME given once (PurchaseMethod=1), not \"\(Problem.printable(name))\"")
            }
        }
        if commandNonce != nil && !delivery.isMDMCommand {
            throw Problem(.deliveryOption, "--command-nonce goes with --delivery mdm-settings or mdm-install")
        }
        if let commandNonce, commandNonce.isEmpty || commandNonce.utf8.count > 256 || commandNonce.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            throw Problem(.deliveryOption, "--command-nonce takes 1 to 256 bytes of printable text")
        }
        if license != nil && manifestURL != nil {
            throw Problem(.deliveryOption, "--license is for App Store apps (--bundle-id or --app-store-id), not an in-house app's --manifest-url")
        }
        var seen: Set<String> = []
        for e in extensions {
            guard Self.isComposedID(e.composedID) else {
                throw Problem(.deliveryOption, "--extension takes COMPOSED-ID=VALUES with a composed identifier \"Bundle-ID\" or \"Bundle-ID (Team-ID)\", not \"\(Problem.printable(e.composedID))\"")
            }
            guard seen.insert(e.composedID).inserted else { throw Problem(.deliveryOption, "--extension \(e.composedID) is given twice") }
            guard !e.values.isEmpty else { throw Problem(.deliveryOption, "--extension \(e.composedID) needs a values file: COMPOSED-ID=VALUES") }
        }
        var base: String?
        if delivery == .ddm {
            guard let assetBaseURL else {
                throw Problem(.deliveryOption, "--delivery ddm needs --asset-base-url https://… (where the assets will be served)")
            }
            guard Self.isHTTPSURL(assetBaseURL, allowsQuery: false) else {
                throw Problem(.deliveryOption, "--asset-base-url must be an https:// URL with a host and no query, not \"\(Problem.printable(assetBaseURL))\"")
            }
            var b = assetBaseURL
            while b.hasSuffix("/") { b.removeLast() }
            base = b
            if let secretBase = secretAssetBaseURL {
                guard Self.isHTTPSURL(secretBase, allowsQuery: false) else {
                    throw Problem(.deliveryOption, "--secret-asset-base-url must be an https:// URL with a host and no query, not \"\(Problem.printable(secretBase))\"")
                }
            }
        }
        let source: ResolvedDelivery.AppSource = manifestURL.map { .manifestURL($0) } ?? appStoreID.map { .appStoreID($0) } ?? .bundleID(bundle)
        var resolved = ResolvedDelivery(delivery: delivery, bundleID: bundle, source: source, assetBaseURL: base,
                                appConfigKey: appConfigKey ?? .both, install: install ?? .required,
                                license: manifestURL == nil ? (license ?? .device) : nil, includeInBackup: includeInBackup,
                                layout: ddmLayout ?? .jsonl, extensions: extensions.map(\.composedID), commandNonce: commandNonce,
                                secretAssetBaseURL: secretAssetBaseURL.map { var b = $0; while b.hasSuffix("/") { b.removeLast() }; return b })
        resolved.secretAssetHash = secretAssetHash
        resolved.statusSubscription = delivery == .ddm && statusSubscription != false
        resolved.managementFlags = managementFlags
        resolved.installOptions = installOptions.sorted { Array($0.name.utf8).lexicographicallyPrecedes(Array($1.name.utf8)) }
        return resolved
    }

    /// ASCII letters, digits and `-` in parts joined by `.` (none empty: not `.`, `..`, `com..x`),
    /// at most 255 bytes: Apple's bundle identifier.
    static func isBundleID(_ s: some StringProtocol) -> Bool {
        !s.isEmpty && s.utf8.count <= 255
            && s.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "." || $0 == "-" }
            && s.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { !$0.isEmpty }
    }

    /// "Bundle-ID" or "Bundle-ID (Team-ID)", the team identifier letters and digits.
    static func isComposedID(_ s: String) -> Bool {
        guard let open = s.firstIndex(of: " ") else { return isBundleID(s) }
        let team = s[s.index(after: open)...]
        return isBundleID(s[..<open]) && team.hasPrefix("(") && team.hasSuffix(")") && team.count > 2
            && team.dropFirst().dropLast().allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) }
    }

    /// An `https://host…` URL of printable ASCII (a host in punycode), without user, fragment, or
    /// (unless allowed) query: what goes into a declaration as it is.
    static func isHTTPSURL(_ text: String, allowsQuery: Bool) -> Bool {
        guard text.utf8.count <= 2048, text.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F && !"\"\\<>^`{|}".unicodeScalars.contains($0) }),
              let url = URLComponents(string: text), url.scheme?.lowercased() == "https", let host = url.host, !host.isEmpty,
              allowsQuery || url.query == nil, url.fragment == nil, url.user == nil, url.password == nil
        else { return false }
        if let port = url.port, !(1...65535).contains(port) { return false }
        return true
    }
}

/// Delivery options checked and complete.
public struct ResolvedDelivery: Sendable {
    /// What names the app in AppManaged and InstallApplication: exactly one of them.
    public enum AppSource: Sendable, Equatable {
        case bundleID(String), appStoreID(String), manifestURL(String)
    }

    public let delivery: Delivery
    /// The spec's or `--bundle-id`: what Settings names, and what a device's configuration
    /// Identifier is derived from (stable across a change of source).
    public let bundleID: String
    public let source: AppSource
    /// Set for DDM.
    public let assetBaseURL: String?
    public let appConfigKey: AppConfigKey
    public let install: AppInstall
    /// Nil for an in-house app (`ManifestURL`).
    public let license: LicenseAssignment?
    public let includeInBackup: Bool?
    public internal(set) var layout: DDMLayout
    /// The extensions' composed identifiers, in the order their assets are rendered.
    public let extensions: [String]
    public let commandNonce: String?
    /// Where secret-bearing credential documents are served.
    public let secretAssetBaseURL: String?
    /// Secret documents' declarations carry `Hash-SHA-256` (`--secret-asset-hash`).
    public internal(set) var secretAssetHash = false
    /// DDM: the sets carry the status subscription (`DeclarationBuilder.statusSubscription`).
    public internal(set) var statusSubscription = false
    /// `InstallApplication`'s `ManagementFlags` and `Options` (sorted by name).
    public internal(set) var managementFlags: Int?
    public internal(set) var installOptions: [(name: String, value: String)] = []

    public var appStoreID: String? { if case .appStoreID(let id) = source { id } else { nil } }
    public var manifestURL: String? { if case .manifestURL(let url) = source { url } else { nil } }
}
