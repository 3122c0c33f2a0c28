import AppConfigCore
import AppConfigOutput
import AppConfigSpec
import Digest

extension DeclarationBuilder {
    // MARK: Writing

    static func appendIdentifier(_ prefix: StaticString, _ digest: SHA256Digest, to out: inout [UInt8]) {
        out.append(room: 64) { $0.writeIdentifier(prefix, digest) }
    }

    func appendConfigurationPayload(_ d: DeviceDeclarations, to out: inout [UInt8]) {
        let (parts, holes) = templates[d.variant]
        for i in 0..<parts.count {
            out.append(contentsOf: parts[i])
            if i < holes.count { Self.appendAssetIdentifier(d.assets[holes[i]], to: &out) }
        }
    }

    /// `appconfig.asset.<32 hex>`, or for a credential document `appconfig.credential.<32 hex>`.
    static func appendAssetIdentifier(_ a: DeviceDeclarations.Asset, to out: inout [UInt8]) {
        appendIdentifier(a.identifierPrefix, a.name, to: &out)
    }

    func appendActivationPayload(_ d: DeviceDeclarations, to out: inout [UInt8]) {
        out.append(room: 128) { w in
            w.write(#"{"StandardConfigurations":[""#)
            w.writeIdentifier(Self.configurationPrefix, d.identity)
        }
        if let s = statusSubscription {
            JSONText.append(#"",""#, to: &out)
            out += s.identifier
        }
        JSONText.append(#""]}"#, to: &out)
    }

    /// `{"Identifier":…,"Payload":…,"ServerToken":…,"Type":…}` and a line feed (a declarations.jsonl
    /// line; a declaration file's text): the Identifier `prefix` and `identity`'s, the token
    /// `token`'s. The fixed text around the payload in one write each (an append per piece through
    /// the array was most of writing a device's declarations).
    private func appendDeclaration(_ type: StaticString, identifier prefix: StaticString, _ identity: SHA256Digest, token: SHA256Digest,
                                   payload: (inout [UInt8]) -> Void, to out: inout [UInt8]) {
        out.append(room: 128) { w in
            w.write(#"{"Identifier":""#)
            w.writeIdentifier(prefix, identity)
            w.write(#"","Payload":"#)
        }
        payload(&out)
        out.append(room: 128 + type.utf8CodeUnitCount) { w in
            w.write(#","ServerToken":""#)
            w.writeToken(token, asset: false)
            w.write(#"","Type":""#)
            w.write(type)
            w.write("\"}\n")
        }
    }

    /// The asset's declaration: `com.apple.asset.data`, or a credential's `com.apple.asset.credential.*`
    /// (with `Authentication` `MDM` when its document holds a secret). Its fixed text and digests in
    /// one write (a configuration's data asset) or two around a credential's content type, over
    /// stack room sized from the text (an append per piece through the array was most of writing
    /// a device's declarations).
    func appendAssetDeclaration(_ a: DeviceDeclarations.Asset, to out: inout [UInt8]) {
        let credential = a.credential, secret = a.credential?.secret == true
        out.append(room: 192) { w in
            w.write(#"{"Identifier":""#)
            w.writeIdentifier(a.identifierPrefix, a.name)
            w.write(#"","Payload":{"#)
            if secret { w.write(#""Authentication":{"Type":"MDM"},"#) }
            w.write(#""Reference":{"ContentType":"#)
            if credential == nil { w.writeQuoted(Self.contentType) }
        }
        if let credential { JSONText.appendString(credential.contentType, to: &out) }
        (secret ? secretURLPrefix : urlPrefix).withView { url in
            out.append(room: 320 + url.count) { w in
                w.write(#","DataURL":""#)
                w.write(url)
                w.write(hex: a.data)
                if secret && !delivery.secretAssetHash {
                    w.write(#"","Size":"#)
                } else {
                    w.write(#"","Hash-SHA-256":""#)
                    w.write(hex: a.data)
                    w.write(#"","Size":"#)
                }
                w.write(decimal: a.size)
                w.write(#"}},"ServerToken":""#)
                w.writeToken(a.name, asset: true)
                w.write(#"","Type":"#)
                if credential == nil {
                    w.writeQuoted(Self.dataAssetType)
                    w.write("}\n")
                }
            }
        }
        if let credential {
            JSONText.appendString(credential.type, to: &out)
            JSONText.append("}\n", to: &out)
        }
    }

    /// The AppManaged configuration (`com.apple.configuration.app.managed`).
    func appendConfiguration(_ d: DeviceDeclarations, to out: inout [UInt8]) {
        appendDeclaration("com.apple.configuration.app.managed", identifier: Self.configurationPrefix, d.identity, token: d.configurationToken,
                          payload: { appendConfigurationPayload(d, to: &$0) }, to: &out)
    }

    /// The activation (`com.apple.activation.simple`) naming the configuration.
    func appendActivation(_ d: DeviceDeclarations, to out: inout [UInt8]) {
        appendDeclaration("com.apple.activation.simple", identifier: Self.activationPrefix, d.identity, token: d.activationToken,
                          payload: { appendActivationPayload(d, to: &$0) }, to: &out)
    }

    /// `{"device":KEY,"declarations":[activation, configuration, status subscription, assets…]`: a set's opening.
    func appendSetOpening(key: ByteView, _ d: DeviceDeclarations, to out: inout [UInt8]) {
        JSONText.append(#"{"device":"#, to: &out)
        JSONText.appendString(key, to: &out)
        out.append(room: 160 + 64 * d.assets.count) { w in
            w.write(#","declarations":[""#)
            w.writeIdentifier(Self.activationPrefix, d.identity)
            w.write(#"",""#)
            w.writeIdentifier(Self.configurationPrefix, d.identity)
        }
        if let s = statusSubscription {
            JSONText.append(#"",""#, to: &out)
            out += s.identifier
        }
        out.append(room: 96 + 64 * d.assets.count) { w in
            for a in d.assets {
                w.write(#"",""#)
                w.writeIdentifier(a.identifierPrefix, a.name)
            }
            w.write(#""]"#)
        }
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
        out.append(room: 80) { w in
            w.write(#","sha256":""#)
            w.write(hex: d.digest)
            w.write(UInt8(ascii: "\""))
        }
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
        declarationPath(a.identifierPrefix, a.name)
    }

    static func declarationPath(_ prefix: StaticString, _ digest: SHA256Digest) -> String {
        var out = Array("declarations/".utf8)
        appendIdentifier(prefix, digest, to: &out)
        out += ".json".utf8
        return String(decoding: out, as: UTF8.self)
    }
}

extension ByteWriter {
    /// A declaration's Identifier: `prefix` and the digest's first 32 hex digits.
    @inline(__always)
    mutating func writeIdentifier(_ prefix: StaticString, _ digest: SHA256Digest) {
        write(prefix)
        write(hex: digest, digits: DeclarationBuilder.identifierDigits)
    }

    /// A token's 32 hex digits: the digest's first (a content hash), or for an asset its name's
    /// last (the first 32 of the digest with its halves swapped).
    @inline(__always)
    mutating func writeToken(_ digest: SHA256Digest, asset: Bool) {
        let d = asset ? SHA256Digest(a: digest.c, b: digest.d, c: digest.a, d: digest.b) : digest
        write(hex: d, digits: DeclarationBuilder.tokenDigits)
    }

    /// `"text"`, for text that needs no JSON escape (a constant of the code).
    @inline(__always)
    mutating func writeQuoted(_ text: StaticString) {
        write(UInt8(ascii: "\""))
        write(text)
        write(UInt8(ascii: "\""))
    }

    /// A non-negative integer's decimal digits.
    mutating func write(decimal value: Int) {
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)
        withUnsafeMutableBytes(of: &digits) { d in
            var v = value, i = 24
            repeat {
                i -= 1
                d[i] = UInt8(ascii: "0") + UInt8(v % 10)
                v /= 10
            } while v > 0
            for b in d[i..<24] { write(b) }
        }
    }
}
