import AppConfigCore
import LibPlist

/// A values file's content before it is typed against the spec: what JSON and plists share (and
/// what a job file is read into, for its positions).
public struct RawValue: Sendable {
    public struct Member: Sendable {
        public var key: String
        public var keyLocation: Location
        public var value: RawValue
    }

    public indirect enum Kind: Sendable {
        case string(String)
        case integer(Int64)
        case real(Double)
        case boolean(Bool)
        case date(PlistDate)
        case data
        case array([RawValue])
        case dictionary([Member])
        case null
    }

    public var kind: Kind
    public var location: Location

    init(_ kind: Kind, at location: Location) {
        self.kind = kind
        self.location = location
    }

    /// An empty string (a name left blank, told apart from a value of another type).
    public var isEmptyString: Bool { if case .string(let s) = kind { s.isEmpty } else { false } }

    public var typeName: String {
        switch kind {
        case .string: "a string"
        case .integer: "an integer"
        case .real: "a real number"
        case .boolean: "a boolean"
        case .date: "a date"
        case .data: "data"
        case .array: "an array"
        case .dictionary: "a dictionary"
        case .null: "null"
        }
    }
}

/// The administrator's values for one deployment: they override the spec's defaults.
public struct AdminValues: Sendable {
    public enum Entry: Sendable {
        case value(AssignedValue)
        /// `null` in JSON: leave the key out even though the spec has a default.
        case omitted(Location)
    }

    public var file: String
    /// For every device (the file's `values`, or the whole flat file).
    public var entries: [String: Entry]
    /// Overrides for the devices each matches, in file order.
    public var assignments: [Assignment]
    /// The file's `exclude`: devices any of these matches are left out of the run.
    public var exclusions: [Assignment] = []
    /// Credentials every device gets (an assignment's replace those of the same identifier).
    public var credentials: [Credential] = []

    public init(file: String, entries: [String: Entry], assignments: [Assignment] = []) {
        self.file = file
        self.entries = entries
        self.assignments = assignments
    }
}

public struct AdminValuesResult: Sendable {
    public var values: AdminValues
    public var diagnostics: [Problem]

    public var hasErrors: Bool { diagnostics.contains { $0.severity == .error } }
}

/// Reads a values file (JSON, or an XML or binary plist through libplist) and types it against the
/// spec: a dictionary from keyName to a value of the key's type; for string and stringArray keys a
/// template in which `$(name)` stands for a variable and `$$` for a literal `$`.
public enum AdminValuesReader {
    /// Values files are kilobytes; one beyond this is refused from its size, before it is read.
    public static let maxFileBytes = 16 << 20

    public static func read(_ bytes: [UInt8], file: String, spec: Spec) -> AdminValuesResult {
        var log = ProblemLog()
        let start = Location(file: file, line: 1, column: 1)
        guard let raw = decode(bytes, file: file, log: &log) else {
            return AdminValuesResult(values: AdminValues(file: file, entries: [:]), diagnostics: log.sorted)
        }
        guard case .dictionary(let members) = raw.kind else {
            log.report(.valuesRoot, at: start, "a values file holds a dictionary from keyName to value, not \(raw.typeName)")
            return AdminValuesResult(values: AdminValues(file: file, entries: [:]), diagnostics: log.sorted)
        }
        var typer = ValueTyper(log: log)
        guard isStructured(members, spec: spec) else {
            let entries = typedEntries(members, spec: spec, typer: &typer)
            checkRequiredEmpty(entries, spec: spec, file: file, log: &typer.log)
            return AdminValuesResult(values: AdminValues(file: file, entries: entries), diagnostics: typer.log.sorted)
        }
        // `{"values": {...}, "assignments": [...]}`
        var entries: [String: AdminValues.Entry] = [:]
        var assignments: [Assignment] = []
        var exclusions: [Assignment] = []
        var credentials: [Credential] = []
        var seen: Set<String> = []
        for member in members {
            guard seen.insert(member.key).inserted else {
                typer.log.report(.valuesDuplicateKey, at: member.keyLocation, "\"\(member.key)\" is given twice", hint: "keep one of them")
                continue
            }
            switch member.key {
            case "values":
                guard case .dictionary(let values) = member.value.kind else {
                    typer.log.report(.valuesRoot, at: member.value.location, "\"values\" is a dictionary from keyName to value, not \(member.value.typeName)")
                    continue
                }
                entries = typedEntries(values, spec: spec, typer: &typer)
            case "assignments":
                var reader = AssignmentReader(spec: spec, typer: typer)
                assignments = reader.read(member.value)
                typer = reader.typer
            case "credentials":
                var reader = CredentialReader(log: typer.log)
                credentials = reader.read(member.value)
                typer.log = reader.log
            case "exclude":
                var reader = AssignmentReader(spec: spec, typer: typer)
                exclusions = reader.exclusions(member.value)
                typer = reader.typer
            default:
                typer.log.report(.assignmentSyntax, at: member.keyLocation,
                                 "a values file with assignments holds \"values\", \"assignments\", \"exclude\" and \"credentials\", not \"\(member.key)\"",
                                 hint: ContentChecker.suggestion(for: member.key, among: Self.structuredKeys).map { "did you mean \"\($0)\"?" })
            }
        }
        if assignments.count + exclusions.count > Assignment.limit {
            typer.log.report(.assignmentSyntax, at: Location(file: file), "more than \(Assignment.limit) assignments and exclusions together")
        }
        checkRequiredEmpty(entries, spec: spec, file: file, log: &typer.log)
        var values = AdminValues(file: file, entries: entries, assignments: assignments)
        values.exclusions = exclusions
        values.credentials = credentials
        return AdminValuesResult(values: values, diagnostics: typer.log.sorted)
    }

