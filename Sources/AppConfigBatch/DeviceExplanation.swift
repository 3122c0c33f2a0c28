import AppConfigCompiler
import AppConfigCore
import AppConfigRender
import AppConfigSources
import AppConfigSpec
import Foundation

extension RenderJob {
    /// The row `name` names: its device key or serial number, else (ASCII case aside) its user's
    /// e-mail address, user name or UPN, or the device's name (`Display Name`, `Name`...). Several
    /// devices of one user or name are listed, none chosen.
    static func row(named name: String, in fleet: Fleet) throws(Problem) -> Int {
        let inventory = fleet.inventory
        let serialSlot = inventory.variableSlots[.serialNumber]
        if let row = (0..<inventory.rowCount).first(where: { inventory.deviceKey($0) == name })
            ?? serialSlot.flatMap({ slot in (0..<inventory.rowCount).first { inventory.string(row: $0, slot: slot).caseInsensitiveCompare(name) == .orderedSame } }) {
            return row
        }
        let wanted = name.lowercased()
        var slots = inventory.preset.deviceNameColumns.compactMap(inventory.slot(ofColumn:))
        if let key = inventory.userKeySlot { slots.append(key) }
        slots += [UserVariable.emailAddress, .userName, .sAMAccountName, .upn].compactMap { inventory.userVariableSlots[$0] }
        let variables: [Variable] = [.user(.emailAddress), .user(.userName), .user(.sAMAccountName), .user(.upn)]
        let plan = fleet.users == nil ? nil : try? fleet.plan(for: variables)
        var matches: [Int] = []
        for row in 0..<inventory.rowCount {
            var found = slots.contains { inventory.string(row: row, slot: $0).lowercased() == wanted }
            if !found, let plan {
                fleet.forEachValue(row: row, plan: plan) { _, bytes in
                    if let bytes, String(decoding: bytes, as: UTF8.self).lowercased() == wanted { found = true }
                }
            }
            if found { matches.append(row) }
        }
        if matches.count == 1 { return matches[0] }
        if matches.count > 1 {
            let listed = matches.prefix(10).map { row in
                "\(Problem.printable(inventory.deviceKey(row)))" + (serialSlot.map { " (serial \(Problem.printable(inventory.string(row: row, slot: $0))))" } ?? "")
            }
            throw Problem(.explainUnknownDevice, at: Location(file: inventory.file),
                          "\"\(Problem.printable(name))\" names \(matches.count) devices: " + listed.joined(separator: ", ") + (matches.count > 10 ? ", ..." : "") + "; give one's device key")
        }
        let skipped = inventory.problems.first { $0.location.device == name }
        throw Problem(.explainUnknownDevice, at: Location(file: inventory.file),
                      "no device \"\(Problem.printable(name))\" in \(inventory.file) (its device key column is \"\(inventory.header[inventory.keptColumns[inventory.deviceKeySlot]])\"; a serial number, a user's e-mail address or name, or a device name find one too)"
                      + (skipped.map { "; its row was skipped: \($0.message)" } ?? ""))
    }

