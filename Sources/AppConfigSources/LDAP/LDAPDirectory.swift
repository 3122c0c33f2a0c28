import AppConfigCore
import CLDAP
import Foundation

/// A password, held apart so that it never reaches a description, a log or a report.
public struct Secret: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// Read only by the connection's bind (`LDAPConnection`), never outside this module.
    let value: [UInt8]
    public init(_ value: String) { self.value = Array(value.utf8) }
    public var description: String { "<redacted>" }
    public var debugDescription: String { "<redacted>" }
}

/// How to reach and read an LDAP / Active Directory server.
public struct LDAPConfiguration: Sendable {
    public enum Scope: String, SettingChoice { case base, one, sub }
    public enum Targeting: String, SettingChoice { case auto, always, never }

    public var url: String
    /// Nil: an anonymous bind.
    public var bindDN: String?
    public var password: Secret?
    public var startTLS = false
    /// Certificates to trust (PEM); the system's otherwise.
    public var caFile: String?
    /// Skip certificate verification (a warning is printed by the CLI).
    public var insecure = false
    /// Empty: the server's own, read from its RootDSE.
    public var base: String
    public var scope: Scope = .sub
    public var filter = "(objectClass=person)"
    public var pageSize = 1000
    /// Bounds every network wait: connect, TLS handshake, StartTLS, bind, each page.
    public var networkTimeout = 10.0
    /// Bounds the whole directory load, retries and backoff included.
    public var deadline = 600.0
    /// Attempts after the first, with exponential backoff from `backoff` seconds.
    public var retries = 4
    public var backoff = 0.5
    /// Look the inventory's users up by key in chunks of OR filters instead of reading the whole
    /// subtree. `auto`: when there are at most `targetedLimit` distinct keys.
    public var targeting: Targeting = .auto
    public var targetedLimit = 2_000
    public var chunkSize = 100

    public init(url: String, base: String) {
        self.url = url
        self.base = base
    }

    /// Whether an LDAP URL carries `user:password@` before its host. RFC 4516 URLs have no such
    /// part; a password there would reach logs and reports with the URL, so it is refused.
    public static func holdsCredentials(_ url: String) -> Bool {
        guard let scheme = url.range(of: "://") else { return false }
        return url[scheme.upperBound...].prefix { $0 != "/" && $0 != "?" }.contains("@")
    }

    /// The refusal, which never repeats the URL.
    public static let credentialsRefusal = "the LDAP URL holds credentials (user:password@host): they are refused and not used; "
        + "give --ldap-bind-dn and --ldap-password-env or --ldap-password-file"
}

/// An LDAP failure in the library's words, never with the password.
struct LDAPError: Error, Sendable, CustomStringConvertible {
    var code: Int32
    var message: String
    /// A retry may help (server down, busy, unavailable, timed out).
    var isTransient: Bool

    init(code: Int32, message: String, transient: Bool? = nil) {
        self.code = code
        self.message = message
        isTransient = transient ?? [LDAP_SERVER_DOWN, LDAP_CONNECT_ERROR, LDAP_TIMEOUT, LDAP_BUSY, LDAP_UNAVAILABLE].contains(code)
    }
    var description: String { message }

    /// What failed, as the problem code the job reports.
    var kind: SourceCode {
        if message.hasPrefix("TLS") { return .ldapTLS }
        if isTransient || code == LDAP_TIMEOUT || message.hasPrefix("cannot use") { return .ldapConnect }
        return code == LDAP_INVALID_CREDENTIALS ? .ldapBind : .ldapSearch
    }
}

/// Reads users from LDAP into a `UserTable`: paged (RFC 2696), retried without duplicating or
/// losing entries, or targeted at the inventory's users.
public enum LDAPDirectory {
    public struct Progress: Sendable {
        public var pages: Int
        public var entries: Int
        public var attempt: Int
    }

