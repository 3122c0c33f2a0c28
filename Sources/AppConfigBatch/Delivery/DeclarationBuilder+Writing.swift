import AppConfigCore
import AppConfigSpec
import Digest

extension DeclarationBuilder {
    // MARK: Writing

    static func appendIdentifier(_ prefix: StaticString, _ digest: SHA256Digest, to out: inout [UInt8]) {
        JSONText.append(prefix, to: &out)
        digest.appendHex(digits: identifierDigits, to: &out)
    }

    /// A token's 32 hex digits: the digest's first (a content hash), or for an asset its name's last.
    static func appendToken(_ digest: SHA256Digest, asset: Bool = false, to out: inout [UInt8]) {
        // The last 32 digits are the first 32 of the digest with its halves swapped.
        let d = asset ? SHA256Digest(a: digest.c, b: digest.d, c: digest.a, d: digest.b) : digest
        d.appendHex(digits: tokenDigits, to: &out)
    }

    /// A non-negative integer's decimal digits.
    static func appendDecimal(_ value: Int, to out: inout [UInt8]) {
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)
        withUnsafeMutableBytes(of: &digits) { d in
            var v = value, i = 24
            repeat {
                i -= 1
                d[i] = UInt8(ascii: "0") + UInt8(v % 10)
                v /= 10
            } while v > 0
            out.append(contentsOf: d[i..<24])
        }
    }

    func appendConfigurationPayload(_ d: DeviceDeclarations, to out: inout [UInt8]) {
        let (parts, holes) = templates[d.variant]
        for i in 0..<parts.count {
            parts[i].withUnsafeBufferPointer { out.append(contentsOf: $0) }
            if i < holes.count { Self.appendAssetIdentifier(d.assets[holes[i]], to: &out) }
        }
    }

    /// `appconfig.asset.<32 hex>`, or for a credential document `appconfig.credential.<32 hex>`.
    static func appendAssetIdentifier(_ a: DeviceDeclarations.Asset, to out: inout [UInt8]) {
        appendIdentifier(a.credential == nil ? assetPrefix : credentialPrefix, a.name, to: &out)
    }

    func appendActivationPayload(_ d: DeviceDeclarations, to out: inout [UInt8]) {
        JSONText.append(#"{"StandardConfigurations":[""#, to: &out)
        Self.appendIdentifier(Self.configurationPrefix, d.identity, to: &out)
        JSONText.append(#""]}"#, to: &out)
    }

    /// `{"Identifier":…,"Payload":…,"ServerToken":…,"Type":…}` and a line feed (a declarations.jsonl
    /// line; a declaration file's text).
    private func appendDeclaration(_ type: StaticString, identifier: (inout [UInt8]) -> Void, payload: (inout [UInt8]) -> Void,
                                   token: (inout [UInt8]) -> Void, to out: inout [UInt8]) {
        JSONText.append(#"{"Identifier":""#, to: &out)
        identifier(&out)
        JSONText.append(#"","Payload":"#, to: &out)
        payload(&out)
        JSONText.append(#","ServerToken":""#, to: &out)
        token(&out)
        JSONText.append(#"","Type":""#, to: &out)
        JSONText.append(type, to: &out)
        JSONText.append("\"}\n", to: &out)
    }

    /// The asset's declaration: `com.apple.asset.data`, or a credential's `com.apple.asset.credential.*`
    /// (with `Authentication` `MDM` when its document holds a secret).
    func appendAssetDeclaration(_ a: DeviceDeclarations.Asset, to out: inout [UInt8]) {
        JSONText.append(#"{"Identifier":""#, to: &out)
        Self.appendAssetIdentifier(a, to: &out)
        JSONText.append(#"","Payload":{"#, to: &out)
        if a.credential?.secret == true { JSONText.append(#""Authentication":{"Type":"MDM"},"#, to: &out) }
        JSONText.append(#""Reference":{"ContentType":"#, to: &out)
        JSONText.appendString(a.credential?.contentType ?? Self.contentType, to: &out)
        JSONText.append(#","DataURL":""#, to: &out)
        out += a.credential?.secret == true ? secretURLPrefix : urlPrefix
        a.data.appendHex(to: &out)
        JSONText.append(#"","Hash-SHA-256":""#, to: &out)
        a.data.appendHex(to: &out)
        JSONText.append(#"","Size":"#, to: &out)
        Self.appendDecimal(a.size, to: &out)
        JSONText.append(#"}},"ServerToken":""#, to: &out)
        Self.appendToken(a.name, asset: true, to: &out)
        JSONText.append(#"","Type":"#, to: &out)
        JSONText.appendString(a.credential?.type ?? "com.apple.asset.data", to: &out)
        JSONText.append("}\n", to: &out)
    }

    /// The AppManaged configuration (`com.apple.configuration.app.managed`).
    func appendConfiguration(_ d: DeviceDeclarations, to out: inout [UInt8]) {
        appendDeclaration("com.apple.configuration.app.managed", identifier: { Self.appendIdentifier(Self.configurationPrefix, d.identity, to: &$0) },
                          payload: { appendConfigurationPayload(d, to: &$0) },
                          token: { Self.appendToken(d.configurationToken, to: &$0) }, to: &out)
    }

    /// The activation (`com.apple.activation.simple`) naming the configuration.
    func appendActivation(_ d: DeviceDeclarations, to out: inout [UInt8]) {
        appendDeclaration("com.apple.activation.simple", identifier: { Self.appendIdentifier(Self.activationPrefix, d.identity, to: &$0) },
                          payload: { appendActivationPayload(d, to: &$0) },
                          token: { Self.appendToken(d.activationToken, to: &$0) }, to: &out)
    }

    /// `{"device":KEY,"declarations":[activation, configuration, assets…]`: a set's opening.
    func appendSetOpening(key: ByteView, _ d: DeviceDeclarations, to out: inout [UInt8]) {
        JSONText.append(#"{"device":"#, to: &out)
        JSONText.appendString(key, to: &out)
        JSONText.append(#","declarations":[""#, to: &out)
        Self.appendIdentifier(Self.activationPrefix, d.identity, to: &out)
        JSONText.append(#"",""#, to: &out)
        Self.appendIdentifier(Self.configurationPrefix, d.identity, to: &out)
        for a in d.assets {
            JSONText.append(#"",""#, to: &out)
            Self.appendAssetIdentifier(a, to: &out)
        }
        JSONText.append(#""]"#, to: &out)
    }

    /// The device's line of `index.jsonl` (its set, the set file's path in the files layout, its
    /// digest, the assignments' fields), or with `indexFields` nil its set file.
    func appendSet(key: ByteView, _ d: DeviceDeclarations, path: Bool, indexFields: ByteView, to out: inout [UInt8]) {
        appendSetOpening(key: key, d, to: &out)
        if path {
            JSONText.append(#","path":""#, to: &out)
            OutputNames.appendRelativePath(key, extension: ".json", to: &out)
            out.append(UInt8(ascii: "\""))
        }
        JSONText.append(#","sha256":""#, to: &out)
        d.digest.appendHex(to: &out)
        out.append(UInt8(ascii: "\""))
        out.append(contentsOf: indexFields)
        JSONText.append("}\n", to: &out)
    }

    /// The set of a device gone from the fleet (`--remove-missing`): empty, so the server removes
    /// the app's declarations from it, and the device the app.
    static func appendEmptySet(key: ByteView, path: Bool, to out: inout [UInt8]) {
        JSONText.append(#"{"device":"#, to: &out)
        JSONText.appendString(key, to: &out)
        JSONText.append(#","declarations":[]"#, to: &out)
        if path {
            JSONText.append(#","path":""#, to: &out)
            OutputNames.appendRelativePath(key, extension: ".json", to: &out)
            out.append(UInt8(ascii: "\""))
        }
        JSONText.append(#","removed":true}"#, to: &out)
        out.append(0x0A)
    }

    /// `assets/<sha256>.plist`: the asset's file; a credential document's `assets/<sha256>.json`
    /// (`.pem`, `.der`), or `secret-assets/...` when it holds a secret.
    static func appendAssetPath(_ a: DeviceDeclarations.Asset, to out: inout [UInt8]) {
        if a.credential?.secret == true { JSONText.append("secret-", to: &out) }
        JSONText.append("assets/", to: &out)
        a.data.appendHex(to: &out)
        if let c = a.credential { out += c.fileExtension.utf8 } else { JSONText.append(".plist", to: &out) }
    }

    static func assetPath(_ a: DeviceDeclarations.Asset) -> String {
        var out: [UInt8] = []
        appendAssetPath(a, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// An asset declaration's file (`--ddm-layout files`): `declarations/<its Identifier>.json`.
    static func declarationPath(of a: DeviceDeclarations.Asset) -> String {
        declarationPath(a.credential == nil ? assetPrefix : credentialPrefix, a.name)
    }

    static func declarationPath(_ prefix: StaticString, _ digest: SHA256Digest) -> String {
        var out = Array("declarations/".utf8)
        appendIdentifier(prefix, digest, to: &out)
        out += ".json".utf8
        return String(decoding: out, as: UTF8.self)
    }
}
