import AppConfigCore
import AppConfigOutput
import AppConfigRender
import AppConfigSources
import AppConfigSpec
import Digest
import Foundation

/// Renders each device's credential documents: templates resolved against its variables (as
/// values are, filters included), secrets from the `SecretStore` (a per-user one by the device's
/// key variable), files read and checked (a PKCS#12 identity opened with its password, a
/// certificate parsed). Stateless per device: called from every worker at once.
final class CredentialRenderer: @unchecked Sendable {
    /// Per variant (a set of assignments), its credentials in order, the extensions' after the app's.
    let credentials: [[Credential]]
    private let plans: [Fleet.SlotPlan]
    private let fleet: Fleet
    private let secrets: SecretStore
    private let assetKey: SecretAssetKey?
    private let shared: SharedCredentialKeys
    /// Certificates found expired while rendering (their paths), warned of once after the render.
    private let expired = LockedSet()

    /// `credentials`: per variant, the app's; `extensionCredentials`: each extension's, rendered
    /// after the app's for every device (in that order: the order of their assets).
    init(credentials: [[Credential]], extensionCredentials: [[Credential]] = [], fleet: Fleet, secrets: SecretStore,
         assetKey: SecretAssetKey? = nil) throws(Problem) {
        self.assetKey = assetKey
        let credentials = credentials.map { $0 + extensionCredentials.joined() }
        self.credentials = credentials
        self.fleet = fleet
        self.secrets = secrets
        var plans: [Fleet.SlotPlan] = []
        for list in credentials {
            var variables: [Variable] = []
            for c in list {
                for v in c.variables where !variables.contains(v) { variables.append(v) }
                for name in Self.secretNames(c) {
                    guard secrets.has(name) else {
                        throw Problem(.secretSource, at: c.location, "credential \"\(c.identifier)\" names the secret \"\(name)\", which no --secret \(name)=... gives")
                    }
                    if let v = secrets.keyVariable(of: name), !variables.contains(v) { variables.append(v) }
                }
            }
            plans.append(try fleet.plan(for: variables))
        }
        self.plans = plans
        shared = try SharedCredentialKeys(credentials: credentials, fleet: fleet, secrets: secrets)
    }

    var isEmpty: Bool { credentials.allSatisfy(\.isEmpty) }

    /// The expired certificates delivered, each once: warnings for the run.
    func expiryWarnings() -> [Problem] {
        expired.sorted().map { path in
            var p = Problem(.credentialFile, at: Location(file: path), "the certificate in \(Problem.printable(path)) has expired: devices are given it, and it will not be trusted")
            p.severity = .warning
            return p
        }
    }

    /// A variable part's text for a device: its value (when empty, a `default:` filter's text), its
    /// filters applied; nil when it has none. A literal part's own text.
    static func text(of part: StringTemplate.Part, values: [Variable: String]) -> String? {
        switch part {
        case .literal(let s): return s
        case .variable(let v): return values[v].flatMap { $0.isEmpty ? nil : $0 }
        case .filtered(let v, let filters):
            var value = values[v] ?? ""
            if value.isEmpty, let d = filters.compactMap({ if case .defaultText(let t) = $0 { t } else { nil } }).first { value = d }
            guard !value.isEmpty else { return nil }
            for f in filters { value = f.applied(to: value) }
            return value
        }
    }

    static func secretNames(_ c: Credential) -> [String] {
        var out: [String] = []
        func visit(_ v: CredentialValue) {
            switch v {
            case .secret(let name): if !out.contains(name) { out.append(name) }
            case .array(let items): items.forEach(visit)
            case .dictionary(let fields): fields.forEach { visit($0.value) }
            default: break
            }
        }
        c.fields.forEach { visit($0.value) }
        return out
    }

