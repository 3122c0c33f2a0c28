import AppConfigCore

/// A secret the ManagedApp framework hands the app apart from its configuration (iOS 18.4): a
/// password, a certificate, or an identity (a PKCS#12 file, or one the device makes itself by
/// SCEP or ACME). Given in a values file's `credentials` array; each is rendered per device into
/// the JSON document of Apple's credential type (a certificate: the certificate file itself),
/// delivered as a `com.apple.asset.credential.*` asset that AppManaged's `AppConfig` names.
public struct Credential: Sendable {
    public enum Kind: String, Sendable, CaseIterable {
        case password, certificate, identity, scep, acme

        /// The asset declaration's type.
        public var assetType: String {
            switch self {
            case .password: "com.apple.asset.credential.userpassword"
            case .certificate: "com.apple.asset.credential.certificate"
            case .identity: "com.apple.asset.credential.identity"
            case .scep: "com.apple.asset.credential.scep"
            case .acme: "com.apple.asset.credential.acme"
            }
        }

        /// The `AppConfig` array that names it.
        public var appConfigArray: String {
            switch self {
            case .password: "Passwords"
            case .certificate: "Certificates"
            case .identity, .scep, .acme: "Identities"
            }
        }

        /// The document's fields, as Apple's credential schemas spell them.
        public var fields: [CredentialFieldRule] { CredentialFieldRule.rules[self]! }
    }

    /// The name the app looks the credential up by (its vendor documents it).
    public var identifier: String
    public var kind: Kind
    /// The document's fields, sorted by name.
    public var fields: [CredentialField]
    public var location: Location

    /// Whether the document holds a secret (a `{"secret": NAME}` value, or an identity's private
    /// key): it then goes to `secret-assets/`, fetched with MDM authentication.
    /// An ACME document's `ClientIdentifier` is a one-time code the ACME server may trust: secret too.
    public var holdsSecret: Bool { kind == .identity || kind == .acme || fields.contains { $0.value.holdsSecret } }

    /// Every variable its templates read (file paths included).
    public var variables: [Variable] {
        var out: [Variable] = []
        func visit(_ v: CredentialValue) {
            switch v {
            case .string(let t), .file(let t): for x in t.variables where !out.contains(x) { out.append(x) }
            case .array(let items): items.forEach(visit)
            case .dictionary(let fields): fields.forEach { visit($0.value) }
            case .integer, .boolean, .secret: break
            }
        }
        fields.forEach { visit($0.value) }
        return out
    }
}

public struct CredentialField: Sendable {
    public var name: String
    public var value: CredentialValue
    public var location: Location
}

public indirect enum CredentialValue: Sendable {
    /// A string, with variables and filters as in values.
    case string(StringTemplate)
    case integer(Int64)
    case boolean(Bool)
    /// `{"secret": NAME}`: supplied by `--secret NAME=...`, never written in a values file.
    case secret(String)
    /// `{"file": PATH}`: a file's bytes (a PKCS#12 identity, a certificate); the path may be a
    /// template (`identities/$(userName).p12`).
    case file(StringTemplate)
    case array([CredentialValue])
    case dictionary([CredentialField])

    var holdsSecret: Bool {
        switch self {
        case .secret: true
        case .array(let items): items.contains { $0.holdsSecret }
        case .dictionary(let fields): fields.contains { $0.value.holdsSecret }
        default: false
        }
    }
}

/// One field of a credential document: its name, its shape, whether it is required, the values
/// allowed (Apple's rangelists).
public struct CredentialFieldRule: Sendable {
    public enum Shape: Sendable {
        case string, integer, boolean
        /// Bytes: from a file (`{"file": PATH}`), base64 in the document.
        case data
        /// A secret string: only `{"secret": NAME}`.
        case secret
        /// An X.500 name: an array of RDNs, each an array of `[OID or name, value]` pairs.
        case subject
        /// `rfc822Name`, `dNSName`, `uniformResourceIdentifier`, `ntPrincipalName`: strings.
        case subjectAltName
        case strings
    }

    public var name: String
    public var shape: Shape
    public var required = false
    public var allowedStrings: [String]? = nil
    public var allowedIntegers: [Int64]? = nil

    static let subjectAltNames = ["dNSName", "ntPrincipalName", "rfc822Name", "uniformResourceIdentifier"]

