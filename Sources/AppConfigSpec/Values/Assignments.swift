import AppConfigCore
import AppConfigPattern

/// Values for some of the devices, as every MDM console scopes them: a name, a match (groups, OUs,
/// sites, models) and the keys it overrides. Assignments apply in file order over the values file's
/// `values`, each overriding the keys it names (`null` removes a key).
public struct Assignment: Sendable {
    /// One condition of a match: a variable (or `device.<Column>`) equal to one of `values`, or
    /// membership of one of the groups `values` names (by DN, or by `cn`), nesting included.
    public struct Condition: Sendable {
        public enum Subject: Sendable, Hashable, CustomStringConvertible {
            case variable(Variable)
            case group

            public var description: String {
                switch self {
                case .variable(let v): v.description
                case .group: "group"
                }
            }
        }

        /// How the device's value is compared with `values`.
        public enum Test: String, Sendable, CaseIterable {
            /// Equal to one of them (the plain form: `"ou": "Sales"`, `"ou": ["Sales", "Support"]`).
            case equals
            /// Equal to none of them; a missing value holds (`{"not": ["Mac", "VM"]}`). For `group`:
            /// in none of the groups.
            case not
            /// A list column (Jamf School's `MemberOf`: `Staff, Teachers`) holds one of them: the
            /// value cut at commas, semicolons and line breaks, each piece trimmed, one piece equal.
            case contains
            /// One of these regular expressions (PCRE2, unanchored unless written with `^`/`$`)
            /// finds a match in the value.
            case matches
        }

        public var subject: Subject
        /// Any of these matches, compared ASCII case-insensitively (as directories compare names).
        public var values: [String]
        public var location: Location
        public var test = Test.equals
        /// `matches`: `values` compiled, in their order.
        public var patterns: [Pattern] = []

        public init(subject: Subject, values: [String], location: Location, test: Test = .equals, patterns: [Pattern] = []) {
            self.subject = subject
            self.values = values
            self.location = location
            self.test = test
            self.patterns = patterns
        }

        /// Whether the test holds for a value (nil: missing, which only `not` accepts): the
        /// batch's matcher compares bytes the same way.
        public func holds(_ value: String?) -> Bool {
            guard let value else { return test == .not }
            switch test {
            case .equals: return values.contains { $0.lowercasedASCII == value.lowercasedASCII }
            case .not: return !values.contains { $0.lowercasedASCII == value.lowercasedASCII }
            case .contains:
                let pieces = Self.listItems(value).map(\.lowercasedASCII)
                return values.contains { pieces.contains($0.lowercasedASCII) }
            case .matches: return patterns.contains { $0.search(value) == .match }
            }
        }

        /// A list column's items: cut at `,`, `;`, CR and LF, each trimmed of spaces and tabs.
        /// `bracketed`: the console writes its lists in brackets (Jamf School's `[a,b,c]`), taken
        /// off first (an item may hold brackets of its own: `[[District] All iPads,Grade 7]`).
        public static func listItems(_ value: String, bracketed: Bool = false) -> [String] {
            var value = Substring(value)
            if bracketed && value.count >= 2 && value.hasPrefix("[") && value.hasSuffix("]") { value = value.dropFirst().dropLast() }
            return value.split { $0 == "," || $0 == ";" || $0 == "\n" || $0 == "\r" || $0 == "\r\n" }
                .map { $0.trimmingCharacters(in: [" ", "\t"]) }
        }
    }

    public var name: String
    public var location: Location
    /// Every one must hold.
    public var conditions: [Condition]
    public var entries: [String: AdminValues.Entry]
    /// Credentials for the devices it matches: they replace those of the same identifier.
    public var credentials: [Credential] = []

    /// At most this many assignments: a device's set of matching ones is one 64-bit word.
    public static let limit = 64

    /// A group named by DN (it holds `=`) or by its common name.
    public static func isGroupDN(_ value: String) -> Bool { value.contains("=") }
}

