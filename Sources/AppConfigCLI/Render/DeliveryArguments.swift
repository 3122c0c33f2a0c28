import AppConfigBatch
import ArgumentParser

/// How the configuration is delivered: shared by `render` and `compile` (its preview). The
/// pairings (an option of one delivery given to another, two app sources) are checked by
/// `DeliveryOptions.resolved`, a one-line usage error before anything is written.
struct DeliveryArguments: ParsableArguments {
    @Option(help: "plist (default: bare plists), ddm (data assets and declarations), mdm-settings or mdm-install (MDM commands).")
    var delivery: Delivery?

    @Option(name: .customLong("asset-base-url"), help: "DDM: the https:// URL the assets are served from (each asset at BASE/<sha256>).")
    var assetBaseURL: String?

    @Option(name: .customLong("secret-asset-base-url"), help: "DDM: the https:// URL secret-assets/ is served from, with MDM authentication (credential documents that hold a secret).")
    var secretAssetBaseURL: String?

    @Option(name: .customLong("bundle-id"), help: "The app's bundle identifier in declarations and commands (default: the spec's bundleId).")
    var bundleID: String?

    @Option(name: .customLong("app-store-id"), help: "The app's App Store ID: AppManaged's AppStoreID, InstallApplication's iTunesStoreID.")
    var appStoreID: String?

    @Option(name: .customLong("manifest-url"), help: "An in-house app's manifest (https://): AppManaged's and InstallApplication's ManifestURL, instead of a bundle or store ID.")
    var manifestURL: String?

    @Option(name: .customLong("app-config-key"),
            help: "DDM: legacy (LegacyAppConfigAssetReference: apps that read com.apple.configuration.managed), managedapp (AppConfig.DataAssetReference: ManagedApp framework apps) or both (default).")
    var appConfigKey: AppConfigKey?

    @Option(help: "DDM: required (default: installed, the user cannot remove it) or optional.")
    var install: AppInstall?

    @Option(help: "DDM: the App Store license, device (default) or user.")
    var license: LicenseAssignment?

    @Option(name: .customLong("include-in-backup"), help: "DDM: true or false (IncludeInBackup; Apple's default true).")
    var includeInBackup: Bool?

    @Option(name: .customLong("ddm-layout"), help: "DDM: jsonl (default: declarations.jsonl and the sets in index.jsonl) or files (a JSON file per declaration and per set).")
    var ddmLayout: DDMLayout?

    @Flag(name: .customLong("status-subscription"), inversion: .prefixedNo,
          help: "DDM: add to every set the status subscription to app.managed.list that `appconfig status` reads (default: on).")
    var statusSubscription: Bool?

    @Option(name: .customLong("extension"), help: "DDM: an app extension's configuration, COMPOSED-ID=VALUES (its own asset in ExtensionConfigs); repeatable.")
    var extensions: [String] = []

    @Option(name: .customLong("extension-spec"), help: "DDM: the spec of an extension, COMPOSED-ID=SPEC (default: the app's spec); repeatable.")
    var extensionSpecs: [String] = []

    @Option(name: .customLong("command-nonce"), help: "MDM: text mixed into every CommandUUID, so an identical command can be queued again.")
    var commandNonce: String?

    @Option(name: .customLong("management-flags"), help: "mdm-install: InstallApplication's ManagementFlags (1: remove the app with the MDM profile, 4: no backup of its data).")
    var managementFlags: Int?

    @Option(name: .customLong("install-option"), help: "mdm-install: an entry of InstallApplication's Options, NAME=VALUE (PurchaseMethod=1, NotManaged=true); repeatable.")
    var installOptions: [String] = []

    /// What the command line said of the delivery (nil: not given).
    var settings: JobSettings.DeliverySettings {
        var s = JobSettings.DeliverySettings()
        (s.delivery, s.assetBaseURL, s.secretAssetBaseURL, s.bundleID, s.appStoreID) = (delivery, assetBaseURL, secretAssetBaseURL, bundleID, appStoreID)
        (s.manifestURL, s.appConfigKey, s.install, s.license, s.includeInBackup) = (manifestURL, appConfigKey, install, license, includeInBackup)
        (s.ddmLayout, s.commandNonce, s.managementFlags, s.installOptions) = (ddmLayout, commandNonce, managementFlags, Entries(given: installOptions))
        (s.extensions, s.extensionSpecs) = (Entries(given: extensions), Entries(given: extensionSpecs))
        s.statusSubscription = statusSubscription
        return s
    }

    /// The library's options.
    func options() throws -> DeliveryOptions { try settingsProblems { try settings.options() } }
}

extension Delivery: ExpressibleByArgument {}
extension AppConfigKey: ExpressibleByArgument {}
extension AppInstall: ExpressibleByArgument {}
extension LicenseAssignment: ExpressibleByArgument {}
extension DDMLayout: ExpressibleByArgument {}
