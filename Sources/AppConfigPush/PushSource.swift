import AppConfigBatch
import AppConfigCore
import AppConfigOutput
import AppConfigSpec
import Foundation

/// What `render` published, read for a push: the delivery, every `index.jsonl` line, the DDM
/// declarations by Identifier, and each MDM command's bytes. A folder output (its symlink or a
/// generation) or a tar, read by the same reader `merge` uses.
/// Immutable once read: shared by the workers that read it.
public final class PushSource: @unchecked Sendable {
    /// The deliveries a server takes.
    public enum Delivery: String, Sendable {
        case ddm
        case mdmSettings = "mdm-settings"
        case mdmInstall = "mdm-install"

        public var isDDM: Bool { self == .ddm }
    }

    /// One `index.jsonl` line.
    public struct Device: Sendable {
        /// The device key.
        public var key: String
        /// DDM: the set's Identifiers (activation, configuration, assets); empty for a removal.
        public var declarations: [String]
        /// The line's `sha256`: it changes exactly when the device's set or any of its
        /// declarations (or its command) does; `removed` for a DDM removal's line, which has none.
        public var digest: String
        /// A removal: an empty set, or an MDM removal command.
        public var removed: Bool
        /// MDM (and the DDM files layout): the device's file in the output.
        public var path: String?
        /// Its line in `index.jsonl`, for messages.
        public var line: Int
        /// The assignments (variants) it matched, in order (`index.jsonl`'s `assignments`).
        public var assignments: [String] = []
        /// DDM: its set resolved to indices into `declarations.all`, in the set's order.
        var indexes: [Int32] = []
    }

    /// One declaration of `declarations.jsonl` (or `declarations/<Identifier>.json`).
    public struct Declaration: Sendable {
        public var identifier: String
        public var type: String
        /// Our ServerToken: it changes exactly when the content does.
        public var serverToken: String
        /// The declaration as the server takes it (one JSON object): its line where it lies in
        /// the output's `declarations.jsonl` (copied, 4M bodies were a second of a status run).
        public var body: ArraySlice<UInt8>

        public init(identifier: String, type: String, serverToken: String, body: ArraySlice<UInt8>) {
            (self.identifier, self.type, self.serverToken, self.body) = (identifier, type, serverToken, body)
        }

        /// For an asset: where the device fetches it, its size, its hash when the declaration
        /// gives one, and whether the device must authenticate (a secret document). Read from the
        /// body when asked: a status run never asks, and made for 1M assets as the output was
        /// read it was two million strings.
        public var asset: AssetReference? {
            guard type.hasPrefix("com.apple.asset.") else { return nil }
            return PushSource.assetReference(body)
        }

        /// The order a device's declarations are stored and added in: what another names first.
        public var rank: Int {
            if type.hasPrefix("com.apple.asset.") { return 0 }
            if type.hasPrefix("com.apple.configuration.") { return 1 }
            if type.hasPrefix("com.apple.activation.") { return 2 }
            return 1
        }
    }

    public struct AssetReference: Sendable, Equatable {
        public var url: String
        public var size: Int?
        public var sha256: String?
        public var authenticated: Bool
    }

    public let path: String
    public let delivery: Delivery
    public let devices: [Device]
    public let declarations: DeclarationTable
    private let output: ShardOutput
    private let members: [String: ShardOutput.Member]