extension AdminValues {
    /// The values one device gets when these assignments (indices, in file order) match it.
    public func applying(_ indices: [Int]) -> AdminValues {
        var merged = entries
        for i in indices {
            for (key, entry) in assignments[i].entries { merged[key] = entry }
        }
        var values = AdminValues(file: file, entries: merged)
        values.credentials = credentials(applying: indices)
        return values
    }

    /// The credentials of a device these assignments match: the file's, each replaced by an
    /// assignment's of the same identifier (in file order), the assignments' others added.
    public func credentials(applying indices: [Int]) -> [Credential] {
        var merged = credentials
        for i in indices {
            for c in assignments[i].credentials {
                if let at = merged.firstIndex(where: { $0.identifier == c.identifier }) { merged[at] = c } else { merged.append(c) }
            }
        }
        return merged
    }
}

/// Reads the `assignments` of a values file, checking each with its position: its name, its
/// match (known variables, `device.<Column>`, `group` with valid RFC 4514 DNs) and its values
/// (typed against the spec like the file's own).
struct AssignmentReader {
    let spec: Spec
    var typer: ValueTyper

    mutating func read(_ raw: RawValue) -> [Assignment] {
        guard case .array(let items) = raw.kind else {
            typer.log.report(.assignmentSyntax, at: raw.location, "\"assignments\" is a list of assignments, not \(raw.typeName)")
            return []
        }
        let assignments = FirstOfEachName.firsts(of: items.prefix(Assignment.limit), read: { assignment($0, number: $1) },
                                                 name: { ($0.name, $0.location) }) { a, first in
            typer.log.report(.assignmentDuplicateName, at: a.location, "two assignments are named \"\(a.name)\"; the first is at line \(first.line)",
                             hint: "the report counts devices per assignment name: give each its own")
        }
        if items.count > Assignment.limit {
            typer.log.report(.assignmentSyntax, at: items[Assignment.limit].location, "more than \(Assignment.limit) assignments")
        }
        return assignments
    }

    private mutating func assignment(_ raw: RawValue, number: Int) -> Assignment? {
        guard case .dictionary(let members) = raw.kind else {
            typer.log.report(.assignmentSyntax, at: raw.location, "assignment \(number) is \(raw.typeName), not a dictionary with name, match and values")
            return nil
        }
        var name: String?, match: RawValue?, values: RawValue?
        var credentials: [Credential] = []
        var ok = true
        for member in members {
            switch member.key {
            case "name":
                if case .string(let s) = member.value.kind, !s.isEmpty { name = s } else {
                    typer.log.report(.assignmentSyntax, at: member.value.location, "an assignment's name is a non-empty string, not \(member.value.isEmptyString ? "an empty one" : member.value.typeName)")
                    ok = false
                }
            case "match": match = member.value
            case "values": values = member.value
            case "credentials":
                var reader = CredentialReader(log: typer.log)
                credentials = reader.read(member.value)
                typer.log = reader.log
            default:
                let hint = ContentChecker.suggestion(for: member.key, among: ["name", "match", "values", "credentials"]).map { "did you mean \"\($0)\"?" }
                typer.log.report(.assignmentSyntax, at: member.keyLocation, "an assignment holds name, match, values and credentials, not \"\(member.key)\"", hint: hint)
                ok = false
            }
        }
        let label = name.map { "assignment \"\($0)\"" } ?? "assignment \(number)"
        // A misspelt field was named above; its absence is not reported again.
        // An assignment that only changes credentials needs no values.
        for (field, value) in [("name", name as Any?), ("match", match), ("values", credentials.isEmpty ? values : [])] where value == nil && ok {
            typer.log.report(.assignmentSyntax, at: raw.location, "\(label) has no \"\(field)\"")
            ok = false
        }
        let conditions = match.flatMap { self.conditions($0, label: label) }
        var entries: [String: AdminValues.Entry] = [:]
        if let values {
            guard case .dictionary(let members) = values.kind else {
                typer.log.report(.assignmentSyntax, at: values.location, "the values of \(label) are a dictionary from keyName to value, not \(values.typeName)")
                return nil
            }
            entries = AdminValuesReader.typedEntries(members, spec: spec, typer: &typer)
        }
        guard ok, let name, let conditions else { return nil }
        var assignment = Assignment(name: name, location: raw.location, conditions: conditions, entries: entries)
        assignment.credentials = credentials
        return assignment
    }