    /// A string key whose constraint makes it non-nullable must not get `""`: left out of the values
    /// with an empty default (Wandera's `customerId`, `apiKey`: "fill this in"), or given `""`.
    /// Every device would get `<string></string>`.
    static func checkRequiredEmpty(_ entries: [String: AdminValues.Entry], spec: Spec, file: String, log: inout ProblemLog) {
        func isEmpty(_ v: AssignedValue) -> Bool {
            v.items.count == 1 && { if case .literal(.string(let s)) = v.items[0].content { s.isEmpty } else { false } }()
        }
        for key in spec.keys where key.type == .string && key.constraint != nil && !key.isNullable {
            switch entries[key.name] {
            case .value(let v)? where isEmpty(v):
                log.report(.valuesRequiredEmpty, at: v.location, "\"\(key.name)\" may not be empty (its constraint is nullable=\"false\"): give it a value")
            case nil:
                if let d = key.defaultValue, isEmpty(d) {
                    log.report(.valuesRequiredEmpty, at: Location(file: file, line: 1, column: 1),
                               "\"\(key.name)\" may not be empty (its constraint is nullable=\"false\") and its default is empty: the values must give it one (the app's vendor asks for it)")
                }
            default: break
            }
        }
    }

    /// The form with assignments: the top level holds `assignments`, `values` or `credentials`, and the spec has
    /// no key by that name (which would make it a flat file).
    static let structuredKeys = ["values", "assignments", "exclude", "credentials"]

    private static func isStructured(_ members: [RawValue.Member], spec: Spec) -> Bool {
        members.contains { structuredKeys.contains($0.key) && spec.key(named: $0.key) == nil }
    }

    /// One dictionary from keyName to value typed against the spec: the flat file, the `values`
    /// of the form with assignments, and each assignment's.
    static func typedEntries(_ members: [RawValue.Member], spec: Spec, typer: inout ValueTyper) -> [String: AdminValues.Entry] {
        var entries: [String: AdminValues.Entry] = [:]
        var firstSeen = FirstOfEachName()
        for member in members {
            if let first = firstSeen.earlier(member.key, at: member.keyLocation) {
                reportDuplicate(member.key, at: member.keyLocation, first: first, log: &typer.log)
                continue
            }
            guard let key = spec.key(named: member.key) else {
                let hint = ContentChecker.suggestion(for: member.key, among: spec.keys.map(\.name)).map { "did you mean \"\($0)\"?" }
                typer.log.report(.valuesUnknownKey, at: member.keyLocation,
                                 "the spec defines no key \"\(member.key)\"", hint: hint)
                continue
            }
            if case .null = member.value.kind {
                entries[key.name] = .omitted(member.keyLocation)
            } else if let value = typer.assign(member.value, to: key) {
                entries[key.name] = .value(value)
                if let reason = SecretKeys.reason(for: key, in: spec),
                   value.items.contains(where: { if case .literal(.string(let s)) = $0.content { !s.isEmpty } else { false } }) {
                    typer.log.report(.valuesSecretLiteral, at: member.value.location,
                                     "\"\(key.name)\" looks like a secret (\(reason)) and is given as plain text: every device's configuration, every copy of the output and every MDM log carries it",
                                     hint: "give each user their own value ($(...)), or deliver it to the app apart from its configuration (a ManagedApp password or identity)")
                }
            }
        }
        return entries
    }

