import AppConfigCore
import AppConfigSources
import AppConfigSpec
import Foundation

/// Where a secret's value comes from (`--secret NAME=SOURCE`): never a values file, never the
/// command line itself.
public struct SecretSource: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// `env:VAR`: an environment variable.
        case environment(String)
        /// `file:PATH`: the file's text (one trailing line break dropped); a `.csv` or `.json` file
        /// holds a value per user instead, keyed by a variable (see `SecretStore`).
        case file(String)
        /// `exec:COMMAND`: the standard output of `/bin/sh -c COMMAND` (a vault's CLI).
        case command(String)
    }

    public var name: String
    public var kind: Kind

    public init(name: String, kind: Kind) {
        self.name = name
        self.kind = kind
    }

    /// `NAME=env:VAR`, `NAME=file:PATH`, `NAME=exec:COMMAND`.
    public init(parsing text: String) throws(Problem) {
        guard let eq = text.firstIndex(of: "="), eq != text.startIndex else {
            throw Problem(.secretSource, "--secret takes NAME=env:VAR, NAME=file:PATH or NAME=exec:COMMAND (what was given is not shown: it may be a secret)")
        }
        name = String(text[..<eq])
        let source = text[text.index(after: eq)...]
        if source.hasPrefix("env:"), source.count > 4 { kind = .environment(String(source.dropFirst(4))) }
        else if source.hasPrefix("file:"), source.count > 5 { kind = .file(String(source.dropFirst(5))) }
        else if source.hasPrefix("exec:"), source.count > 5 { kind = .command(String(source.dropFirst(5))) }
        else {
            // The text after `=` is never echoed: it may be the secret itself, given by mistake.
            throw Problem(.secretSource, "--secret \(name): the source is env:VAR, file:PATH or exec:COMMAND (a secret's value never goes on the command line)")
        }
    }
}