    private mutating func conditions(_ raw: RawValue, label: String) -> [Assignment.Condition]? {
        guard case .dictionary(let members) = raw.kind else {
            typer.log.report(.assignmentSyntax, at: raw.location, "the match of \(label) is a dictionary from variable or \"group\" to values, not \(raw.typeName)")
            return nil
        }
        guard !members.isEmpty else {
            typer.log.report(.assignmentSyntax, at: raw.location, "the match of \(label) is empty: it would match every device",
                             hint: "put values for every device in the file's \"values\"")
            return nil
        }
        var conditions: [Assignment.Condition] = []
        var failed = false
        var seen: Set<String> = []
        for member in members {
            guard let subject = subject(member, label: label) else { failed = true; continue }
            if !seen.insert(subject.description.lowercased()).inserted {
                typer.log.report(.assignmentSyntax, at: member.keyLocation, "the match of \(label) names \"\(member.key)\" twice")
                failed = true
                continue
            }
            var test = Assignment.Condition.Test.equals
            var rawValues = member.value
            if case .dictionary(let forms) = member.value.kind {
                let named = Assignment.Condition.Test.allCases.filter { $0 != .equals }.map(\.rawValue)
                guard forms.count == 1, let form = forms.first, let t = Assignment.Condition.Test(rawValue: form.key), t != .equals else {
                    let hint = forms.first.flatMap { ContentChecker.suggestion(for: $0.key, among: named) }.map { "did you mean \"\($0)\"?" }
                    typer.log.report(.assignmentSyntax, at: member.value.location,
                                     "\(label) matches \"\(member.key)\" with a dictionary: it holds one of \(named.map { "\"\($0)\"" }.joined(separator: ", ")), with a string or a list of strings",
                                     hint: hint)
                    failed = true
                    continue
                }
                if subject == .group && t != .not {
                    typer.log.report(.assignmentSyntax, at: form.keyLocation, "\(label) tests its groups with \"\(t.rawValue)\": a group is in or out (a list, or \"not\")")
                    failed = true
                    continue
                }
                test = t
                rawValues = form.value
            }
            guard let values = strings(rawValues, of: member.key, label: label) else { failed = true; continue }
            var patterns: [Pattern] = []
            if test == .matches {
                for value in values {
                    do { patterns.append(try Pattern(value)) } catch {
                        typer.log.report(.assignmentSyntax, at: rawValues.location,
                                         "\(label) matches \"\(member.key)\" against the regular expression \"\(value)\", which does not compile: \(error.message) at offset \(error.offset)")
                        failed = true
                    }
                }
            }
            if subject == .group {
                for value in values where Assignment.isGroupDN(value) {
                    do { _ = try DistinguishedName.canonical(Array(value.utf8)) } catch {
                        typer.log.report(.assignmentGroupDN, at: member.value.location,
                                         "the group \"\(value)\" of \(label) is not a valid DN (RFC 4514): \(error.message) at offset \(error.offset)",
                                         hint: "name a group by its DN (CN=Sales,OU=Groups,DC=example,DC=com) or by its cn (Sales)")
                        failed = true
                    }
                }
            }
            conditions.append(Assignment.Condition(subject: subject, values: values, location: member.keyLocation, test: test, patterns: patterns))
        }
        return failed ? nil : conditions
    }

    /// The file's `exclude`: a match, or a list of matches, whose devices are left out of the run
    /// (a Mac and a VM in an iPhone app's inventory). Each match is read as an assignment's is.
    mutating func exclusions(_ raw: RawValue) -> [Assignment] {
        let items: [RawValue]
        if case .array(let list) = raw.kind { items = list } else { items = [raw] }
        var out: [Assignment] = []
        for (i, item) in items.enumerated() {
            let label = "exclude" + (items.count > 1 ? " \(i + 1)" : "")
            guard let conditions = conditions(item, label: label) else { continue }
            out.append(Assignment(name: label, location: item.location, conditions: conditions, entries: [:]))
        }
        return out
    }

    private mutating func subject(_ member: RawValue.Member, label: String) -> Assignment.Condition.Subject? {
        let key = member.key
        if key.lowercased() == "group" { return .group }
        if key.hasPrefix("device."), key.count > "device.".count { return .variable(.deviceAttribute(String(key.dropFirst("device.".count)))) }
        if let (variable, canonical) = Variable.named(key) {
            if !canonical { typer.log.report(.variableSpelling, at: member.keyLocation, "variable \"\(key)\" is spelt \"\(variable)\" in the reference") }
            return .variable(variable)
        }
        let hint = ContentChecker.suggestion(for: key, among: Variable.allNames + ["group"]).map { "did you mean \"\($0)\"?" }
            ?? "match on a user or device variable, device.<Column> or group"
        typer.log.report(.assignmentMatchKey, at: member.keyLocation, "\(label) matches on \"\(key)\", which is not a user or device variable, device.<Column> or group", hint: hint)
        return nil
    }

    /// A string, or a non-empty list of strings.
    private mutating func strings(_ raw: RawValue, of key: String, label: String) -> [String]? {
        func bad(_ what: String, at location: Location) -> [String]? {
            typer.log.report(.assignmentSyntax, at: location, "\(label) matches \"\(key)\" against \(what); give a string or a list of strings")
            return nil
        }
        switch raw.kind {
        case .string(let s): return [s]
        case .array(let items):
            guard !items.isEmpty else { return bad("an empty list", at: raw.location) }
            var out: [String] = []
            for item in items {
                guard case .string(let s) = item.kind else { return bad(item.typeName, at: item.location) }
                out.append(s)
            }
            return out
        default: return bad(raw.typeName, at: raw.location)
        }
    }
}

