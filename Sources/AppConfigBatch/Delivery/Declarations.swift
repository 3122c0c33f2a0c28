import AppConfigCore
import AppConfigOutput
import AppConfigSpec
import Digest

/// One device's DDM declarations, named the way Apple's model asks: the AppManaged configuration
/// and its activation are the app on this device for their whole life, so their Identifiers come
/// from the app's bundle ID and the device key alone (the same on every run, shard and value
/// change), and their ServerTokens from their content (they change exactly when it does). The data
/// assets are content-addressed (Identifier and token from the data and where it is served): equal
/// configurations share one asset, stored once. A value change keeps the configuration's and the
/// activation's Identifiers and changes the configuration's token and the asset it names.
struct DeviceDeclarations {
    /// The app's data asset, then each extension's.
    var assets: [Asset]
    /// SHA-256 of the bundle ID and device key: the configuration's and activation's Identifiers.
    var identity: SHA256Digest
    /// The device's digest (index, manifest, `--changed-only`): over its declarations' Identifiers
    /// and ServerTokens, so it changes when any of its declarations does.
    var digest = SHA256Digest(a: 0, b: 0, c: 0, d: 0)
    /// Which configuration template (a variant's credentials).
    var variant = 0
    /// SHA-256 of the configuration's and the activation's payloads: their ServerTokens.
    var configurationToken = SHA256Digest(a: 0, b: 0, c: 0, d: 0)
    var activationToken = SHA256Digest(a: 0, b: 0, c: 0, d: 0)

    struct Asset {
        /// SHA-256 of the data: its file name, its URL's end, `Hash-SHA-256`.
        var data: SHA256Digest
        var size: Int
        /// A credential document's asset (nil: the configuration's data asset).
        var credential: CredentialAsset? = nil
        /// SHA-256 of where it is served and its data: its Identifier (the first 32 hex digits) and ServerToken (the last 32).
        var name: SHA256Digest

        /// Its Identifier's prefix: `appconfig.asset.`, or a credential document's `appconfig.credential.`.
        var identifierPrefix: StaticString { credential == nil ? DeclarationBuilder.assetPrefix : DeclarationBuilder.credentialPrefix }
    }
}

/// What a credential document's asset declaration says besides its data.
struct CredentialAsset {
    /// `com.apple.asset.credential.*`.
    var type: String
    var contentType: String
    /// Served from `secret-assets/` with MDM authentication.
    var secret: Bool

    /// The file's ending: the document's media type.
    var fileExtension: String {
        switch contentType {
        case "application/pem": ".pem"
        case "application/pkcs1": ".der"
        default: ".json"
        }
    }
}

/// Builds and writes the declarations of each device. Stateless: called from every worker at once.
struct DeclarationBuilder: Sendable {
    let delivery: ResolvedDelivery
    /// The asset base URL's bytes and `/`, once.
    let urlPrefix: [UInt8]
    /// SHA-256 of everything an asset's declaration holds besides its data (content type, base URL).
    let assetContext: SHA256Digest
    /// `appconfig\0BUNDLE\0`: what a device's identity hashes before its key.
    let identityPrefix: [UInt8]
    /// Per variant, the configuration's payload: constant parts, with an asset Identifier between
    /// each two (`holes[i]`: which asset: 0 the app's, then the extensions', then the credentials').
    /// One for every variant when no assignment carries credentials. Views of `templateStorage`:
    /// read per device without a retain (arrays of arrays were one per part).
    let templates: [(parts: BufferView<ByteView>, holes: BufferView<Int>)]
    private let templateStorage: BufferArena
    /// Where the secret-bearing documents are served (`--secret-asset-base-url`), with `/`.
    let secretURLPrefix: [UInt8]
    /// The status subscription every set carries and every activation names (nil: `--no-status-subscription`).
    let statusSubscription: StatusSubscription?

    /// Property list data, binary or XML: one of the schema's `asset-content-types`.
    static let contentType: StaticString = "application/x-plist"
    /// A configuration's data asset's declaration type.
    static let dataAssetType: StaticString = "com.apple.asset.data"
    /// Apple's limit for app config data (a device error above it: `device.asset-too-large`).
    static let maxAssetBytes = 1_048_576
    static let assetPrefix: StaticString = "appconfig.asset."
    static let credentialPrefix: StaticString = "appconfig.credential."
    static let configurationPrefix: StaticString = "appconfig.config."
    static let activationPrefix: StaticString = "appconfig.activation."
    /// Hex digits of the hash in an Identifier, and in a ServerToken (128 bits each: names unique
    /// among any fleet's declarations, tokens that miss no change, fewer bytes per device).
    static let identifierDigits = 32
    static let tokenDigits = 32

