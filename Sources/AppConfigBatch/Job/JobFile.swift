import AppConfigCore
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
        for m in over {
            if let i = members.firstIndex(where: { $0.key == m.key }) {
                if case .array(let mine) = members[i].value.kind, case .array(let theirs) = m.value.kind {
                    members[i].value.kind = .array(mine + theirs)
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