    static let rules: [Credential.Kind: [CredentialFieldRule]] = [
        .password: [.init(name: "Password", shape: .secret), .init(name: "UserName", shape: .string, required: true)],
        .identity: [.init(name: "Identity", shape: .data, required: true), .init(name: "Password", shape: .secret, required: true)],
        .certificate: [.init(name: "Certificate", shape: .data, required: true)],
        .acme: [
            .init(name: "Attest", shape: .boolean), .init(name: "ClientIdentifier", shape: .string, required: true),
            .init(name: "DirectoryURL", shape: .string, required: true), .init(name: "ExtendedKeyUsage", shape: .strings),
            .init(name: "HardwareBound", shape: .boolean, required: true), .init(name: "KeySize", shape: .integer, required: true),
            .init(name: "KeyType", shape: .string, required: true, allowedStrings: ["RSA", "ECSECPrimeRandom"]),
            .init(name: "Subject", shape: .subject, required: true), .init(name: "SubjectAltName", shape: .subjectAltName),
            .init(name: "UsageFlags", shape: .integer),
        ],
        .scep: [
            .init(name: "CAFingerprint", shape: .data), .init(name: "Challenge", shape: .secret),
            .init(name: "Key Type", shape: .string, allowedStrings: ["RSA"]), .init(name: "Key Usage", shape: .integer),
            .init(name: "Keysize", shape: .integer, allowedIntegers: [1024, 2048, 4096]), .init(name: "Name", shape: .string),
            .init(name: "Retries", shape: .integer), .init(name: "RetryDelay", shape: .integer),
            .init(name: "Subject", shape: .subject), .init(name: "SubjectAltName", shape: .subjectAltName),
            .init(name: "URL", shape: .string, required: true),
        ],
    ]
}

/// Reads a `credentials` array against Apple's credential schemas, every problem with its place
/// (`credential.syntax`, `credential.field`, `credential.duplicate-identifier`).
struct CredentialReader {
    var log: ProblemLog

    mutating func read(_ raw: RawValue) -> [Credential] {
        guard case .array(let items) = raw.kind else {
            log.report(.credentialSyntax, at: raw.location, "\"credentials\" is a list of credentials, not \(raw.typeName)")
            return []
        }
        return FirstOfEachName.firsts(of: items, read: { credential($0, number: $1) }, name: { ($0.identifier, $0.location) }) { c, first in
            log.report(.credentialDuplicateIdentifier, at: c.location, "two credentials are named \"\(c.identifier)\"; the first is at line \(first.line)",
                       hint: "the app looks each up by its identifier: give each its own")
        }
    }

    private mutating func credential(_ raw: RawValue, number: Int) -> Credential? {
        guard case .dictionary(let members) = raw.kind else {
            log.report(.credentialSyntax, at: raw.location, "credential \(number) is \(raw.typeName), not a dictionary with identifier, kind and its fields")
            return nil
        }
        var identifier: String?, kind: Credential.Kind?
        var rest: [RawValue.Member] = []
        for m in members {
            switch m.key {
            case "identifier":
                if case .string(let s) = m.value.kind, !s.isEmpty { identifier = s } else {
                    log.report(.credentialSyntax, at: m.value.location, "a credential's identifier is a non-empty string, not \(m.value.isEmptyString ? "an empty one" : m.value.typeName)")
                }
            case "kind":
                if case .string(let s) = m.value.kind, let k = Credential.Kind(rawValue: s) { kind = k } else {
                    log.report(.credentialSyntax, at: m.value.location, "a credential's kind is one of \(Credential.Kind.allCases.map(\.rawValue).joined(separator: ", "))")
                }
            default: rest.append(m)
            }
        }
        guard let identifier, let kind else {
            if identifier == nil && kind == nil || members.allSatisfy({ $0.key != "identifier" }) || members.allSatisfy({ $0.key != "kind" }) {
                log.report(.credentialSyntax, at: raw.location, "credential \(number) needs an identifier and a kind")
            }
            return nil
        }
        let rules = kind.fields
        var fields: [CredentialField] = []
        for m in rest {
            guard let rule = rules.first(where: { $0.name == m.key }) else {
                let hint = ContentChecker.suggestion(for: m.key, among: rules.map(\.name)).map { "did you mean \"\($0)\"?" }
                log.report(.credentialField, at: m.keyLocation, "a \(kind.rawValue) credential has no field \"\(m.key)\" (its fields: \(rules.map(\.name).joined(separator: ", ")))", hint: hint)
                continue
            }
            if let v = value(m.value, rule, field: m.key) { fields.append(CredentialField(name: m.key, value: v, location: m.value.location)) }
        }
        for rule in rules where rule.required && !rest.contains(where: { $0.key == rule.name }) {
            log.report(.credentialField, at: raw.location, "a \(kind.rawValue) credential needs \(rule.name)")
        }
        fields.sort { Array($0.name.utf8).lexicographicallyPrecedes(Array($1.name.utf8)) }
        return Credential(identifier: identifier, kind: kind, fields: fields, location: raw.location)
    }

