import AppConfigCore
import AppConfigOutput
import AppConfigSpec
import Foundation

/// What a server holds from earlier pushes, as far as this tool put it there: per device what was
/// fully pushed and notified (its `index.jsonl` digest, its set, or its command's UUID), per
/// declaration our token and the token the server stored. A push sends only what differs from it.
///
/// Kept as lines appended one `write` each: a push killed at any moment leaves every record it
/// finished and at most one line cut short (the reader drops it). A push that ends rewrites it
/// whole (a temporary renamed over it), one line per record that still stands.
public final class PushJournal: @unchecked Sendable {
    public struct DeviceRecord: Sendable, Equatable {
        /// The `index.jsonl` digest pushed.
        public var digest: String
        /// The enrollment the device's set (or command) went to.
        public var enrollment: String
        /// DDM: the set's name on the server, and the declarations it holds.
        public var set: String?
        public var declarations: [String]
        /// MDM: the command's UUID.
        public var commandUUID: String?
        /// The device's removal was pushed (its set taken away, or its removal command queued).
        public var removed: Bool

        public init(digest: String, enrollment: String, set: String? = nil, declarations: [String] = [], commandUUID: String? = nil, removed: Bool = false) {
            self.digest = digest
            self.enrollment = enrollment
            self.set = set
            self.declarations = declarations
            self.commandUUID = commandUUID
            self.removed = removed
        }
    }

    public struct DeclarationRecord: Sendable, Equatable {
        /// Our ServerToken of the content stored.
        public var ours: String
        /// The token the server computed: what devices report.
        public var server: String
    }

    static let magic = "appconfig-push 1"

    public let path: String
    /// The server it records: its kind and URL.
    public private(set) var server: String
    public private(set) var devices: [String: DeviceRecord] = [:]
    public private(set) var declarations: [String: DeclarationRecord] = [:]
    private let lock = NSLock()
    private var fd: Int32 = -1

    /// Reads the journal at `path` (none yet: empty) for `server`; one for another server is refused.
    /// `writable`: opened for appending, and locked against a second push.
    public convenience init(path: String, server: String, writable: Bool) throws(Problem) {
        try self.init(path: path, expecting: server, writable: writable)
    }