    /// The device's documents, or its problems (each names the credential and field).
    func render(row: Int, variant: Int, problems: inout [Problem]) -> [RenderedCredential] {
        let list = credentials[variant]
        guard !list.isEmpty else { return [] }
        if let message = shared.conflicts[row] {
            problems.append(Problem(.credentialSharedKey, at: fleet.inventory.location(of: row), message))
            return []
        }
        let plan = plans[variant]
        var values: [Variable: String] = [:]
        fleet.forEachValue(row: row, plan: plan) { slot, bytes in
            if let bytes { values[plan.variables[slot]] = String(decoding: bytes, as: UTF8.self) }
        }
        var out: [RenderedCredential] = []
        let fleet = self.fleet
        let locate: (Variable?) -> Location = { v in v.map { fleet.source(of: $0, row: row) } ?? fleet.inventory.location(of: row) }
        for c in list {
            var context = Context(credential: c, values: values, secrets: secrets, locate: locate)
            if c.kind == .certificate {
                if case .file(let path)? = c.fields.first(where: { $0.name == "Certificate" })?.value,
                   let bytes = context.file(path, field: "Certificate") {
                    switch CredentialFiles.certificate(bytes) {
                    case .success(let certificate):
                        if certificate.expired { expired.insert(context.lastPath) }
                        out.append(RenderedCredential(assetType: c.kind.assetType, document: certificate.document, contentType: certificate.contentType, holdsSecret: false))
                    case .failure(let refused):
                        context.fail(.credentialFile, "Certificate", "\(Problem.printable(context.lastPath)) cannot be delivered: \(refused.reason)")
                    }
                }
            } else {
                var json: [UInt8] = []
                context.appendObject(c.fields, to: &json)
                if c.kind == .identity, context.problems.isEmpty { context.checkIdentity() }
                if context.problems.isEmpty {
                    let name = c.holdsSecret ? (assetKey ?? SecretAssetKey.random()).name(of: json) : nil
                    out.append(RenderedCredential(assetType: c.kind.assetType, document: json, contentType: "application/json", holdsSecret: c.holdsSecret, name: name))
                } else {
                    json.overwriteWithZeros()
                }
            }
            problems += context.problems
        }
        return problems.isEmpty ? out : []
    }

    /// A credential's document for `compile --delivery` with the variables given: each secret as
    /// `<secret NAME>`, each file as `<file PATH>` (nothing is read), missing variables as problems.
    static func preview(_ c: Credential, variables: [Variable: String], problems: inout [Problem]) -> [UInt8] {
        var context = Context(credential: c, values: variables, secrets: nil, locate: { _ in Location(file: "--var") })
        var out: [UInt8] = []
        context.appendObject(c.fields, to: &out)
        problems += context.problems
        return out
    }

    /// One credential's rendering: what it read, what went wrong. Without a secret store it
    /// previews: secrets and files are named, not read.
    private struct Context {
        let credential: Credential
        let values: [Variable: String]
        let secrets: SecretStore?
        /// Where a variable's value came from (or, nil, the device's row).
        let locate: (Variable?) -> Location
        var problems: [Problem] = []
        var lastPath = ""
        /// An identity's file and password, checked together once both are read.
        var identityFile: [UInt8]?
        var identityPassword: [UInt8]?

        mutating func fail(_ code: DeviceCode, _ field: String, _ message: String, variable: Variable? = nil) {
            // Never a value: a secret's or a file's bytes do not go into a report.
            problems.append(Problem(code, at: locate(variable), "credential \"\(credential.identifier)\", \(field): \(message)", variable: variable))
        }

        mutating func string(_ t: StringTemplate, field: String) -> String? {
            var out = ""
            for part in t.parts {
                switch part {
                case .literal(let s): out += s
                case .variable(let v), .filtered(let v, _):
                    guard let value = CredentialRenderer.text(of: part, values: values) else {
                        fail(.missingVariable, field, "$(\(v)) is missing for this device", variable: v)
                        return nil
                    }
                    out += value
                }
            }
            return out
        }

        mutating func secret(_ name: String, field: String) -> ByteView? {
            guard let secrets else { return nil }
            let keyVariable = secrets.keyVariable(of: name)
            let key = keyVariable.flatMap { values[$0] }
            guard let value = secrets.value(name, key: key) else {
                fail(.secretMissing, field, "the secret \"\(name)\" has no value for this device's \(keyVariable.map { "$(\($0))" } ?? "user")"
                     + (key.map { " \"\(Problem.printable($0))\"" } ?? " (missing)"), variable: keyVariable)
                return nil
            }
            return value
        }

