import AppConfigCore
import AppConfigSpec

/// A value as a console takes it: typed, its strings written in the console's tokens.
public indirect enum ConsoleValue: Sendable, Equatable {
    case string(String)
    case integer(Int64)
    case real(Double)
    case boolean(Bool)
    case date(PlistDate)
    case array([ConsoleValue])

    /// Its text, for a console that takes only strings.
    var text: String {
        switch self {
        case .string(let s): s
        case .integer(let n): String(n)
        case .real(let d): String(d)
        case .boolean(let b): b ? "true" : "false"
        case .date(let d): d.description
        case .array(let items): "[" + items.map(\.text).joined(separator: ",") + "]"
        }
    }
}

/// One object of the export: the values a group of devices gets (every device: `all`; else an
/// assignment's devices: the values file's values with the assignment's over them).
public struct ExportVariant: Sendable {
    /// `all`, or the assignment's name.
    public var name: String
    /// The group the console assigns it to: the assignment's group where it matches on one, else
    /// a group to make that holds the devices `match` describes.
    public var group: String
    /// What the assignment matches, in words (`ou = EMEA`); empty for `all`.
    public var match: String
    /// The keys the object holds, in the spec's order.
    public var keys: [(key: String, value: ConsoleValue)]
    /// What did not translate or was converted, per key.
    public var notes: [Problem]
}

/// Turns a values file's values into a console's: `$(variable|filters)` into its tokens, each
/// assignment into a variant. What a console cannot express is reported and left out.
struct ExportTranslator {
    let target: ExportTarget
    let spec: Spec
    /// Intune with `--intune-xml`: the whole plist, so arrays and dates keep their types.
    let intuneXML: Bool

    /// The variants: `all`, then one per assignment, in the file's order.
    func variants(_ values: AdminValues) -> [ExportVariant] {
        var out = [variant(name: "all", group: "All devices", match: "", entries: values.entries)]
        for a in values.assignments {
            var entries = values.entries
            for (key, entry) in a.entries { entries[key] = entry }
            let groups = a.conditions.filter { if case .group = $0.subject { true } else { false } }
            let group = groups.count == 1 && a.conditions.count == 1 && groups[0].values.count == 1 ? groups[0].values[0] : a.name
            let match = a.conditions.map { "\($0.subject) \($0.test == .equals ? "=" : $0.test.rawValue) \($0.values.joined(separator: " or "))" }.joined(separator: " and ")
            out.append(variant(name: a.name, group: group, match: match, entries: entries))
        }
        return out
    }

    private func variant(name: String, group: String, match: String, entries: [String: AdminValues.Entry]) -> ExportVariant {
        var v = ExportVariant(name: name, group: group, match: match, keys: [], notes: [])
        for key in spec.keys {
            guard case .value(let assigned)? = entries[key.name] else { continue }
            do throws(Why) {
                let (value, conversion) = try self.value(assigned, type: key.type)
                v.keys.append((key.name, value))
                if let conversion {
                    v.notes.append(Problem(ExportCode.converted, at: assigned.location, "\"\(key.name)\" (\(name)): \(conversion) for \(target.title)"))
                }
            } catch {
                v.notes.append(Problem(ExportCode.untranslatable, at: assigned.location,
                                       "\"\(key.name)\" (\(name)): \(target.title) cannot take it: \(error.text); left out of this object"))
            }
        }
        return v
    }

    struct Why: Error { var text: String }

    /// The value as the console takes it, and the conversion made to fit it (nil: none).
    func value(_ assigned: AssignedValue, type: KeyType) throws(Why) -> (ConsoleValue, String?) {
        var items: [ConsoleValue] = []
        for item in assigned.items { items.append(try scalar(item.content)) }
        return try fit(type.isArray ? .array(items) : (items.first ?? .string("")), type: type)
    }

    /// Within what the console's types are.
    private func fit(_ value: ConsoleValue, type: KeyType) throws(Why) -> (ConsoleValue, String?) {
        switch target {
        case .jamf, .fleet: return (value, nil)
        case .intune where intuneXML: return (value, nil)
        case .intune, .ws1:
            if case .array = value { throw Why(text: "a list (\(type.rawValue)) has no place in its key/value settings" + (target == .intune ? " (--intune-xml writes the whole plist)" : "")) }
            if case .date = value { return (.string(value.text), "a date written as ISO 8601 text") }
            return (value, nil)
        case .intuneMAM, .ivanti:
            if case .array = value { throw Why(text: "a list (\(type.rawValue)): it takes only strings") }
            if case .string = value { return (value, nil) }
            return (.string(value.text), "a \(type.rawValue) written as the string \"\(value.text)\"")
        }
    }

    private func scalar(_ content: AssignedValue.Item.Content) throws(Why) -> ConsoleValue {
        switch content {
        case .literal(.string(let s)): return .string(try literal(s))
        case .literal(.integer(let n)): return .integer(n)
        case .literal(.float(let d)): return .real(d)
        case .literal(.boolean(let b)): return .boolean(b)
        case .literal(.date(let d)): return .date(d)
        case .template(let template):
            var out = ""
            for part in template.parts {
                switch part {
                case .literal(let s): out += try literal(s)
                case .variable(let v): out += try token(part, v, [])
                case .filtered(let v, let filters): out += try token(part, v, filters)
                }
            }
            return .string(out)
        }
    }

    /// The console's token for a variable with its filters (`part`, written as ours writes it).
    private func token(_ part: StringTemplate.Part, _ v: Variable, _ filters: [TemplateFilter]) throws(Why) -> String {
        let ours = StringTemplate(parts: [part]).description
        if let token = ConsoleTokens.token(for: ours, in: target.console) { return token }
        if !filters.isEmpty, ConsoleTokens.token(for: StringTemplate(parts: [.variable(v)]).description, in: target.console) != nil {
            throw Why(text: "\(ours) applies a filter (\(filters.map(\.description).joined(separator: ", "))) it cannot apply")
        }
        if case .deviceAttribute(let column) = v {
            throw Why(text: "\(ours) reads the inventory column \(column), which has no \(target.console.rawValue) token")
        }
        throw Why(text: "\(ours) has no \(target.console.rawValue) token")
    }

    /// Literal text, unless the console would read part of it as its token.
    private func literal(_ s: String) throws(Why) -> String {
        let console = target.console
        let misread: Bool
        switch console {
        case .jamf, .ws1, .intune:
            misread = ForeignVariables.tokens(in: s).contains { $0.console.rawValue == console.rawValue }
        case .ivanti: misread = s.contains("${")
        case .fleet: misread = s.contains("$FLEET_VAR_")
        }
        if misread { throw Why(text: "its text \(jsonQuoted(s)) would be read as a \(console.rawValue) variable, and it has no way to write it literally") }
        return s
    }
}