    private mutating func value(_ raw: RawValue, _ rule: CredentialFieldRule, field: String) -> CredentialValue? {
        func wrong(_ want: String) -> CredentialValue? {
            log.report(.credentialField, at: raw.location, "\(field) takes \(want), not \(raw.typeName)")
            return nil
        }
        let special = Self.special(raw)
        switch rule.shape {
        case .secret:
            if case .secret(let name)? = special { return .secret(name) }
            if case .string = raw.kind {
                log.report(.credentialField, at: raw.location, "\(field) is a secret: give it as {\"secret\": NAME} and its value with --secret NAME=..., never in a values file")
                return nil
            }
            return wrong("{\"secret\": NAME}")
        case .data:
            if case .file(let path)? = special { return template(path, at: raw.location, field: field).map(CredentialValue.file) }
            return wrong("{\"file\": PATH} (the file's bytes)")
        case .string:
            if case .secret(let name)? = special { return .secret(name) }
            guard case .string(let s) = raw.kind else { return wrong("a string") }
            if let allowed = rule.allowedStrings, !allowed.contains(s) {
                log.report(.credentialField, at: raw.location, "\(field) is one of \(allowed.joined(separator: ", ")), not \"\(s)\"")
                return nil
            }
            return template(s, at: raw.location, field: field).map(CredentialValue.string)
        case .integer:
            guard case .integer(let i) = raw.kind else { return wrong("an integer") }
            if let allowed = rule.allowedIntegers, !allowed.contains(i) {
                log.report(.credentialField, at: raw.location, "\(field) is one of \(allowed.map(String.init).joined(separator: ", ")), not \(i)")
                return nil
            }
            return .integer(i)
        case .boolean:
            guard case .boolean(let b) = raw.kind else { return wrong("true or false") }
            return .boolean(b)
        case .strings:
            guard case .array(let items) = raw.kind else { return wrong("a list of strings") }
            var out: [CredentialValue] = []
            for item in items {
                guard case .string(let s) = item.kind, let t = template(s, at: item.location, field: field) else {
                    if case .string = item.kind {} else { log.report(.credentialField, at: item.location, "\(field) is a list of strings, not of \(item.typeName)") }
                    return nil
                }
                out.append(.string(t))
            }
            return .array(out)
        case .subjectAltName:
            guard case .dictionary(let members) = raw.kind else { return wrong("a dictionary of rfc822Name, dNSName, uniformResourceIdentifier, ntPrincipalName") }
            var fields: [CredentialField] = []
            for m in members {
                guard CredentialFieldRule.subjectAltNames.contains(m.key) else {
                    log.report(.credentialField, at: m.keyLocation, "SubjectAltName has no \"\(m.key)\" (its names: \(CredentialFieldRule.subjectAltNames.joined(separator: ", ")))")
                    return nil
                }
                guard case .string(let s) = m.value.kind, let t = template(s, at: m.value.location, field: m.key) else {
                    if case .string = m.value.kind {} else { log.report(.credentialField, at: m.value.location, "\(m.key) takes a string, not \(m.value.typeName)") }
                    return nil
                }
                fields.append(CredentialField(name: m.key, value: .string(t), location: m.value.location))
            }
            fields.sort { Array($0.name.utf8).lexicographicallyPrecedes(Array($1.name.utf8)) }
            return .dictionary(fields)
        case .subject:
            // [[["CN", "$(udid)"]], [["O", "Example"]]]: RDNs, each a list of [type, value] pairs.
            guard case .array(let rdns) = raw.kind, !rdns.isEmpty else { return wrong("a list of RDNs, each a list of [type, value] pairs: [[[\"CN\", \"$(udid)\"]]]") }
            var out: [CredentialValue] = []
            for rdn in rdns {
                guard case .array(let pairs) = rdn.kind, !pairs.isEmpty else {
                    log.report(.credentialField, at: rdn.location, "each RDN of \(field) is a list of [type, value] pairs, not \(rdn.typeName)")
                    return nil
                }
                var pairValues: [CredentialValue] = []
                for pair in pairs {
                    guard case .array(let two) = pair.kind, two.count == 2, case .string(let type) = two[0].kind, !type.isEmpty,
                          case .string(let text) = two[1].kind, let t = template(text, at: two[1].location, field: field) else {
                        log.report(.credentialField, at: pair.location, "each pair of \(field) is [type, value], two strings such as [\"CN\", \"$(udid)\"]")
                        return nil
                    }
                    pairValues.append(.array([.string(.literal(type)), .string(t)]))
                }
                out.append(.array(pairValues))
            }
            return .array(out)
        }
    }

    /// `{"secret": NAME}` or `{"file": PATH}`.
    private enum Special { case secret(String), file(String) }

    private static func special(_ raw: RawValue) -> Special? {
        guard case .dictionary(let members) = raw.kind, members.count == 1, case .string(let s) = members[0].value.kind, !s.isEmpty else { return nil }
        switch members[0].key {
        case "secret": return .secret(s)
        case "file": return .file(s)
        default: return nil
        }
    }

    private mutating func template(_ text: String, at location: Location, field: String) -> StringTemplate? {
        switch StringTemplate.parse(text) {
        case .success(let (t, _)): return t
        case .failure(let error):
            log.report(.credentialField, at: location, "\(field): \(error)")
            return nil
        }
    }
}