    /// Reads the output at `path`; its problems name the file and line.
    public init(_ path: String) throws(Problem) {
        self.path = path
        let output = try ShardOutput(path, reading: ["index.jsonl", "declarations.jsonl"])
        self.output = output
        let isTar = output.isTar
        let header = output.manifest.header
        guard let text = header.first(where: { $0.name == "delivery" })?.value else {
            throw Problem(PushCode.source, at: Location(file: path), "\(path) was rendered with --delivery plist: there is nothing to push to a DDM or MDM server (render with --delivery ddm, mdm-settings or mdm-install)")
        }
        guard let delivery = Delivery(rawValue: text) else {
            throw Problem(PushCode.source, at: Location(file: path), "\(path) was rendered with --delivery \(text): there is nothing to push to a DDM or MDM server (render with --delivery ddm, mdm-settings or mdm-install)")
        }
        self.delivery = delivery
        var members: [String: ShardOutput.Member] = [:]
        if case .tar(let list) = output.container {
            for m in list { members[String(decoding: output.name(of: m), as: UTF8.self)] = m }
        }
        self.members = members
        let indexName = Self.describe(path, "index.jsonl", tar: isTar)
        var table = DeclarationTable([])
        if delivery.isDDM {
            let lines = output.file("declarations.jsonl")
            if !lines.isEmpty {
                let name = Self.describe(path, "declarations.jsonl", tar: isTar)
                let split = lines.lineRanges
                let numbers = Self.nonEmptyLines(split)
                table = DeclarationTable(try ParallelLines.map(numbers.count) { k throws(Problem) -> Declaration in
                    try Self.declaration(lines[split[numbers[k]]], file: name, line: numbers[k] + 1)
                })
            } else {
                // The files layout: a JSON file per declaration under `declarations/`.
                var read: [Declaration] = []
                for name in Self.memberNames(output, members, under: "declarations/") {
                    read.append(try Self.declaration(try Self.fileBytes(output, members, name, path: path)[...], file: Self.describe(path, name, tar: isTar), line: 1))
                }
                table = DeclarationTable(read)
            }
        }
        // The table first, then the index, each device's set resolved as its line is read.
        devices = try Self.readIndex(output.file("index.jsonl"), file: indexName, table: delivery.isDDM ? table : nil)
        declarations = table
    }

    /// The declarations of device `i`'s set (in `devices`), as indices into `declarations.all`.
    public func declarationIndexes(ofDevice i: Int) -> ArraySlice<Int32> { devices[i].indexes[...] }

    public var isTar: Bool { output.isTar }

    /// A file of the output: a folder's file or an archive's member, by its relative path.
    public func fileBytes(_ relative: String) throws(Problem) -> [UInt8] { try Self.fileBytes(output, members, relative, path: path) }

    private static func fileBytes(_ output: ShardOutput, _ members: [String: ShardOutput.Member], _ relative: String, path: String) throws(Problem) -> [UInt8] {
        switch output.container {
        case .tar:
            guard let m = members[relative] else {
                throw Problem(PushCode.source, at: Location(file: path), "\(path) holds no member \(relative), which its index names")
            }
            return Array(output.body(of: m))
        case .folder(let generation):
            do { return try readFileBytes(generation + "/" + relative, limit: 64 << 20) } catch { throw Problem(PushCode.source, at: Location(file: generation + "/" + relative), error.problem.message) }
        }
    }

    private static func memberNames(_ output: ShardOutput, _ members: [String: ShardOutput.Member], under prefix: String) -> [String] {
        switch output.container {
        case .tar: return members.keys.filter { $0.hasPrefix(prefix) }.sorted()
        case .folder(let generation):
            let names = (try? FileManager.default.contentsOfDirectory(atPath: generation + "/" + prefix)) ?? []
            return names.filter { $0.hasSuffix(".json") }.sorted().map { prefix + $0 }
        }
    }

    static func describe(_ path: String, _ name: String, tar: Bool) -> String { tar ? "\(path) (\(name))" : "\(path)/\(name)" }

    // MARK: Parsing

    private static func object(_ bytes: ArraySlice<UInt8>, file: String, line: Int) throws(Problem) -> [String: RawValue] {
        let value: RawValue
        do { value = try JSONReader.document(Array(bytes), file: file) } catch {
            throw Problem(PushCode.source, at: Location(file: file, line: line, column: error.location.column), "\(error.message)")
        }
        guard case .dictionary(let members) = value.kind else {
            throw Problem(PushCode.source, at: Location(file: file, line: line), "not a JSON object")
        }
        var out: [String: RawValue] = [:]
        for m in members { out[m.key] = m.value }
        return out
    }

    private static func string(_ o: [String: RawValue], _ key: String, file: String, line: Int) throws(Problem) -> String {
        guard case .string(let s)? = o[key]?.kind, !s.isEmpty else {
            throw Problem(PushCode.source, at: Location(file: file, line: line), "no \"\(key)\" string")
        }
        return s
    }