    /// `credentials`: per variant, its credentials' identifiers and kinds, in order;
    /// `extensionCredentials`: each extension's (in `delivery.extensions` order).
    init(delivery: ResolvedDelivery, credentials: [[(identifier: String, kind: Credential.Kind)]] = [[]],
         extensionCredentials: [[(identifier: String, kind: Credential.Kind)]] = []) {
        self.delivery = delivery
        urlPrefix = Array((delivery.assetBaseURL ?? "").utf8) + [UInt8(ascii: "/")]
        secretURLPrefix = Array((delivery.secretAssetBaseURL ?? "").utf8) + [UInt8(ascii: "/")]
        statusSubscription = delivery.statusSubscription ? StatusSubscription() : nil
        assetContext = SHA256Digest(of: Self.contentType.withUTF8Buffer { Array($0) } + [0] + urlPrefix)
        identityPrefix = Array("appconfig".utf8) + [0] + Array(delivery.bundleID.utf8) + [0]
        let storage = BufferArena()
        templateStorage = storage
        templates = (credentials.isEmpty ? [[]] : credentials).map {
            let t = Self.payloadTemplate(delivery, credentials: $0, extensionCredentials: extensionCredentials)
            return (storage.view(t.parts.map { storage.view($0) }), storage.view(t.holes))
        }
    }

    /// AppManaged's payload, keys in sorted order: `AppConfig`, the app's source, `ExtensionConfigs`,
    /// `IncludeInBackup`, `InstallBehavior`, `LegacyAppConfigAssetReference`, `ManifestURL`.
    static func payloadTemplate(_ d: ResolvedDelivery, credentials: [(identifier: String, kind: Credential.Kind)] = [],
                                extensionCredentials: [[(identifier: String, kind: Credential.Kind)]] = []) -> (parts: [[UInt8]], holes: [Int]) {
        var parts: [[UInt8]] = [[]]
        var holes: [Int] = []
        func text(_ s: String) { parts[parts.count - 1] += s.utf8 }
        func string(_ s: String) { JSONText.appendString(s, to: &parts[parts.count - 1]) }
        func hole(_ asset: Int) {
            text("\"")
            holes.append(asset)
            parts.append([])
            text("\"")
        }
        var first = true
        func key(_ k: String) {
            text(first ? "{" : ",")
            first = false
            string(k)
            text(":")
        }
        // An AppConfig dictionary (AppConfig, and each extension's in ExtensionConfigs): the
        // credential arrays (Certificates, Identities, Passwords: each item {AssetReference,
        // Identifier}) and DataAssetReference, keys sorted. `firstAsset`: its credentials' first asset.
        func appConfig(data: Int?, credentials: [(identifier: String, kind: Credential.Kind)], firstAsset: Int) {
            text("{")
            var any = false
            for name in ["Certificates", "DataAssetReference", "Identities", "Passwords"] {
                if name == "DataAssetReference" {
                    guard let data else { continue }
                    if any { text(",") }
                    text("\"DataAssetReference\":")
                    hole(data)
                    any = true
                    continue
                }
                let items = credentials.enumerated().filter { $0.element.kind.appConfigArray == name }
                guard !items.isEmpty else { continue }
                if any { text(",") }
                string(name)
                text(":[")
                for (n, (i, c)) in items.enumerated() {
                    text(n == 0 ? "{\"AssetReference\":" : ",{\"AssetReference\":")
                    hole(firstAsset + i)
                    text(",\"Identifier\":")
                    string(c.identifier)
                    text("}")
                }
                text("]")
                any = true
            }
            text("}")
        }
        // The assets: the app's, each extension's, the app's credentials, each extension's.
        var extensionCredentialStart: [Int] = []
        var next = 1 + d.extensions.count + credentials.count
        for list in extensionCredentials {
            extensionCredentialStart.append(next)
            next += list.count
        }
        if d.appConfigKey.writesManagedApp || !credentials.isEmpty {
            key("AppConfig")
            appConfig(data: d.appConfigKey.writesManagedApp ? 0 : nil, credentials: credentials, firstAsset: 1 + d.extensions.count)
        }
        switch d.source {
        case .appStoreID(let id): key("AppStoreID"); string(id)
        case .bundleID(let id): key("BundleID"); string(id)
        case .manifestURL: break
        }
        if !d.extensions.isEmpty {
            key("ExtensionConfigs")
            // Sorted by composed identifier; each names its own asset and credentials (numbered in the given order).
            for (n, (i, id)) in d.extensions.enumerated().sorted(by: { Array($0.1.utf8).lexicographicallyPrecedes(Array($1.1.utf8)) }).enumerated() {
                text(n == 0 ? "{" : ",")
                string(id)
                text(":")
                let list = i < extensionCredentials.count ? extensionCredentials[i] : []
                appConfig(data: i + 1, credentials: list, firstAsset: i < extensionCredentialStart.count ? extensionCredentialStart[i] : 0)
            }
            text("}")
        }
        if let backup = d.includeInBackup { key("IncludeInBackup"); text(backup ? "true" : "false") }
        key("InstallBehavior")
        text("{\"Install\":")
        string(d.install.schemaValue)
        if let license = d.license {
            text(",\"License\":{\"Assignment\":")
            string(license.schemaValue)
            text("}")
        }
        text("}")
        if d.appConfigKey.writesLegacy {
            key("LegacyAppConfigAssetReference")
            hole(0)
        }
        if case .manifestURL(let url) = d.source { key("ManifestURL"); string(url) }
        text("}")
        return (parts, holes)
    }