    /// JSON by its first character; plists by libplist. XML plists are also walked by our XML
    /// reader to find where each key stands (libplist gives no positions).
    static func decode(_ bytes: [UInt8], file: String, log: inout ProblemLog) -> RawValue? {
        let start = Location(file: file, line: 1, column: 1)
        let first = bytes.drop { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D || $0 == 0xEF || $0 == 0xBB || $0 == 0xBF }.first
        if first == UInt8(ascii: "{") || first == UInt8(ascii: "[") {
            do {
                return try JSONReader.parse(bytes, file: file)
            } catch {
                log.append(error.diagnostic)
                return nil
            }
        }
        guard LibPlist.isBinary(bytes) || first == UInt8(ascii: "<") else {
            log.report(.valuesSyntax, at: start, "not JSON and not a property list")
            return nil
        }
        let plist: PlistValue
        do {
            plist = try LibPlist.decode(bytes)
        } catch {
            log.report(.valuesSyntax, at: start, error.message)
            return nil
        }
        let keyLocations = LibPlist.isBinary(bytes) ? [] : xmlPlistKeyLocations(bytes, file: file)
        // libplist keeps the last of two equal keys in an XML dict (binary ones keep both, and
        // `read` reports them): the XML walk finds them here.
        var seen = FirstOfEachName()
        for (key, location) in keyLocations {
            if let first = seen.earlier(key, at: location) { reportDuplicate(key, at: location, first: first, log: &log) }
        }
        return raw(plist, at: start, keyLocations: keyLocations)
    }

    private static func reportDuplicate(_ key: String, at location: Location, first: Location, log: inout ProblemLog) {
        let whereFirst = first.line < location.line || first.column < location.column ? "; first at line \(first.line)" : ""
        log.report(.valuesDuplicateKey, at: location, "\"\(key)\" is given twice\(whereFirst)", hint: "keep one of them")
    }

    /// `keyLocations` are the top-level dict's keys in file order, as libplist keeps them.
    private static func raw(_ value: PlistValue, at location: Location, keyLocations: [(key: String, location: Location)]) -> RawValue {
        switch value {
        case .string(let s): return RawValue(.string(s), at: location)
        case .integer(let i): return RawValue(.integer(i), at: location)
        case .real(let d): return RawValue(.real(d), at: location)
        case .boolean(let b): return RawValue(.boolean(b), at: location)
        case .date(let d): return RawValue(.date(PlistDate(secondsSince2001: d)), at: location)
        case .data, .uid: return RawValue(.data, at: location)
        case .array(let items): return RawValue(.array(items.map { raw($0, at: location, keyLocations: []) }), at: location)
        case .dictionary(let pairs):
            let positional = keyLocations.count == pairs.count && zip(keyLocations, pairs).allSatisfy { $0.key == $1.key }
            return RawValue(.dictionary(pairs.enumerated().map { index, pair in
                let at = positional ? keyLocations[index].location
                                    : keyLocations.first { $0.key == pair.key }?.location ?? location
                return RawValue.Member(key: pair.key, keyLocation: at, value: raw(pair.value, at: at, keyLocations: []))
            }), at: location)
        }
    }

    /// Where each `<key>` of the top-level dict of an XML plist stands.
    private static func xmlPlistKeyLocations(_ bytes: [UInt8], file: String) -> [(key: String, location: Location)] {
        guard let root = try? XMLReader.parse(bytes, file: file, allowingPlainDoctype: true),
              let dict = root.elements.first(where: { $0.name == "dict" }) else { return [] }
        return dict.elements.filter { $0.name == "key" }.map { ($0.text, $0.location) }
    }
}

/// Types raw values against a key, reporting each mismatch where it stands.
struct ValueTyper {
    var log: ProblemLog

    mutating func assign(_ raw: RawValue, to key: Key) -> AssignedValue? {
        let rawItems: [RawValue]
        if key.type.isArray {
            guard case .array(let items) = raw.kind else {
                log.report(.valuesType, at: raw.location, "\"\(key.name)\" is a \(key.type.rawValue) key; the value is \(raw.typeName), not an array")
                return nil
            }
            rawItems = items
        } else {
            rawItems = [raw]
        }
        var items: [AssignedValue.Item] = []
        var failed = false
        for item in rawItems {
            if let typed = self.item(item, key: key) { items.append(typed) } else { failed = true }
        }
        guard !failed else { return nil }
        let value = AssignedValue(items: items, location: raw.location)
        if let constraint = key.constraint {
            var reasons: [String] = []
            if key.type.isArray, let reason = constraint.countViolation(items.count) { reasons.append(reason) }
            for item in items {
                if case .literal(let v) = item.content, let reason = constraint.violation(of: v, keyType: key.type) {
                    reasons.append(reason)
                }
            }
            for reason in reasons {
                log.report(.valuesConstraint, at: raw.location, "the value of \"\(key.name)\" breaks its constraint: \(reason)")
            }
        }
        return value
    }

