import AppConfigSpec
import Foundation

/// How the configuration reaches the device (`--delivery`).
public enum Delivery: String, Sendable, CaseIterable {
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
}

/// What a delivery needs besides the rendered dictionary.
public struct DeliveryOptions: Sendable {
    public var delivery = Delivery.plist
    /// The app's bundle identifier (default: the spec's `bundleId`).
    public var bundleID: String?
    /// The App Store ID: AppManaged takes it instead of the bundle ID; InstallApplication as `iTunesStoreID`.
    public var appStoreID: String?
    /// Where the DDM assets are served: `https://…`; each asset's URL is this plus `/` and its SHA-256.
    public var assetBaseURL: String?

    public init(delivery: Delivery = .plist) { self.delivery = delivery }

    /// The options checked for the delivery, with the bundle ID settled. Every problem is a
    /// `delivery.option` (a usage error: nothing is written).
    public func resolved(specBundleID: String) throws(Problem) -> ResolvedDelivery {
        let bundle = bundleID ?? specBundleID
        guard !bundle.isEmpty, bundle.utf8.count <= 255,
              bundle.unicodeScalars.allSatisfy({ $0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "." || $0 == "-" })
        else {
            throw Problem(.deliveryOption, "the app needs a bundle identifier (--bundle-id, or the spec's bundleId), not \"\(bundle)\"")
        }
        if let appStoreID, appStoreID.isEmpty || !appStoreID.allSatisfy({ $0.isASCII && $0.isNumber }) || appStoreID.count > 18 {
            throw Problem(.deliveryOption, "--app-store-id takes the App Store's numeric ID, not \"\(appStoreID)\"")
        }
        var base: String?
        if delivery == .ddm {
            base = try Self.checkedBaseURL(assetBaseURL)
        }
        return ResolvedDelivery(delivery: delivery, bundleID: bundle, appStoreID: appStoreID, assetBaseURL: base)
    }

    /// An `https://host/path` URL, without query or fragment, its trailing slashes dropped.
    static func checkedBaseURL(_ text: String?) throws(Problem) -> String {
        guard let text else { throw Problem(.deliveryOption, "--delivery ddm needs --asset-base-url https://… (where the assets will be served)") }
        guard let url = URLComponents(string: text), url.scheme?.lowercased() == "https", let host = url.host, !host.isEmpty,
              url.query == nil, url.fragment == nil, url.user == nil, url.password == nil,
              !text.contains(where: { $0.isWhitespace || $0 == "\"" || $0 == "\\" })
        else {
            throw Problem(.deliveryOption, "--asset-base-url must be an https:// URL with a host and no query, not \"\(text)\"")
        }
        var base = text
        while base.hasSuffix("/") { base.removeLast() }
        return base
    }
}

/// Delivery options checked and complete.
public struct ResolvedDelivery: Sendable {
    public let delivery: Delivery
    public let bundleID: String
    public let appStoreID: String?
    /// Set for DDM.
    public let assetBaseURL: String?
}
