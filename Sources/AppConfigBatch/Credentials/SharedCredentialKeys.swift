import AppConfigCore
import AppConfigSources
import AppConfigSpec

/// Devices whose users share what a per-user credential is found by: the key of a per-user secret
/// (`sAMAccountName` of `passwords.csv`) or the path a file template makes. Two users with one key
/// (one copied the other's `uid` into their own entry) would each be given the other's password or
/// identity: both users' devices fail instead (`credential.shared-key`), naming the two users. A
/// user with several devices shares with no one.
struct SharedCredentialKeys {
    /// Per row that fails, the problem's message.
    private(set) var conflicts: [Int: String] = [:]

    init(credentials: [[Credential]], fleet: Fleet, secrets: SecretStore) throws(Problem) {
        // What finds each credential: a keyed secret's key variable, a file template's variables.
        var keyed: [(what: String, variable: Variable)] = []
        var files: [(what: String, template: StringTemplate)] = []
        for c in credentials.joined() {
            for name in CredentialRenderer.secretNames(c) {
                if let v = secrets.keyVariable(of: name), !keyed.contains(where: { $0.what == "the secret \"\(name)\"" }) {
                    keyed.append(("the secret \"\(name)\"", v))
                }
            }
            for field in c.fields {
                if case .file(let t) = field.value, !t.variables.isEmpty, !files.contains(where: { $0.template == t }) {
                    files.append(("the file \(t)", t))
                }
            }
        }
        guard !keyed.isEmpty || !files.isEmpty else { return }
        var variables: [Variable] = keyed.map(\.variable)
        for f in files { for v in f.template.variables where !variables.contains(v) { variables.append(v) } }
        let plan = try fleet.plan(for: variables)
        // Per key: the first user seen with it, and its rows.
        var owners: [String: (user: String, rows: [Int], others: [String])] = [:]
        for row in 0..<fleet.deviceCount {
            var values: [Variable: String] = [:]
            fleet.forEachValue(row: row, plan: plan) { slot, bytes in
                if let bytes, !bytes.isEmpty { values[plan.variables[slot]] = String(decoding: bytes, as: UTF8.self) }
            }
            let user = Self.user(row, fleet)
            var keys: [String] = []
            for k in keyed { if let value = values[k.variable] { keys.append(k.what + " by $(\(k.variable)) \"" + Problem.printable(value) + "\"") } }
            for f in files {
                // The path as the render makes it, filters applied.
                let parts = f.template.parts.map { CredentialRenderer.text(of: $0, values: values) }
                if !parts.contains(nil) { keys.append(f.what + " as \"" + Problem.printable(parts.map { $0! }.joined()) + "\"") }
            }
            for key in keys {
                if var entry = owners[key] {
                    if entry.user != user && !entry.others.contains(user) { entry.others.append(user) }
                    entry.rows.append(row)
                    owners[key] = entry
                } else {
                    owners[key] = (user, [row], [])
                }
            }
        }
        for (key, entry) in owners where !entry.others.isEmpty {
            let users = ([entry.user] + entry.others).prefix(3).joined(separator: " and ")
            for row in entry.rows where conflicts[row] == nil {
                conflicts[row] = "\(key) is given by two users, \(users): neither is given a credential another user's entry also finds"
            }
        }
    }

    /// Who a row's user is: their directory entry, else the inventory's user key, else the device.
    private static func user(_ row: Int, _ fleet: Fleet) -> String {
        if let u = fleet.user(ofRow: row), let users = fleet.users { return Problem.printable(users.string(user: u, .dn) ?? "user \(u)") }
        if let slot = fleet.inventory.userKeySlot { return Problem.printable(fleet.inventory.string(row: row, slot: slot)) }
        return "the device " + Problem.printable(fleet.inventory.location(of: row).device ?? String(row))
    }
}