    /// Each device's assets, identity and digest (nothing written). `plistDigests[i]`: device i's
    /// plist's SHA-256 when it is known (digested in a batch of devices). The names, tokens and
    /// digests are taken in three rounds, each round's messages digested together
    /// (`SHA256Messages`: in lanes, unless `inLanes` is false); a document's data is digested on
    /// its own, where it is (a credential's may hold a secret: it is not copied).
    func build(_ devices: [RenderedDevice], plistDigests: [SHA256Digest?], inLanes: Bool = SHA256.hasLanes) -> [DeviceDeclarations] {
        let none = SHA256Digest(a: 0, b: 0, c: 0, d: 0)
        var messages = SHA256Messages()
        var built: [DeviceDeclarations] = []
        built.reserveCapacity(devices.count)
        // Round 1: the identities, then the assets' names (their context, then their data's digest).
        for device in devices { messages.add { $0 += identityPrefix; $0.append(contentsOf: device.key) } }
        for (i, device) in devices.enumerated() {
            var assets: [DeviceDeclarations.Asset] = []
            assets.reserveCapacity(1 + device.extensions.count + device.credentials.count)
            assets.append(.init(data: plistDigests[i] ?? SHA256Digest(of: device.plist), size: device.plist.count, name: none))
            for e in device.extensions { assets.append(.init(data: SHA256Digest(of: e), size: e.count, name: none)) }
            for c in device.credentials {
                let info = CredentialAsset(type: c.assetType, contentType: c.contentType, secret: c.holdsSecret)
                assets.append(.init(data: c.name ?? c.document.withUnsafeBytes { SHA256Digest(of: $0) }, size: c.document.count, credential: info, name: none))
            }
            for a in assets {
                let context = a.credential.map { c in
                    SHA256Digest(of: Array(c.type.utf8) + [0] + Array(c.contentType.utf8) + [0] + (c.secret ? secretURLPrefix : urlPrefix))
                } ?? assetContext
                messages.add { out in
                    withUnsafeBytes(of: context) { out += $0 }
                    withUnsafeBytes(of: a.data) { out += $0 }
                }
            }
            var d = DeviceDeclarations(assets: assets, identity: none)
            d.variant = templates.count == 1 ? 0 : device.variant
            built.append(d)
        }
        var names = messages.digests(inLanes: inLanes)[...]
        for i in built.indices { built[i].identity = names.removeFirst() }
        for i in built.indices {
            for k in built[i].assets.indices { built[i].assets[k].name = names.removeFirst() }
        }
        // Round 2: the configurations' payloads, then the activations' (lanes of like lengths).
        for d in built { messages.add { appendConfigurationPayload(d, to: &$0) } }
        for d in built { messages.add { appendActivationPayload(d, to: &$0) } }
        let tokens = messages.digests(inLanes: inLanes)
        // Round 3: the digest: the identity, the configuration's and activation's tokens, the assets' names.
        for i in built.indices {
            built[i].configurationToken = tokens[i]
            built[i].activationToken = tokens[built.count + i]
            let d = built[i]
            messages.add { out in
                withUnsafeBytes(of: d.identity) { out += $0 }
                withUnsafeBytes(of: d.configurationToken) { out += $0 }
                withUnsafeBytes(of: d.activationToken) { out += $0 }
                for a in d.assets { withUnsafeBytes(of: a.name) { out += $0 } }
            }
        }
        for (i, digest) in messages.digests(inLanes: inLanes).enumerated() { built[i].digest = digest }
        return built
    }
}
