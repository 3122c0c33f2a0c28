import AppConfigCore
import AppConfigOutput
import AppConfigSources
import AppConfigSpec
import Foundation

/// A job file: one JSON object of settings keyed by `render`'s long option names (`JobSettings`),
/// read with every value's place, so that each error has its line and column.
///
/// ```json
/// {"spec": "spec.xml", "inventory": "inventory.csv", "directory": "users.ldif",
///  "out": "/srv/appconfig/out", "map": {"serialNumber": "Asset Tag"}, "max-failures": 100}
/// ```
extension JobSettings {
    /// Job files are a few lines; a bigger one is not a job file.
    public static let maxJobFileBytes = 1 << 20

    /// The settings of the job file at `path`. Its problems: `input.read` (the file cannot be
    /// read), the JSON reader's (with line and column), `job.setting` (a key that is no setting,
    /// with the closest that is; a key given twice; a value of the wrong kind), each at its place.
    public init(jobFile path: String) throws(Problem) {
        let bytes: [UInt8]
        do {
            bytes = try readFileBytes(path, limit: Self.maxJobFileBytes)
        } catch {
            throw Problem(InputCode.read, at: Location(file: path), error.description)
        }
        try self.init(document: try JSONReader.document(bytes, file: path))
        resolvePaths(besideJobFile: path)
    }

    /// A job file's relative paths are relative to its own folder (cron runs the job from
    /// elsewhere).
    mutating func resolvePaths(besideJobFile jobFile: String) {
        let folder = PathText.folder(of: jobFile)
        func resolved(_ p: String?) -> String? {
            guard let p, !p.isEmpty, !p.hasPrefix("/"), p != "-", folder != "." else { return p }
            return folder + "/" + p
        }
        inputs.spec = resolved(inputs.spec)
        inputs.values = resolved(inputs.values)
        sources.inventory = resolved(sources.inventory)
        if let d = sources.directory, !FleetSources.Directory.isServerURL(d) { sources.directory = resolved(d) }
        ldap.passwordFile = resolved(ldap.passwordFile)
        ldap.caFile = resolved(ldap.caFile)
        destination.out = resolved(destination.out)
        destination.tar = resolved(destination.tar)
        nightly.since = resolved(nightly.since)
        report.report = resolved(report.report)
        func entries(_ e: Entries?, _ rewrite: (String, String) -> String) -> Entries? {
            e.map { Entries($0.items.map { item in
                guard let eq = item.firstIndex(of: "=") else { return item }
                return String(item[..<eq]) + "=" + rewrite(String(item[..<eq]), String(item[item.index(after: eq)...]))
            }) }
        }
        delivery.extensions = entries(delivery.extensions) { _, v in resolved(v) ?? v }
        delivery.extensionSpecs = entries(delivery.extensionSpecs) { _, v in resolved(v) ?? v }
        delivery.secrets = entries(delivery.secrets) { _, v in v.hasPrefix("file:") ? "file:" + (resolved(String(v.dropFirst(5))) ?? "") : v }
    }

    /// The first input file these settings name (of a job file: `jobFile`) that cannot be read,
    /// said with the job file's key that named it; `except`: keys another source (the command
    /// line) gave instead.
    public func unreadableInput(ofJobFile jobFile: String, except: Set<String> = []) -> Problem? {
        for (key, path) in [("spec", inputs.spec), ("values", inputs.values), ("inventory", sources.inventory),
                            ("directory", sources.directory.flatMap { FleetSources.Directory.isServerURL($0) ? nil : $0 })] where !except.contains(key) {
            guard let path, access(path, R_OK) != 0 else { continue }
            return Problem(InputCode.read, at: Location(file: jobFile),
                           "the job file's \"\(key)\" names \(path), which cannot be read: \(systemError()) (relative paths are relative to the job file's folder)")
        }
        return nil
    }

    /// The settings a JSON document holds.
    public init(document: RawValue) throws(Problem) {
        guard case .dictionary(let members) = document.kind else {
            throw Problem(.jobSetting, at: document.location, "not a JSON object of options, but \(document.typeName)")
        }
        var seen = Set<String>()
        for m in members {
            guard Self.keys.contains(m.key) else {
                let hint = closestName(to: m.key, among: Self.keys).map { "; did you mean \"\($0)\"?" } ?? ""
                throw Problem(.jobSetting, at: m.keyLocation, "\"\(m.key)\" is not an option of render\(hint)")
            }
            guard seen.insert(m.key).inserted else { throw Problem(.jobSetting, at: m.keyLocation, "\"\(m.key)\" is given twice") }
        }
        do {
            self = try JobSettings(from: LocatedDecoder(value: document, setting: nil))
        } catch let problem as Problem {
            throw problem
        } catch {
            throw Problem(.jobSetting, at: document.location, "\(error)")
        }
    }

    /// These settings with `other`'s laid over them (a command line over a job file): each setting
    /// `other` gives wins; a repeatable one's entries follow these (`--map` adds to the file's
    /// map). Merged as documents, so that no setting can be left out here.
    public func overlaid(by other: JobSettings) throws(Problem) -> JobSettings {
        var document = try Self.document(self)
        guard case .dictionary(let base) = document.kind, case .dictionary(let over) = try Self.document(other).kind else {
            preconditionFailure("settings encode as an object")
        }
        var members = base
        // One setting spelled by several keys: the command line's output replaces the file's.
        for group in Self.exclusiveKeys where over.contains(where: { group.contains($0.key) }) {
            members.removeAll { group.contains($0.key) }
        }
        for m in over {
            if let i = members.firstIndex(where: { $0.key == m.key }) {
                if case .array(let mine) = members[i].value.kind, case .array(let theirs) = m.value.kind {
                    // NAME=VALUE entries (`secret`, `extension`, `map`...): the command line's NAME
                    // replaces the file's; the file's other names stand.
                    let names = Set(theirs.compactMap(Self.entryName))
                    members[i].value.kind = .array(mine.filter { Self.entryName($0).map { !names.contains($0) } ?? true } + theirs)
                } else {
                    members[i].value = m.value
                }
            } else {
                members.append(m)
            }
        }
        document.kind = .dictionary(members)
        return try JobSettings(document: document)
    }

    /// Keys that spell one setting: where the output goes.
    static let exclusiveKeys: [Set<String>] = [["out", "tar"]]

    /// The NAME of a `NAME=VALUE` entry.
    static func entryName(_ v: RawValue) -> String? {
        guard case .string(let s) = v.kind, let eq = s.firstIndex(of: "=") else { return nil }
        return String(s[..<eq])
    }

    /// The settings as the JSON document a job file would hold.
    static func document(_ settings: JobSettings) throws(Problem) -> RawValue {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let bytes: [UInt8]
        do {
            bytes = Array(try encoder.encode(settings))
        } catch {
            // A number JSON has no spelling for (`--max-failure-ratio inf`).
            throw Problem(.jobSetting, "a setting has no JSON spelling: \(error)")
        }
        return try JSONReader.document(bytes, file: "")
    }
}