    /// `referencedKeys` is called only to decide on (and run) targeted mode. `onPage` is called
    /// after each page has been added (tests use it to stop the server mid-search); `warning` for
    /// each failed attempt that will be retried, and for a password sent in clear.
    public static func load(_ config: LDAPConfiguration, map: AttributeMap, referencedKeys: () -> [String] = { [] },
                            onPage: (Progress) -> Void = { _ in },
                            warning: (Problem) -> Void = { _ in }) throws(Problem) -> UserTable {
        if config.password != nil && config.url.hasPrefix("ldap://") && !config.startTLS {
            warning(Problem(.ldapBind, .warning, at: Location(file: config.url),
                            "the bind password crosses the network in clear text: use ldaps:// or --ldap-starttls"))
        }
        var builder = UserTableBuilder(source: config.url, map: map)
        var keys: [String] = []
        if config.targeting != .never {
            var seen = Set<String>()
            keys = referencedKeys().filter { !$0.isEmpty && seen.insert($0.lowercased()).inserted }
        }
        let targeted = config.targeting == .always || (config.targeting == .auto && !keys.isEmpty && keys.count <= config.targetedLimit)
        let filters: [String]
        if targeted {
            filters = stride(from: 0, to: keys.count, by: config.chunkSize).map { start in
                let chunk = keys[start..<min(start + config.chunkSize, keys.count)]
                return "(&\(config.filter)(|" + chunk.map { "(\(map.joinAttribute)=\(escapeFilterValue($0)))" }.joined() + "))"
            }
        } else {
            filters = [config.filter]
        }
        var progress = Progress(pages: 0, entries: 0, attempt: 1)
        var references: [String] = []
        let mark = builder.mark()
        let table = try attempting(config, warning: warning, beforeRetry: {
            // Whatever the failed attempt delivered is dropped: the next one starts the search over.
            builder.rollback(to: mark)
            progress.entries = 0
            progress.attempt += 1
            references = []
        }) { connection in
            let memberOf = map.readsGroups ? ["memberof"] : []
            for filter in filters {
                try connection.pagedSearch(filter: filter, attributes: builder.attributeOrder + memberOf, multiValued: memberOf.count,
                                           pageSize: config.pageSize) { e in
                    builder.add(dn: e.dn, values: e.values, memberOf: e.lists.first ?? [],
                                location: Location(file: config.url, dn: e.dn))
                    progress.entries += 1
                } reference: { references.append($0) } pageDone: {
                    progress.pages += 1
                    onPage(progress)
                }
            }
            if map.readsGroups {
                // The group entries, for nesting and for groups that list their members (OpenLDAP's
                // groupOfNames has no memberOf on users without the memberof overlay). Also in
                // targeted mode: groups are few beside users, and a nested group can sit anywhere.
                let filter = "(|" + AttributeMap.groupClasses.map { "(objectClass=\($0))" }.joined() + ")"
                try connection.pagedSearch(filter: filter, attributes: AttributeMap.groupAttributes, multiValued: 3,
                                           pageSize: config.pageSize) { e in
                    builder.addGroup(dn: e.dn, members: e.lists[1] + e.lists[2], memberOf: e.lists[0],
                                     location: Location(file: config.url, dn: e.dn))
                    progress.entries += 1
                } pageDone: {
                    progress.pages += 1
                    onPage(progress)
                }
            }
            try builder.checkPool()
            return builder.finish()
        }
        if !references.isEmpty {
            let unique = Array(NSOrderedSet(array: references)) as? [String] ?? references
            warning(Problem(.ldapReferral, .warning, at: Location(file: config.url),
                            "the search under the base refers \(unique.count) subtree\(unique.count == 1 ? "" : "s") to other servers, not read: "
                            + unique.prefix(3).joined(separator: ", ") + (unique.count > 3 ? " and \(unique.count - 3) more" : "")
                            + " (their users are not found; search there with another --directory)"))
        }
        return table
    }

    /// Connects and binds (retried like a load), and reads the RootDSE when no base is given:
    /// what a run checks before it reads anything else.
    public static func check(_ config: LDAPConfiguration, warning: (Problem) -> Void = { _ in }) throws(Problem) {
        try attempting(config, warning: warning) { connection in
            if config.base.isEmpty { _ = try connection.namingContext() }
        }
    }

    /// Runs `body` on a new connection, again after a transient failure (down, busy, silent) with
    /// exponential backoff, up to `retries` more times and within the deadline; one warning per retry.
    private static func attempting<T>(_ config: LDAPConfiguration, warning: (Problem) -> Void, beforeRetry: () -> Void = {},
                                      _ body: (LDAPConnection) throws -> T) throws(Problem) -> T {
        if LDAPConfiguration.holdsCredentials(config.url) {
            throw Problem(.ldapConnect, at: Location(file: "the LDAP URL"), LDAPConfiguration.credentialsRefusal)
        }
        var attempt = 1
        var delay = config.backoff
        let budget = LDAPBudget(timeout: config.networkTimeout, deadline: config.deadline)
        while true {
            do {
                return try body(try LDAPConnection(config, budget: budget))
            } catch let error as LDAPError where error.isTransient && attempt <= config.retries && budget.remaining > delay {
                warning(Problem(error.kind, .warning, at: Location(file: config.url),
                                "\(error.message); retrying in \(LDAPWatchdog.seconds(delay)) (attempt \(attempt + 1) of \(config.retries + 1))"))
                beforeRetry()
                attempt += 1
                usleep(useconds_t(delay * 1_000_000))
                delay *= 2
            } catch let error as LDAPError {
                var message = error.message
                if error.isTransient {
                    message += " (after \(attempt == 1 ? "1 attempt" : "\(attempt) attempts")"
                    if attempt <= config.retries { message += "; --ldap-deadline \(LDAPWatchdog.seconds(config.deadline)) leaves no time for another" }
                    message += ")"
                }
                throw Problem(error.kind, at: Location(file: config.url), message)
            } catch {
                throw Problem(.ldapSearch, at: Location(file: config.url), "\(error)")
            }
        }
    }

    /// RFC 4515: `*`, `(`, `)`, `\` and NUL become `\2a`, `\28`, `\29`, `\5c`, `\00`.
    public static func escapeFilterValue(_ value: String) -> String {
        var out: [UInt8] = []
        for u in value.utf8 {
            switch u {
            case UInt8(ascii: "*"): out += Array("\\2a".utf8)
            case UInt8(ascii: "("): out += Array("\\28".utf8)
            case UInt8(ascii: ")"): out += Array("\\29".utf8)
            case UInt8(ascii: "\\"): out += Array("\\5c".utf8)
            case 0: out += Array("\\00".utf8)
            default: out.append(u)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// The time a directory load may take: each wait at most `timeout`, all of them together until
/// `deadline` seconds after the load began.
struct LDAPBudget {
    let timeout: Double
    let deadline: Double
    private let start = monotonicSeconds()

    var remaining: Double { deadline - (monotonicSeconds() - start) }

    /// How long the next wait may take; a timeout error once the deadline has passed.
    func wait() throws -> Double {
        let left = remaining
        guard left > 0 else {
            throw LDAPError(code: LDAP_TIMEOUT, message: "the directory load passed its deadline (--ldap-deadline \(LDAPWatchdog.seconds(deadline)))",
                            transient: false)
        }
        return min(timeout, left)
    }
}

/// One search result: the DN, the first value of each single-valued attribute asked for, and
/// every value of each multi-valued one.
struct LDAPEntry {
    var dn: String
    var values: [[UInt8]?]
    var lists: [[[UInt8]]]
}
