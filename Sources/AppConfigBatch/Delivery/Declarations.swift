import Digest

/// One device's DDM declarations: its plist as a `com.apple.asset.data` asset, an AppManaged
/// configuration naming the asset, and a simple activation naming the configuration. Identifiers
/// and ServerTokens come from the content alone (SHA-256), so equal content gets equal names on
/// every run and every shard, devices with equal configurations share declarations, and any change
/// gives new ones. Identifiers are at most 61 octets, tokens 64.
struct DeviceDeclarations {
    /// SHA-256 of the plist: what the tar output dedups on.
    var assetDigest: SHA256Digest
    /// The same, 64 hex digits: the asset's file name and the end of its URL.
    var assetHash: [UInt8] = []
    /// Asset, configuration, activation.
    var declarations: [Declaration] = []

    struct Declaration {
        var identifier: [UInt8]
        /// The declaration's JSON: `{"Identifier", "Payload", "ServerToken", "Type"}`.
        var json: [UInt8]
    }
}

/// Builds the declarations of each device. Stateless: called from every worker at once.
struct DeclarationBuilder: Sendable {
    let delivery: ResolvedDelivery
    /// The asset base URL's bytes, once.
    let baseURL: [UInt8]

    init(delivery: ResolvedDelivery) {
        self.delivery = delivery
        baseURL = Array((delivery.assetBaseURL ?? "").utf8)
    }
    /// Property list data, binary or XML (the asset's `ContentType`).
    static let contentType = "application/x-plist"

    func build(plist: UnsafeRawBufferPointer) -> DeviceDeclarations {
        var result = DeviceDeclarations(assetDigest: SHA256Digest(of: plist))
        result.assetDigest.appendHex(to: &result.assetHash)

        var payload: [UInt8] = []
        JSONText.append(#"{"Reference":{"ContentType":"#, to: &payload)
        JSONText.appendString(Self.contentType, to: &payload)
        JSONText.append(#","DataURL":"#, to: &payload)
        payload.append(UInt8(ascii: "\""))
        payload += baseURL
        payload.append(UInt8(ascii: "/"))
        payload += result.assetHash
        payload.append(UInt8(ascii: "\""))
        JSONText.append(#","Hash-SHA-256":"#, to: &payload)
        JSONText.appendString(result.assetHash, to: &payload)
        JSONText.append(#","Size":"#, to: &payload)
        payload += String(plist.count).utf8
        JSONText.append("}}", to: &payload)
        let asset = Self.declaration(type: "com.apple.asset.data", prefix: "appconfig.asset.", payload: payload)

        payload.removeAll(keepingCapacity: true)
        JSONText.append(#"{"AppConfig":{"DataAssetReference":"#, to: &payload)
        JSONText.appendString(asset.identifier, to: &payload)
        if let appStoreID = delivery.appStoreID {
            JSONText.append(#"},"AppStoreID":"#, to: &payload)
            JSONText.appendString(appStoreID, to: &payload)
        } else {
            JSONText.append(#"},"BundleID":"#, to: &payload)
            JSONText.appendString(delivery.bundleID, to: &payload)
        }
        JSONText.append("}", to: &payload)
        let configuration = Self.declaration(type: "com.apple.configuration.app.managed", prefix: "appconfig.config.", payload: payload)

        payload.removeAll(keepingCapacity: true)
        JSONText.append(#"{"StandardConfigurations":["#, to: &payload)
        JSONText.appendString(configuration.identifier, to: &payload)
        JSONText.append("]}", to: &payload)
        let activation = Self.declaration(type: "com.apple.activation.simple", prefix: "appconfig.activation.", payload: payload)

        result.declarations = [asset, configuration, activation]
        return result
    }

    /// `{"Identifier":…,"Payload":…,"ServerToken":…,"Type":…}`: the identifier is the prefix and 40
    /// hex digits of the payload's hash; the token all 64 of the hash of everything else.
    static func declaration(type: StaticString, prefix: StaticString, payload: [UInt8]) -> DeviceDeclarations.Declaration {
        var identifier: [UInt8] = []
        JSONText.append(prefix, to: &identifier)
        SHA256.appendHex(of: payload, digits: 40, to: &identifier)

        var head: [UInt8] = []
        JSONText.append(#"{"Identifier":"#, to: &head)
        JSONText.appendString(identifier, to: &head)
        JSONText.append(#","Payload":"#, to: &head)
        head += payload
        head.append(UInt8(ascii: ","))
        var tail: [UInt8] = []
        JSONText.append(#""Type":"#, to: &tail)
        tail += [UInt8(ascii: "\"")] + UnsafeBufferPointer(start: type.utf8Start, count: type.utf8CodeUnitCount) + [UInt8(ascii: "\"")]
        tail.append(UInt8(ascii: "}"))

        var token: [UInt8] = []
        SHA256.appendHex(of: head + tail, to: &token)
        var json = head
        JSONText.append(#""ServerToken":""#, to: &json)
        json += token
        JSONText.append(#"","#, to: &json)
        json += tail
        return .init(identifier: identifier, json: json)
    }

    /// The device's declaration-set file:
    /// `{"device":KEY,"declarations":[activation, configuration, asset],"asset":SHA256}`.
    static func setFile(key: UnsafeBufferPointer<UInt8>, _ d: DeviceDeclarations, into out: inout [UInt8]) {
        setFields(key: key, d, into: &out)
        JSONText.append("}\n", to: &out)
    }

    /// The device's line of `index.jsonl`: its set, and the set file's path and SHA-256.
    static func indexLine(key: UnsafeBufferPointer<UInt8>, _ d: DeviceDeclarations, path: String, digest: SHA256Digest, extra: UnsafeBufferPointer<UInt8>,
                          into out: inout [UInt8]) {
        setFields(key: key, d, into: &out)
        JSONText.append(#","path":"#, to: &out)
        JSONText.appendString(path, to: &out)
        JSONText.append(#","sha256":"#, to: &out)
        JSONText.appendString(digest.hex, to: &out)
        out.append(contentsOf: extra)
        JSONText.append("}\n", to: &out)
    }

    private static func setFields(key: UnsafeBufferPointer<UInt8>, _ d: DeviceDeclarations, into out: inout [UInt8]) {
        JSONText.append(#"{"device":"#, to: &out)
        JSONText.appendString(key, to: &out)
        JSONText.append(#","declarations":["#, to: &out)
        for (i, declaration) in d.declarations.reversed().enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            JSONText.appendString(declaration.identifier, to: &out)
        }
        JSONText.append(#"],"asset":"#, to: &out)
        JSONText.appendString(d.assetHash, to: &out)
    }
}
