import AppConfigBatch
import ArgumentParser

/// How the configuration is delivered: shared by `render` and `compile` (its preview).
struct DeliveryArguments: ParsableArguments {
    @Option(help: "plist (bare plists), ddm (data assets and declarations), mdm-settings or mdm-install (MDM commands).")
    var delivery: Delivery = .plist

    @Option(name: .customLong("asset-base-url"), help: "DDM: the https:// URL the assets are served from (each asset at BASE/<sha256>).")
    var assetBaseURL: String?

    @Option(name: .customLong("bundle-id"), help: "The app's bundle identifier in declarations and commands (default: the spec's bundleId).")
    var bundleID: String?

    @Option(name: .customLong("app-store-id"), help: "The app's App Store ID: AppManaged's AppStoreID, InstallApplication's iTunesStoreID.")
    var appStoreID: String?

    func validate() throws {
        if delivery != .ddm && assetBaseURL != nil { throw ValidationError("--asset-base-url goes with --delivery ddm") }
    }

    /// The library's options.
    var options: DeliveryOptions {
        var o = DeliveryOptions(delivery: delivery)
        o.assetBaseURL = assetBaseURL
        o.bundleID = bundleID
        o.appStoreID = appStoreID
        return o
    }
}

extension Delivery: ExpressibleByArgument {}