    private mutating func item(_ raw: RawValue, key: Key) -> AssignedValue.Item? {
        let type = key.type.elementType
        switch (type, raw.kind) {
        case (.string, .string(let s)):
            let foreign = ForeignVariables.tokens(in: s)
            if !foreign.isEmpty {
                for token in foreign { log.report(.valuesForeignVariable, at: raw.location, "\"\(key.name)\": " + ForeignVariables.message(token)) }
                let offsets = Set(foreign.map(\.offset))
                for error in StringTemplate.errors(in: s) {
                    if case .loneDollar(let offset) = error, offsets.contains(offset) { continue }
                    report(error, in: s, at: raw.location, key: key)
                }
                return nil
            }
            switch StringTemplate.parse(s) {
            case .success(let (template, nonCanonical)):
                for token in ForeignVariables.literalTokens(in: template) {
                    log.report(.valuesForeignLiteral, at: raw.location, "\"\(key.name)\": the literal text \(token.text) is \(token.console.rawValue)'s variable, "
                               + "which devices would receive as text; " + (token.equivalent.map { "write \($0)" } ?? "map it to an inventory column: $(device.<Column>)"))
                }
                for name in nonCanonical {
                    log.report(.variableSpelling, at: raw.location,
                               "variable \"\(name)\" is spelt \"\(Variable.named(name)!.variable)\" in the reference")
                }
                return AssignedValue.Item(template: template, at: raw.location)
            case .failure:
                for error in StringTemplate.errors(in: s) { report(error, in: s, at: raw.location, key: key) }
                return nil
            }
        case (.integer, .integer(let i)): return .init(.literal(.integer(i)), at: raw.location)
        case (.float, .integer(let i)): return .init(.literal(.float(Double(i))), at: raw.location)
        case (.float, .real(let d)): return .init(.literal(.float(d)), at: raw.location)
        case (.boolean, .boolean(let b)): return .init(.literal(.boolean(b)), at: raw.location)
        case (.date, .date(let d)): return .init(.literal(.date(d)), at: raw.location)
        case (.date, .string(let s)):
            if let d = ISO8601.parse(s) { return .init(.literal(.date(d)), at: raw.location) }
            log.report(.valuesType, at: raw.location, "\"\(s)\" for date key \"\(key.name)\" is not an ISO-8601 date",
                       hint: SpecBuilder.literalHint(.date))
            return nil
        default:
            log.report(.valuesType, at: raw.location,
                       "\"\(key.name)\" takes \(SpecBuilder.article(type))\(key.type.isArray ? " in each element" : ""); the value is \(raw.typeName)")
            return nil
        }
    }

    private mutating func report(_ error: StringTemplate.ParseError, in text: String, at location: Location, key: Key) {
        switch error {
        case .loneDollar(let offset):
            log.report(.valuesTemplate, at: location, "\"\(key.name)\": '$' at offset \(offset) starts no variable",
                       hint: "write $(name) for a variable, $$ for a literal $")
        case .unterminated(let offset):
            log.report(.valuesTemplate, at: location, "\"\(key.name)\": '$(' at offset \(offset) is not closed by ')'")
        case .emptyName(let offset):
            log.report(.valuesTemplate, at: location, "\"\(key.name)\": '$()' at offset \(offset) names no variable")
        case .unknownFilter(let name, let offset):
            // The nearest filter, and every filter there is.
            let hint = (ContentChecker.suggestion(for: name, among: TemplateFilter.names).map { "did you mean |\($0)? " } ?? "") + "filters: " + TemplateFilter.usage
            log.report(.valuesTemplate, at: location, "\"\(key.name)\": the variable at offset \(offset) has an unknown filter \"\(name)\"", hint: hint)
        case .filterArguments(let filter, let offset):
            log.report(.valuesTemplate, at: location, "\"\(key.name)\": the filter \"\(filter)\" at offset \(offset) is not written as \(filter == "default" ? "one default:TEXT per variable" : filter == "replace" ? "replace:FROM:TO with a FROM" : "\(filter), without arguments")",
                       hint: "filters: " + TemplateFilter.usage)
        case .unknownVariable(let name, _):
            let hint = ContentChecker.suggestion(for: name, among: Variable.allNames).map { "did you mean $(\($0))?" }
                ?? "user and device variables: " + Variable.allNames.joined(separator: ", ") + "; inventory columns: $(device.<Column>)"
            log.report(.valuesVariableUnknown, at: location, "\"\(key.name)\": $(\(name)) is not a user or device variable", hint: hint)
        }
    }
}
