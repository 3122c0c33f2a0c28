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
/// or a value per user from a keyed file. The bytes live in buffers of this store's own, cleared
/// when it is done (`clear`) so that a core dump after the run holds none of them.
///
/// A keyed file: a `.csv` whose header's first column names the variable the rows are keyed by
/// (`sAMAccountName,password`: the second column is the value), or a `.json` object
/// `{"key": "sAMAccountName", "values": {"jdoe": "…"}}`.
public final class SecretStore: @unchecked Sendable {
    enum Value {
        case single(MutableByteView)
        case keyed(Variable, [String: MutableByteView])
    }

    private(set) var values: [String: Value] = [:]
    /// Holds every value's bytes.
    private var owner = BufferArena()

    public init() {}

    /// Reads every source. A source that cannot be read is a `secret.source` problem that names the
    /// source, never a value: a command's first line of standard error, never its output.
    public init(_ sources: [SecretSource], environment: [String: String] = ProcessInfo.processInfo.environment) throws(Problem) {
        for source in sources {
            guard values[source.name] == nil else { throw Problem(.secretSource, "--secret \(source.name) is given twice") }
            switch source.kind {
            case .environment(let variable):
                guard let text = environment[variable] else {
                    throw Problem(.secretSource, "--secret \(source.name): the environment has no \(variable)")
                }
                values[source.name] = .single(owner.slots(copying: Array(text.utf8)))
            case .file(let path):
                values[source.name] = try Self.readFile(path, name: source.name, into: owner)
            case .command(let command):
                values[source.name] = .single(owner.slots(copying: try Self.run(command, name: source.name)))
            }
        }
    }

    /// The variable a per-user secret is keyed by.
    public func keyVariable(of name: String) -> Variable? {
        if case .keyed(let v, _)? = values[name] { return v }
        return nil
    }

    public func has(_ name: String) -> Bool { values[name] != nil }

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
    public func clear() {
        for value in values.values {
            switch value {
            case .single(let b): b.fill(with: 0)
            case .keyed(_, let table): for b in table.values { b.fill(with: 0) }
            }
        }
        values = [:]
        owner = BufferArena()
    }

    deinit { clear() }

    /// The secret of a file, copied into `owner`.
    private static func readFile(_ path: String, name: String, into owner: BufferArena) throws(Problem) -> Value {
        var bytes: [UInt8]
        do { bytes = try readFileBytes(path, limit: 64 << 20) } catch {
            throw Problem(.secretSource, at: Location(file: path), "--secret \(name): cannot read \(path): \(error.reason)")
        }
        defer { for i in bytes.indices { bytes[i] = 0 } }
        let lower = path.lowercased()
        if lower.hasSuffix(".csv") { return try keyedCSV(bytes, path: path, name: name, into: owner) }
        if lower.hasSuffix(".json") { return try keyedJSON(bytes, path: path, name: name, into: owner) }
        var value = bytes
        if value.last == 0x0A { value.removeLast() }
        if value.last == 0x0D { value.removeLast() }
        return .single(owner.slots(copying: value))
    }

    /// `VARIABLE,value` rows under a header naming the variable.
    private static func keyedCSV(_ bytes: [UInt8], path: String, name: String, into owner: BufferArena) throws(Problem) -> Value {
        let text = String(decoding: bytes, as: UTF8.self)
        var lines = text.split(omittingEmptySubsequences: true, whereSeparator: { $0 == "\n" || $0 == "\r\n" }).map { String($0).trimmingCharacters(in: CharacterSet(charactersIn: "\r")) }
        guard !lines.isEmpty else { throw Problem(.secretSource, at: Location(file: path), "--secret \(name): \(path) is empty") }
        let header = lines.removeFirst().split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        guard header.count == 2, let variable = variable(named: header[0]) else {
            throw Problem(.secretSource, at: Location(file: path, line: 1), "--secret \(name): \(path) starts with a header VARIABLE,value (as sAMAccountName,password), the variable a user's row is found by")
        }
        var table: [String: MutableByteView] = [:]
        for (n, line) in lines.enumerated() {
            guard let comma = line.firstIndex(of: ",") else {
                // The line is not shown: it may hold a value.
                throw Problem(.secretSource, at: Location(file: path, line: n + 2), "--secret \(name): line \(n + 2) of \(path) is not KEY,value")
            }
            let key = String(line[..<comma])
            guard table[key] == nil else {
                throw Problem(.secretSource, at: Location(file: path, line: n + 2), "--secret \(name): \(path) gives \(header[0]) \"\(Problem.printable(key))\" twice")
            }
            table[key] = owner.slots(copying: Array(line[line.index(after: comma)...].utf8))
        }
        return .keyed(variable, table)
    }

    /// `{"key": VARIABLE, "values": {KEY: value, ...}}`.
    private static func keyedJSON(_ bytes: [UInt8], path: String, name: String, into owner: BufferArena) throws(Problem) -> Value {
        guard let object = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any], let key = object["key"] as? String,
              let variable = variable(named: key), let entries = object["values"] as? [String: Any] else {
            throw Problem(.secretSource, at: Location(file: path), "--secret \(name): \(path) holds {\"key\": VARIABLE, \"values\": {KEY: value, ...}}")
        }
        var table: [String: MutableByteView] = [:]
        for (k, v) in entries {
            guard let s = v as? String else { throw Problem(.secretSource, at: Location(file: path), "--secret \(name): the value for \"\(Problem.printable(k))\" in \(path) is not a string") }
            table[k] = owner.slots(copying: Array(s.utf8))
        }
        return .keyed(variable, table)
    }

    private static func variable(named text: String) -> Variable? {
        guard case .success(let (t, _)) = StringTemplate.parse("$(\(text))"), t.parts.count == 1, let v = t.variables.first else { return nil }
        return v
    }

    /// Runs the command; its standard output is the secret (one trailing line break dropped).
    private static func run(_ command: String, name: String) throws(Problem) -> [UInt8] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", command]
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        do { try process.run() } catch {
            throw Problem(.secretSource, "--secret \(name): cannot run exec:\(Problem.printable(command)): \(error.localizedDescription)")
        }
        var (output, errors) = readPipes(out, err)
        process.waitUntilExit()
        defer { output.resetBytes(in: 0..<output.count) }
        guard process.terminationStatus == 0 else {
            let first = String(decoding: errors, as: UTF8.self).split(separator: "\n").first.map(String.init) ?? ""
            errors.resetBytes(in: 0..<errors.count)
            let status = process.terminationReason == .uncaughtSignal ? "killed by signal \(process.terminationStatus)" : "status \(process.terminationStatus)"
            throw Problem(.secretSource, "--secret \(name): exec:\(Problem.printable(command)) failed (\(status))" + (first.isEmpty ? "" : ": \(Problem.printable(first))"))
        }
        var value = [UInt8](output)
        if value.last == 0x0A { value.removeLast() }
        if value.last == 0x0D { value.removeLast() }
        return value
    }

    /// Both pipes read to their end at once (standard error on another thread).
    private static func readPipes(_ out: Pipe, _ err: Pipe) -> (Data, Data) {
        nonisolated(unsafe) var errors = Data()
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            errors = err.fileHandleForReading.readDataToEndOfFile()
            done.signal()
        }
        let output = out.fileHandleForReading.readDataToEndOfFile()
        done.wait()
        return (output, errors)
    }
}