    /// The index's lines, read on every core (the reader keeps every value's place: a line at a
    /// time it was most of a status run's reading).
    /// With the DDM declarations' `table`, each device's set is resolved to it as its line is
    /// read: the Identifiers found are the table's own strings (no string made per set member,
    /// none compared twice), and one the output does not hold is an error naming the device
    /// and its line.
    static func readIndex(_ bytes: [UInt8], file: String, table: DeclarationTable? = nil) throws(Problem) -> [Device] {
        let split = bytes.lineRanges
        let numbers = nonEmptyLines(split)
        return try ParallelLines.map(numbers.count) { k throws(Problem) -> Device in
            var d = try device(bytes[split[numbers[k]]], file: file, number: numbers[k] + 1, table: table)
            if let table, d.indexes.count != d.declarations.count {
                d.indexes = []
                d.indexes.reserveCapacity(d.declarations.count)
                for id in d.declarations {
                    guard let at = table.index(of: id) else {
                        throw Problem(PushCode.source, at: Location(file: file, line: d.line), "device \(d.key) names the declaration \(id), which the output does not hold")
                    }
                    d.indexes.append(Int32(at))
                }
            }
            return d
        }
    }

    /// The numbers (from 0) of the lines that hold something: results made only for them, not
    /// made for all and the empty ones' dropped after (a copy of 1M devices, 3M declarations).
    static func nonEmptyLines(_ split: [Range<Int>]) -> [Int] {
        var numbers: [Int] = []
        numbers.reserveCapacity(split.count)
        for (i, line) in split.enumerated() where !line.isEmpty { numbers.append(i) }
        return numbers
    }

    static func device(_ line: ArraySlice<UInt8>, file: String, number: Int, table: DeclarationTable? = nil) throws(Problem) -> Device {
        // The usual line, read lean (a status run at 1M devices reads 1M of them); anything the
        // lean read does not take goes to the values' reader, which names what is wrong.
        if let j = LeanJSON(line), let key = j.string(j.member(0, "device")), !key.isEmpty {
            let removed = j.bool(j.member(0, "removed")) ?? false
            let path = j.string(j.member(0, "path"))
            let digest = removed && j.member(0, "sha256") == nil ? "removed" : j.string(j.member(0, "sha256"))
            // A set member the table holds is its string there (found by its bytes).
            var indexes: [Int32] = []
            let ids = j.items(j.member(0, "declarations")).map { n -> String? in
                if let table, let raw = j.utf8(n), let at = table.index(ofUTF8: raw) {
                    indexes.append(Int32(at))
                    return table.all[at].identifier
                }
                return j.string(n)
            }
            if let digest, !digest.isEmpty, !ids.contains(where: { $0 == nil }), path.map(ShardOutput.isSafeMemberName) ?? true,
               j.member(0, "declarations").map({ j.isArray($0) }) ?? true {
                return Device(key: key, declarations: ids.map { $0! }, digest: digest, removed: removed, path: path, line: number,
                              assignments: j.items(j.member(0, "assignments")).compactMap(j.string), indexes: indexes)
            }
        }
        let o = try object(line, file: file, line: number)
        var ids: [String] = []
        if case .array(let list)? = o["declarations"]?.kind {
            for v in list {
                guard case .string(let s) = v.kind else { throw Problem(PushCode.source, at: Location(file: file, line: number), "a declaration that is not a string") }
                ids.append(s)
            }
        }
        var removed = false
        if case .boolean(let b)? = o["removed"]?.kind { removed = b }
        var path: String?
        if case .string(let p)? = o["path"]?.kind { path = p }
        if let p = path, !ShardOutput.isSafeMemberName(p) {
            throw Problem(PushCode.source, at: Location(file: file, line: number), "the path \(p) leaves the output")
        }
        // A removal's line has no digest (an empty set is the same for every device).
        let digest = removed && o["sha256"] == nil ? "removed" : try string(o, "sha256", file: file, line: number)
        var assignments: [String] = []
        if case .array(let list)? = o["assignments"]?.kind {
            for v in list { if case .string(let s) = v.kind { assignments.append(s) } }
        }
        return Device(key: try string(o, "device", file: file, line: number), declarations: ids,
                      digest: digest, removed: removed, path: path, line: number, assignments: assignments)
    }