/// The secrets a run's credentials name, read once before anything is rendered: one value each,
/// or a value per user from a keyed file. The bytes live in pages of this store's own, left out of
/// core dumps (`MADV_DONTDUMP`, and the process is made non-dumpable while it holds any), cleared
/// when it is done (`clear`).
///
/// A keyed file: a `.csv` whose header's first column names the variable the rows are keyed by
/// (`sAMAccountName,password`: the second column is the value), or a `.json` object
/// `{"key": "sAMAccountName", "values": {"jdoe": "…"}}`.
///
/// Every value is checked as it is read: an empty one (`secret.empty`), one that is not UTF-8 or
/// holds a NUL (`secret.source`) stops the run; a device is never given a secret other than the
/// one its source holds.
package final class SecretStore: @unchecked Sendable {
    enum Value {
        case single(MutableByteView)
        case keyed(Variable, [String: MutableByteView])
    }

    private(set) var values: [String: Value] = [:]
    /// Holds every value's bytes.
    private var owner = SecretPages()

    /// How long an `exec:` source may run (`--secret-timeout`), and how much a source may hold.
    package static let defaultTimeout = 60.0
    static let limit = 64 << 20

    package init() {}

    /// Reads every source. A source that cannot be read is a `secret.source` problem that names the
    /// source, never a value: a command's first line of standard error, never its output.
    /// `withheld`: environment variables an `exec:` child is not given (the LDAP password's), on
    /// top of every variable an `env:` source reads.
    package init(_ sources: [SecretSource], environment: [String: String] = ProcessInfo.processInfo.environment,
                timeout: Double = SecretStore.defaultTimeout, withheld: [String] = []) throws(Problem) {
        if !sources.isEmpty { ProcessSecrets.holdSecrets() }
        var childEnvironment = environment
        for name in withheld + ["LDAP_PASSWORD"] { childEnvironment[name] = nil }
        for source in sources { if case .environment(let variable) = source.kind { childEnvironment[variable] = nil } }
        for source in sources {
            guard values[source.name] == nil else { throw Problem(.secretSource, "--secret \(source.name) is given twice") }
            switch source.kind {
            case .environment(let variable):
                guard let text = environment[variable] else {
                    throw Problem(.secretSource, "--secret \(source.name): the environment has no \(variable)")
                }
                let bytes = Array(text.utf8)
                try Self.check(bytes, "--secret \(source.name): env:\(variable)", at: Location())
                values[source.name] = .single(owner.copy(bytes))
            case .file(let path):
                values[source.name] = try readFile(path, name: source.name)
            case .command(let command):
                var bytes = try ChildProcess.output(of: command, name: source.name, environment: childEnvironment, timeout: timeout, limit: Self.limit)
                defer { bytes.overwriteWithZeros() }
                Self.dropLineBreak(&bytes)
                try Self.check(bytes, "--secret \(source.name): exec:\(Problem.printable(command))", at: Location())
                values[source.name] = .single(owner.copy(bytes))
            }
        }
    }

    /// The variable a per-user secret is keyed by.
    package func keyVariable(of name: String) -> Variable? {
        if case .keyed(let v, _)? = values[name] { return v }
        return nil
    }

    package func has(_ name: String) -> Bool { values[name] != nil }

    /// The secret's bytes for a device whose key variable is `key` (ignored for a single value);
    /// nil when a per-user file has no value for it. Valid until `clear`.
    func value(_ name: String, key: String?) -> ByteView? {
        switch values[name] {
        case .single(let b)?: return b.view
        case .keyed(_, let table)?: return key.flatMap { table[$0] }.map(\.view)
        case nil: return nil
        }
    }

    /// Overwrites every secret's bytes with zeros and frees them.
    package func clear() {
        for value in values.values {
            switch value {
            case .single(let b): b.fill(with: 0)
            case .keyed(_, let table): for b in table.values { b.fill(with: 0) }
            }
        }
        values = [:]
        owner = SecretPages()
    }

    deinit { clear() }

    /// A secret's value as a device may be given it: not empty, UTF-8 (it goes into a JSON
    /// document), no NUL (a C string would cut it). `what` names the source, never the value.
    static func check(_ bytes: some Collection<UInt8>, _ what: String, at location: Location) throws(Problem) {
        if bytes.isEmpty { throw Problem(.secretEmpty, at: location, "\(what) is empty: a secret has a value") }
        if bytes.contains(0) { throw Problem(.secretSource, at: location, "\(what) holds a NUL byte, which no secret can") }
        if String(validating: bytes, as: UTF8.self) == nil { throw Problem(.secretSource, at: location, "\(what) is not UTF-8 text") }
    }

    private static func dropLineBreak(_ value: inout [UInt8]) {
        if value.last == 0x0A { value.removeLast() }
        if value.last == 0x0D { value.removeLast() }
    }

    /// The secret of a file, copied into `owner`.
    private func readFile(_ path: String, name: String) throws(Problem) -> Value {
        var bytes = try SecretFile.read(path, name: name, limit: Self.limit)
        defer { bytes.overwriteWithZeros() }
        let lower = path.lowercased()
        if lower.hasSuffix(".csv") { return try keyedCSV(bytes, path: path, name: name) }
        if lower.hasSuffix(".json") { return try keyedJSON(bytes, path: path, name: name) }
        Self.dropLineBreak(&bytes)
        try Self.check(bytes, "--secret \(name): \(path)", at: Location(file: path))
        return .single(owner.copy(bytes))
    }

    /// `VARIABLE,value` rows under a header naming the variable, read as the inventory is (RFC
    /// 4180: a value with a comma or a quote is quoted, its quotes doubled; CRLF; a byte order mark).
    private func keyedCSV(_ bytes: [UInt8], path: String, name: String) throws(Problem) -> Value {
        var records = try CSVRecords.read(bytes, file: path)
        defer { for i in records.indices { for j in records[i].fields.indices { records[i].fields[j].overwriteWithZeros() } } }
        guard !records.isEmpty else { throw Problem(.secretEmpty, at: Location(file: path), "--secret \(name): \(path) is empty") }
        let header = records.removeFirst()
        let names = header.fields.map { String(decoding: $0, as: UTF8.self).trimmingCharacters(in: .whitespaces) }
        guard names.count == 2, let variable = Self.variable(named: names[0]) else {
            throw Problem(.secretSource, at: Location(file: path, line: header.line), "--secret \(name): \(path) starts with a header VARIABLE,value (as sAMAccountName,password), the variable a user's row is found by")
        }
        var table: [String: MutableByteView] = [:]
        for record in records {
            let at = Location(file: path, line: record.line)
            guard record.fields.count == 2 else {
                // The line is not shown: it may hold a value.
                throw Problem(.secretSource, at: at, "--secret \(name): line \(record.line) of \(path) is not KEY,value: it has \(record.fields.count) fields (a value that holds a comma is quoted)")
            }
            let key = String(decoding: record.fields[0], as: UTF8.self)
            guard table[key] == nil else {
                throw Problem(.secretSource, at: at, "--secret \(name): \(path) gives \(names[0]) \"\(Problem.printable(key))\" twice")
            }
            try Self.check(record.fields[1], "--secret \(name): the value for \(names[0]) \"\(Problem.printable(key))\" on line \(record.line) of \(path)", at: at)
            table[key] = owner.copy(record.fields[1])
        }
        return .keyed(variable, table)
    }

    /// `{"key": VARIABLE, "values": {KEY: value, ...}}`, read with positions: a syntax error and a
    /// key given twice name their line and column.
    private func keyedJSON(_ bytes: [UInt8], path: String, name: String) throws(Problem) -> Value {
        let shape = "--secret \(name): \(path) holds {\"key\": VARIABLE, \"values\": {KEY: value, ...}}"
        let document: RawValue
        do { document = try JSONReader.document(bytes, file: path) } catch {
            throw Problem(.secretSource, at: error.location, "--secret \(name): \(error.message)")
        }
        guard case .dictionary(let members) = document.kind else { throw Problem(.secretSource, at: Location(file: path), shape) }
        var keyVariable: Variable?
        var entries: [RawValue.Member]?
        for m in members {
            switch m.key {
            case "key":
                guard keyVariable == nil, case .string(let text) = m.value.kind, let v = Self.variable(named: text) else {
                    throw Problem(.secretSource, at: m.keyLocation, "\(shape): \"key\" is not one variable's name, or is given twice")
                }
                keyVariable = v
            case "values":
                guard entries == nil, case .dictionary(let list) = m.value.kind else {
                    throw Problem(.secretSource, at: m.keyLocation, "\(shape): \"values\" is not an object, or is given twice")
                }
                entries = list
            default:
                throw Problem(.secretSource, at: m.keyLocation, "\(shape): \"\(Problem.printable(m.key))\" is not one of them")
            }
        }
        guard let keyVariable, let entries else { throw Problem(.secretSource, at: Location(file: path), shape) }
        var table: [String: MutableByteView] = [:]
        for e in entries {
            guard table[e.key] == nil else {
                throw Problem(.secretSource, at: e.keyLocation, "--secret \(name): the key \"\(Problem.printable(e.key))\" is given twice")
            }
            guard case .string(let s) = e.value.kind else {
                throw Problem(.secretSource, at: e.keyLocation, "--secret \(name): the value for \"\(Problem.printable(e.key))\" is not a string")
            }
            let value = Array(s.utf8)
            try Self.check(value, "--secret \(name): the value for \"\(Problem.printable(e.key))\"", at: e.keyLocation)
            table[e.key] = owner.copy(value)
        }
        return .keyed(keyVariable, table)
    }

    private static func variable(named text: String) -> Variable? {
        guard case .success(let (t, _)) = StringTemplate.parse("$(\(text))"), t.parts.count == 1, let v = t.variables.first else { return nil }
        return v
    }
}