    /// `render --explain DEVICE`: one device as the job would render it, and why. Its row, its user
    /// and how it was joined, the assignments it matched, each variable it reads with the value
    /// and where the value came from, then its plist (XML, to be read). The fleet is loaded and
    /// joined as `run` does; nothing is written. Throws when no device has this key (or serial
    /// number); `failed` says whether the device fails to render (its errors are in the text).
    public func explain(_ device: String, observer: Observer = Observer()) throws -> (text: String, failed: Bool) {
        let configuration = try configuration(observer: observer)
        var sources = self.sources
        sources.attributes.readsGroups = (configuration.assignments + configuration.exclusions).contains { $0.conditions.contains { $0.subject == .group } }
        try sources.checkDirectory(warning: observer.warning)
        // Every column kept: a device may be named by a column no program reads (its name).
        let inventory = try sources.loadInventory(extraColumns: nil, matchColumns: configuration.matchColumns)
        let users = try sources.loadDirectory(for: inventory, warning: observer.warning)
        let fleet = Fleet(inventory: inventory, users: users)
        let row = try Self.row(named: device, in: fleet)
        let assignments = try DeviceAssignments.resolve(configuration, fleet: fleet, warning: observer.warning)
        let program = assignments.programs[assignments.variant(ofRow: row)]
        let mapping = SourceMapping(fleet: fleet, attributes: sources.attributes)

        // The inventory's and the directory's text is shown with control characters escaped, as every
        // diagnostic is: a value never sends raw escapes to the terminal.
        var lines = ["device \(Problem.printable(inventory.deviceKey(row))) (\(inventory.file):\(inventory.line(of: row)))"]
        let userKey = inventory.userKeySlot.map { (column: Problem.printable(inventory.header[inventory.keptColumns[$0]]), value: Problem.printable(inventory.string(row: row, slot: $0))) }
        if let userKey, userKey.value.isEmpty {
            lines.append("user: none (its \"\(userKey.column)\" is empty): its user variables are missing")
        } else if let userKey, let users {
            if let u = fleet.user(ofRow: row) {
                lines.append("user: \(Problem.printable(users.string(user: u, .dn) ?? "")) (\"\(userKey.column)\" \(userKey.value) = attribute \(sources.attributes.joinAttribute))")
            } else {
                lines.append("user: not found (no user has \(sources.attributes.joinAttribute) \(userKey.value) in \(users.source))")
            }
        } else if let userKey {
            lines.append("user: \(userKey.value) (\"\(userKey.column)\"; no directory: user variables come from the inventory's columns)")
        } else {
            lines.append("user: none (the inventory has no user key column)")
        }
        if assignments.excludedRows.contains(Int32(row)) {
            lines.append("excluded: the values file's \"exclude\" leaves this device out; the job renders nothing for it")
            return (lines.joined(separator: "\n") + "\n", false)
        }
        if !assignments.names.isEmpty {
            let applied = assignments.applied(toRow: row)
            lines.append("assignments: " + (applied.isEmpty ? "none" : applied.joined(separator: ", ")))
        }
        // The device's credentials (its variant's) and every variable they read, beside the program's.
        let variantCredentials = Self.credentials(configuration, assignments), variant = assignments.variant(ofRow: row)
        let credentials = variantCredentials.indices.contains(variant) ? variantCredentials[variant] : []
        let secrets = credentials.isEmpty ? SecretStore() : try SecretStore(self.secrets, timeout: secretTimeout, withheld: withheldEnvironment)
        defer { secrets.clear() }
        var read = program.slots
        for c in credentials {
            for v in c.variables where !read.contains(v) { read.append(v) }
            for name in CredentialRenderer.secretNames(c) { if let v = secrets.keyVariable(of: name), !read.contains(v) { read.append(v) } }
        }
        var values: [Variable: String] = [:]
        let plan = try fleet.plan(for: read)
        fleet.forEachValue(row: row, plan: plan) { slot, bytes in
            if let bytes { values[plan.variables[slot]] = String(decoding: bytes, as: UTF8.self) }
        }
        if !read.isEmpty { lines.append("variables:") }
        let width = read.map(\.description.count).max() ?? 0
        for v in read {
            let source: String
            if case .deviceAttribute(let column) = v { source = "column \"\(column)\"" }
            else { source = mapping.sources.first { $0.variable == v }?.source ?? "missing" }
            let value = values[v].map { "\"\(Problem.printable($0))\"" } ?? "(missing)"
            lines.append("  " + v.description.padding(toLength: width, withPad: " ", startingAt: 0) + " = \(value)  <- \(source)")
        }
        let renderer = Renderer(image: ProgramImage(program), format: .xml)
        let bytes: [UInt8]
        do {
            bytes = try renderer.renderCopy(values) { fleet.source(of: $0, row: row) }
            lines.append("output (XML; the job writes \(batch.format.rawValue)):")
            lines.append(String(decoding: bytes.last == 0x0A ? bytes.dropLast() : bytes[...], as: UTF8.self))
        } catch {
            lines.append("fails: \(error)")
            return (lines.joined(separator: "\n") + "\n", true)
        }
        let delivery = try self.delivery.resolved(specBundleID: program.metadata.bundleId)
        guard delivery.delivery == .ddm else { return (lines.joined(separator: "\n") + "\n", false) }
        // The declarations the device gets, each credential's document with its secrets named, and
        // the credentials rendered as the job renders them: a device the render fails, fails here.
        var previews: [(credential: Credential, document: [UInt8])] = []
        for c in credentials {
            var problems: [Problem] = []
            previews.append((c, CredentialRenderer.preview(c, variables: values, problems: &problems)))
        }
        // The asset in the job's format: its digest names it in the declarations.
        let asset = batch.format == .xml ? bytes : try Renderer(image: ProgramImage(program), format: batch.format).renderCopy(values) { fleet.source(of: $0, row: row) }
        let files = DeliveryPreview.files(key: inventory.deviceKey(row), rendered: asset, delivery: delivery, credentials: previews)
        lines.append("declarations (as --ddm-layout files names them\(credentials.isEmpty ? "" : "; " + DeliveryPreview.credentialNote)):")
        for file in files where file.name.hasSuffix(".json") {
            lines.append("# " + file.name)
            lines.append(String(decoding: file.bytes, as: UTF8.self).trimmingCharacters(in: .newlines))
        }
        for (c, document) in previews {
            lines.append("credential \(c.identifier) (\(c.kind.assetType)\(c.holdsSecret ? ", secret-assets/" : "")):")
            lines.append(String(decoding: document, as: UTF8.self))
        }
        guard !credentials.isEmpty else { return (lines.joined(separator: "\n") + "\n", false) }
        let credentialRenderer = try CredentialRenderer(credentials: [credentials], fleet: fleet, secrets: secrets, assetKey: SecretAssetKey.random())
        var problems: [Problem] = []
        var rendered = credentialRenderer.render(row: row, variant: 0, problems: &problems)
        for i in rendered.indices { rendered[i].document.overwriteWithZeros() }
        for p in problems { lines.append("fails: \(p.description)") }
        return (lines.joined(separator: "\n") + "\n", !problems.isEmpty)
    }
}