        /// The file a `{"file": PATH}` template names for this device, read as `ConfinedFile`
        /// reads: the directory's values name a file in the template's folder, never another.
        mutating func file(_ path: StringTemplate, field: String) -> [UInt8]? {
            var missing = false
            do throws(ConfinedFile.Refusal) {
                let base = PathText.folder(of: credential.location.file)
                let (p, bytes) = try ConfinedFile.read(path, base: base, limit: 16 << 20) { (part: StringTemplate.Part) throws(ConfinedFile.Refusal) -> String in
                    guard let text = string(StringTemplate(parts: [part]), field: field) else {
                        missing = true
                        throw ConfinedFile.Refusal(reason: "")
                    }
                    return text
                }
                lastPath = p
                return bytes
            } catch {
                if !missing { fail(error.variable == nil ? .credentialFile : .credentialPath, field, error.reason, variable: error.variable) }
                return nil
            }
        }

        mutating func checkIdentity() {
            guard let bytes = identityFile, let password = identityPassword else { return }
            defer {
                identityPassword?.overwriteWithZeros()
                identityFile?.overwriteWithZeros()
            }
            if let why = CredentialFiles.identityProblem(bytes, password: password) {
                fail(.credentialFile, "Identity", "\(lastPath) cannot be used: \(why)")
            }
        }

        mutating func appendObject(_ fields: [CredentialField], to out: inout [UInt8]) {
            out.append(UInt8(ascii: "{"))
            for (i, f) in fields.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                appendJSONString(f.name.utf8, to: &out)
                out.append(UInt8(ascii: ":"))
                appendValue(f.value, field: f.name, to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }

        mutating func appendValue(_ v: CredentialValue, field: String, to out: inout [UInt8]) {
            switch v {
            case .string(let t): appendJSONString(Array((string(t, field: field) ?? "").utf8), to: &out)
            case .integer(let i): out += String(i).utf8
            case .boolean(let b): out += (b ? "true" : "false").utf8
            case .secret(let name):
                guard secrets != nil else { return appendJSONString(Array("<secret \(name)>".utf8), to: &out) }
                guard let value = secret(name, field: field) else { return out += "\"\"".utf8 }
                appendJSONString(value, to: &out)
                if credential.kind == .identity && field == "Password" { identityPassword = Array(value) }
            case .file(let path):
                guard secrets != nil else { return appendJSONString(Array("<file \(string(path, field: field) ?? "")>".utf8), to: &out) }
                guard var bytes = file(path, field: field) else { return out += "\"\"".utf8 }
                if credential.kind == .identity { identityFile = bytes }
                out.append(UInt8(ascii: "\""))
                out += Data(bytes).base64EncodedString().utf8
                out.append(UInt8(ascii: "\""))
                bytes.overwriteWithZeros()
            case .array(let items):
                out.append(UInt8(ascii: "["))
                for (i, item) in items.enumerated() {
                    if i > 0 { out.append(UInt8(ascii: ",")) }
                    appendValue(item, field: field, to: &out)
                }
                out.append(UInt8(ascii: "]"))
            case .dictionary(let fields): appendObject(fields, to: &out)
            }
        }
    }
}

/// `compile --delivery ddm`'s view of a credential: its document for the variables given, each
/// secret shown as `<secret NAME>` and each file as `<file PATH>`.
package enum CredentialPreview {
    package static func document(_ c: Credential, variables: [Variable: String], problems: inout [Problem]) -> [UInt8] {
        CredentialRenderer.preview(c, variables: variables, problems: &problems)
    }
}

/// A set of strings that workers add to at once.
final class LockedSet: @unchecked Sendable {
    private let lock = NSLock()
    private var items = Set<String>()

    func insert(_ item: String) { lock.withLock { _ = items.insert(item) } }
    func sorted() -> [String] { lock.withLock { items.sorted() } }
}