    /// `server` nil: the journal is read for whatever server its header records.
    private init(path: String, expecting server: String?, writable: Bool) throws(Problem) {
        self.path = path
        self.server = server ?? ""
        if access(path, F_OK) == 0 {
            let bytes: [UInt8]
            do { bytes = try readFileBytes(path, limit: 16 << 30) } catch { throw Problem(PushCode.journal, at: Location(file: path), error.problem.message) }
            try read(bytes, adoptingServer: server == nil)
        }
        guard writable else { return }
        fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw Problem(PushCode.journal, at: Location(file: path), "cannot write the journal \(path): \(systemError())") }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            close(fd)
            fd = -1
            throw Problem(PushCode.journal, at: Location(file: path), "the journal \(path) is in use by another push")
        }
        var info = stat()
        if fstat(fd, &info) == 0, info.st_size == 0 { append(headerLine()) }
    }

    deinit { if fd >= 0 { close(fd) } }

    /// The journal at `path` read for whatever server it records (nil when there is none):
    /// `appconfig status` reads the tokens a push recorded, whichever server it went to.
    public static func existing(at path: String) throws(Problem) -> PushJournal? {
        guard access(path, F_OK) == 0 else { return nil }
        return try PushJournal(path: path, expecting: nil, writable: false)
    }

    private func headerLine() -> [UInt8] {
        var out = Array(#"{"journal":"#.utf8)
        JSONText.appendString(Self.magic, to: &out)
        out += Array(#","server":"#.utf8)
        JSONText.appendString(server, to: &out)
        out += Array("}\n".utf8)
        return out
    }

    // MARK: Records

    public func device(_ key: String) -> DeviceRecord? { lock.withLock { devices[key] } }
    public func declaration(_ id: String) -> DeclarationRecord? { lock.withLock { declarations[id] } }

    public func recordDeclaration(_ id: String, ours: String, server: String) {
        let line = Self.line([("declaration", .text(id)), ("ours", .text(ours)), ("token", .text(server))])
        lock.withLock {
            declarations[id] = DeclarationRecord(ours: ours, server: server)
            append(line)
        }
    }

    public func recordDevice(_ key: String, _ record: DeviceRecord) {
        let line = Self.deviceLine(key, record)
        lock.withLock {
            devices[key] = record
            append(line)
        }
    }


    public func recordGone(_ id: String) {
        let line = Self.line([("gone", .text(id))])
        lock.withLock {
            declarations[id] = nil
            append(line)
        }
    }

    /// Rewrites the journal with what stands now, devices and declarations in sorted order.
    public func compact() throws(Problem) {
        lock.lock()
        defer { lock.unlock() }
        do {
            var out = headerLine()
            for key in devices.keys.sorted() { out += Self.deviceLine(key, devices[key]!) }
            for id in declarations.keys.sorted() {
                let d = declarations[id]!
                out += Self.line([("declaration", .text(id)), ("ours", .text(d.ours)), ("token", .text(d.server))])
            }
            let temporary = path + ".tmp-\(getpid())"
            let t = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
            guard t >= 0 else { throw Problem(PushCode.journal, at: Location(file: temporary), "cannot write \(temporary): \(systemError())") }
            defer { close(t) }
            do throws(Problem) { try writeAll(t, out, path: temporary) } catch {
                unlink(temporary)
                throw Problem(PushCode.journal, at: Location(file: temporary), error.message)
            }
            guard fsync(t) == 0, rename(temporary, path) == 0 else {
                let why = systemError()
                unlink(temporary)
                throw Problem(PushCode.journal, at: Location(file: path), "cannot replace the journal \(path): \(why)")
            }
            // Appends go on into the new file, under a lock of its own.
            if fd >= 0 {
                let next = open(path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW)
                if next >= 0 {
                    _ = flock(next, LOCK_EX | LOCK_NB)
                    close(fd)
                    fd = next
                }
            }
        }
    }

    /// Appends one whole line in one `write` (the caller holds the lock). A write that fails is
    /// not fatal for what the server holds: the next push asks the server again.
    private func append(_ line: [UInt8]) {
        guard fd >= 0 else { return }
        line.withUnsafeBytes { buffer in
            var done = 0
            while done < buffer.count {
                let n = write(fd, buffer.baseAddress! + done, buffer.count - done)
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { return }
                done += n
            }
        }
    }

    private enum Field { case text(String), list([String]), flag }

    private static func line(_ fields: [(String, Field)]) -> [UInt8] {
        var out: [UInt8] = [UInt8(ascii: "{")]
        for (i, (name, value)) in fields.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            JSONText.appendString(name, to: &out)
            out.append(UInt8(ascii: ":"))
            switch value {
            case .text(let s): JSONText.appendString(s, to: &out)
            case .flag: out += Array("true".utf8)
            case .list(let items):
                out.append(UInt8(ascii: "["))
                for (j, s) in items.enumerated() {
                    if j > 0 { out.append(UInt8(ascii: ",")) }
                    JSONText.appendString(s, to: &out)
                }
                out.append(UInt8(ascii: "]"))
            }
        }
        out += Array("}\n".utf8)
        return out
    }

    private static func deviceLine(_ key: String, _ r: DeviceRecord) -> [UInt8] {
        var fields: [(String, Field)] = [("device", .text(key)), ("sha256", .text(r.digest)), ("enrollment", .text(r.enrollment))]
        if let set = r.set { fields += [("set", .text(set)), ("declarations", .list(r.declarations))] }
        if let uuid = r.commandUUID { fields.append(("uuid", .text(uuid))) }
        if r.removed { fields.append(("removed", .flag)) }
        return line(fields)
    }

    // MARK: Reading

    private func read(_ bytes: [UInt8], adoptingServer: Bool) throws(Problem) {
        var number = 0
        var start = 0
        while start < bytes.count {
            guard let end = bytes[start...].firstIndex(of: UInt8(ascii: "\n")) else {
                // A last line cut short by a kill: the record it was writing did not finish.
                break
            }
            number += 1
            let line = Array(bytes[start..<end])
            start = end + 1
            guard !line.isEmpty else { continue }
            let o: [String: RawValue]
            do throws(Problem) {
                guard case .dictionary(let members) = try JSONReader.document(line, file: path).kind else { throw Problem(PushCode.journal, at: Location(), "not an object") }
                o = Dictionary(members.map { ($0.key, $0.value) }, uniquingKeysWith: { $1 })
            } catch {
                throw Problem(PushCode.journal, at: Location(file: path, line: number), "not a line of an appconfig push journal: \(error.message)")
            }
            func text(_ key: String) -> String? { if case .string(let s)? = o[key]?.kind { s } else { nil } }
            if number == 1 {
                guard text("journal") == Self.magic else {
                    throw Problem(PushCode.journal, at: Location(file: path, line: 1), "\(path) is not an appconfig push journal")
                }
                if adoptingServer, let recorded = text("server") { server = recorded }
                guard let recorded = text("server"), recorded == server else {
                    throw Problem(PushCode.journal, at: Location(file: path, line: 1), "the journal \(path) records pushes to \(text("server") ?? "another server"), not \(server): give --journal for this server")
                }
                continue
            }
            if let id = text("declaration"), let ours = text("ours"), let token = text("token") {
                declarations[id] = DeclarationRecord(ours: ours, server: token)
            } else if let id = text("gone") {
                declarations[id] = nil
            } else if let key = text("device") {
                guard let digest = text("sha256"), let enrollment = text("enrollment") else {
                    throw Problem(PushCode.journal, at: Location(file: path, line: number), "a device line without sha256 and enrollment")
                }
                var ids: [String] = []
                if case .array(let list)? = o["declarations"]?.kind {
                    for v in list { if case .string(let s) = v.kind { ids.append(s) } }
                }
                var removed = false
                if case .boolean(true)? = o["removed"]?.kind { removed = true }
                devices[key] = DeviceRecord(digest: digest, enrollment: enrollment, set: text("set"), declarations: ids, commandUUID: text("uuid"), removed: removed)
            } else {
                throw Problem(PushCode.journal, at: Location(file: path, line: number), "not a line of an appconfig push journal")
            }
        }
    }
}