extension Assignment {
    /// Whether this assignment matches a device given by its variables and the groups it is in
    /// (nesting already resolved by whoever lists them): for a preview of one device, where no
    /// directory is read. Compared as the batch compares: ASCII case-insensitively, DNs in their
    /// canonical spelling, a bare name against a group's leaf `cn`.
    public func matches(variables: [Variable: String], groups: [String]) -> Bool {
        conditions.allSatisfy { condition in
            switch condition.subject {
            case .variable(let v):
                return condition.holds(variables[v])
            case .group:
                let member = condition.values.contains { wanted in groups.contains { Self.sameGroup(wanted, $0) } }
                return condition.test == .not ? !member : member
            }
        }
    }

    static func sameGroup(_ a: String, _ b: String) -> Bool {
        func parts(_ s: String) -> (dn: [UInt8]?, cn: String?) {
            guard isGroupDN(s) else { return (nil, s.lowercasedASCII) }
            let dn = try? DistinguishedName.canonical(Array(s.utf8))
            let leaf = (try? DistinguishedName(parsing: s))?.rdns.first?.first { $0.type.lowercased() == "cn" }?.value
            return (dn, leaf?.lowercasedASCII)
        }
        let (x, y) = (parts(a), parts(b))
        if let dx = x.dn, let dy = y.dn { return dx == dy }
        return x.cn != nil && x.cn == y.cn
    }
}

extension String {
    /// A-Z to a-z, other characters as they are (directories fold names this way).
    var lowercasedASCII: String {
        String(decoding: utf8.map(asciiLower), as: UTF8.self)
    }
}