    static func declaration(_ bytes: ArraySlice<UInt8>, file: String, line: Int) throws(Problem) -> Declaration {
        if let j = LeanJSON(bytes), let id = j.string(j.member(0, "Identifier")), !id.isEmpty, let type = j.utf8(j.member(0, "Type")).map(Self.type), !type.isEmpty,
           let token = j.string(j.member(0, "ServerToken")), !token.isEmpty {
            return Declaration(identifier: id, type: type, serverToken: token, body: bytes)
        }
        let o = try object(bytes, file: file, line: line)
        return Declaration(identifier: try string(o, "Identifier", file: file, line: line), type: try string(o, "Type", file: file, line: line),
                           serverToken: try string(o, "ServerToken", file: file, line: line), body: bytes)
    }

    /// An asset declaration's `Payload.Reference` (nil without one, or without its `DataURL`).
    static func assetReference(_ body: ArraySlice<UInt8>) -> AssetReference? {
        if let j = LeanJSON(body) {
            let payload = j.member(0, "Payload")
            guard let reference = j.member(payload, "Reference"), j.isObject(reference) else { return nil }
            let r = AssetReference(url: j.string(j.member(reference, "DataURL")) ?? "", size: j.integer(j.member(reference, "Size")),
                                   sha256: j.string(j.member(reference, "Hash-SHA-256")), authenticated: j.member(payload, "Authentication") != nil)
            return r.url.isEmpty ? nil : r
        }
        guard let value = try? JSONReader.document(Array(body), file: ""), case .dictionary(let o) = value.kind,
              case .dictionary(let payload)? = o.first(where: { $0.key == "Payload" })?.value.kind,
              case .dictionary(let reference)? = payload.first(where: { $0.key == "Reference" })?.value.kind else { return nil }
        var r = AssetReference(url: "", size: nil, sha256: nil, authenticated: false)
        for m in reference {
            switch (m.key, m.value.kind) {
            case ("DataURL", .string(let s)): r.url = s
            case ("Size", .integer(let n)): r.size = Int(n)
            case ("Hash-SHA-256", .string(let s)): r.sha256 = s
            default: break
            }
        }
        // Beside the Reference: the device fetches it with its MDM identity.
        r.authenticated = payload.contains { $0.key == "Authentication" }
        return r.url.isEmpty ? nil : r
    }

    /// The types render writes, as constants: a String made per declaration was 3M allocations
    /// (and frees) of a status run at 1M devices; a constant costs neither.
    private static let knownTypes: [String] = [
        "com.apple.activation.simple", "com.apple.configuration.app.managed", "com.apple.asset.data",
        "com.apple.configuration.management.status-subscriptions", "com.apple.asset.credential.identity",
        "com.apple.asset.credential.userpassword", "com.apple.asset.credential.certificate",
        "com.apple.asset.credential.acme", "com.apple.asset.credential.scep",
    ]

    private static let knownTypeBytes = knownTypes.map { Array($0.utf8) }

    private static func type(_ utf8: ArraySlice<UInt8>) -> String {
        // Compared as bytes (a generic comparison per known type was 1% of a status run).
        utf8.withUnsafeBufferPointer { u in
            for (i, known) in knownTypeBytes.enumerated() where known.count == u.count {
                if known.withUnsafeBufferPointer({ memcmp($0.baseAddress!, u.baseAddress!, u.count) }) == 0 { return knownTypes[i] }
            }
            return String(decoding: u, as: UTF8.self)
        }
    }

    /// The CommandUUID of an MDM command plist (XML, as render writes it).
    public static func commandUUID(_ plist: [UInt8]) -> String? {
        let key = Array("<key>CommandUUID</key>".utf8), open = Array("<string>".utf8), close = Array("</string>".utf8)
        guard let k = plist.firstRange(of: key), let o = plist[k.upperBound...].firstRange(of: open),
              let c = plist[o.upperBound...].firstRange(of: close) else { return nil }
        return String(decoding: plist[o.upperBound..<c.lowerBound], as: UTF8.self)
    }
}
