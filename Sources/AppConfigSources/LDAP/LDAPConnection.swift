import AppConfigCore
import CLDAP
import Foundation

/// One libldap session: options, TLS, bind, paged search. Every C pointer stays in here; every
/// blocking call is bounded by the budget through the watchdog.
final class LDAPConnection {
    private let ld: OpaquePointer
    private let config: LDAPConfiguration
    private let budget: LDAPBudget
    private let watchdog: LDAPWatchdog

    init(_ config: LDAPConfiguration, budget: LDAPBudget) throws {
        self.config = config
        self.budget = budget
        let endpoint = Self.hostAndPort(config.url)
        let server = endpoint.map { "\($0.0):\($0.1)" } ?? config.url
        let tls = config.url.hasPrefix("ldaps://")
        // One ldap:// or ldaps:// server: connected here (bounded in poll) and handed to libldap,
        // whose TLS handshake on the blocking socket then sleeps until an answer or the watchdog.
        // Anything else (ldapi://, a list of URLs) is libldap's to connect.
        var socket: Int32?
        if let (host, port) = endpoint, !config.url.contains(" ") {
            socket = try LDAPSocket.connect(host: host, port: port, seconds: try budget.wait())
        }
        var handle: OpaquePointer?
        let rc = socket.map { ldap_init_fd($0, LDAP_PROTO_TCP, config.url, &handle) } ?? ldap_initialize(&handle, config.url)
        guard rc == LDAP_SUCCESS, let handle else {
            if let socket { close(socket) }
            throw LDAPError(code: rc, message: "cannot use \(config.url): \(String(cString: ldap_err2string(rc)))")
        }
        ld = handle
        watchdog = LDAPWatchdog(handle)
        var version: Int32 = LDAP_VERSION3
        ldap_set_option(ld, LDAP_OPT_PROTOCOL_VERSION, &version)
        ldap_set_option(ld, LDAP_OPT_REFERRALS, nil)  // LDAP_OPT_OFF: AD's referrals are not followed
        var wait = LDAPConnection.timeValue(seconds: try budget.wait())
        if socket == nil { ldap_set_option(ld, LDAP_OPT_NETWORK_TIMEOUT, &wait) }
        ldap_set_option(ld, LDAP_OPT_TIMEOUT, &wait)
        var require: Int32 = config.insecure ? LDAP_OPT_X_TLS_NEVER : LDAP_OPT_X_TLS_DEMAND
        ldap_set_option(ld, LDAP_OPT_X_TLS_REQUIRE_CERT, &require)
        if let ca = config.caFile { ldap_set_option(ld, LDAP_OPT_X_TLS_CACERTFILE, ca) }
        var newContext: Int32 = 0
        ldap_set_option(ld, LDAP_OPT_X_TLS_NEWCTX, &newContext)
        do {
            let connecting = tls ? "connecting to \(server) and the TLS handshake" : "connecting to \(server)"
            if socket == nil {
                try watchdog.bounded(try budget.wait(), connecting) { try check(ldap_connect(ld), "connect to \(server)") }
            } else if tls {
                try watchdog.bounded(try budget.wait(), connecting) { try check(ldap_install_tls(ld), "TLS handshake with \(server)") }
            }
            if config.startTLS {
                try watchdog.bounded(try budget.wait(), "StartTLS with \(server)") { try check(ldap_start_tls_s(ld, nil, nil), "StartTLS") }
            }
            try watchdog.bounded(try budget.wait(), "bind as \(config.bindDN ?? "anonymous")") { try bind() }
        } catch let error as LDAPError where (config.startTLS || tls) && [LDAP_SERVER_DOWN, LDAP_CONNECT_ERROR].contains(error.code) {
            // libldap reports a failed certificate check as "Can't contact LDAP server". If the port
            // answers TCP, the TLS handshake is what failed: say so, and do not retry it.
            let seconds = (try? budget.wait()) ?? 0
            guard let (host, port) = endpoint, socket != nil || Self.tcpReachable(host: host, port: port, seconds: seconds) else { throw error }
            throw LDAPError(code: LDAP_CONNECT_ERROR, message: "TLS handshake with \(host):\(port) failed: the server's certificate "
                            + "could not be verified (is it signed by a CA in --ldap-ca-file, and does it name \(host)?). "
                            + "--ldap-insecure skips the check", transient: false)
        }
    }

    /// Host and port of an ldap:// or ldaps:// URL (default ports 389 and 636).
    static func hostAndPort(_ url: String) -> (String, Int)? {
        guard let scheme = url.range(of: "://") else { return nil }
        let rest = url[scheme.upperBound...].prefix { $0 != "/" }
        let tls = url.hasPrefix("ldaps")
        if let colon = rest.lastIndex(of: ":"), !rest.hasPrefix("[") || rest[..<colon].hasSuffix("]") {
            return (String(rest[..<colon]).trimmingCharacters(in: ["[", "]"]), Int(rest[rest.index(after: colon)...]) ?? (tls ? 636 : 389))
        }
        return (rest.isEmpty ? "localhost" : String(rest), tls ? 636 : 389)
    }

    /// Whether a TCP connection to host:port opens within `seconds`.
    static func tcpReachable(host: String, port: Int, seconds: Double) -> Bool {
        guard let fd = try? LDAPSocket.connect(host: host, port: port, seconds: seconds) else { return false }
        close(fd)
        return true
    }

    deinit {
        watchdog.release()
        ldap_unbind_ext_s(ld, nil, nil)
    }

    static func timeValue(seconds: Double) -> timeval {
        timeval(tv_sec: Int(seconds), tv_usec: .init((seconds - seconds.rounded(.down)) * 1_000_000))
    }

    private func bind() throws {
        var secret = config.password?.value ?? []
        defer { for i in secret.indices { secret[i] = 0 } }
        let rc: Int32 = secret.withUnsafeMutableBufferPointer { bytes in
            var credential = berval(bv_len: ber_len_t(bytes.count), bv_val: bytes.baseAddress.map { UnsafeMutableRawPointer($0).assumingMemoryBound(to: CChar.self) })
            return ldap_sasl_bind_s(ld, config.bindDN, nil, &credential, nil, nil, nil)
        }
        if rc == LDAP_INVALID_CREDENTIALS {
            throw LDAPError(code: rc, message: "bind as \(config.bindDN ?? "anonymous") refused: invalid credentials (check the bind DN and the password's source)")
        }
        try check(rc, "bind as \(config.bindDN ?? "anonymous")")
    }

    /// The library's message and, where the server or TLS layer said more, that too.
    private func check(_ rc: Int32, _ what: String) throws {
        guard rc != LDAP_SUCCESS else { return }
        var diagnostic: UnsafeMutablePointer<CChar>?
        ldap_get_option(ld, LDAP_OPT_DIAGNOSTIC_MESSAGE, &diagnostic)
        var message = "\(what): \(String(cString: ldap_err2string(rc)))"
        if let diagnostic {
            let text = String(cString: diagnostic)
            if !text.isEmpty { message += " (\(text))" }
            ldap_memfree(diagnostic)
        }
        throw LDAPError(code: rc, message: message)
    }

    /// One entry: its DN and the first value of each wanted attribute, found in one walk over the
    /// entry's attributes (names compared case-insensitively, options such as ";binary" ignored);
    /// the last `multiValued` attributes give every value (group memberships).
    private func take(_ m: OpaquePointer, attributes: [UnsafeMutablePointer<CChar>?], count: Int, multiValued: Int = 0,
                      entry: (LDAPEntry) -> Void) {
        var dn = ""
        if let raw = ldap_get_dn(ld, m) {
            dn = String(cString: raw)
            ldap_memfree(raw)
        }
        let single = count - multiValued
        var values = [[UInt8]?](repeating: nil, count: single)
        var lists = [[[UInt8]]](repeating: [], count: multiValued)
        var ber: OpaquePointer?
        var name = ldap_first_attribute(ld, m, &ber)
        while let n = name {
            var length = strcspn(n, ";")
            if length == 0 { length = strlen(n) }
            for i in 0..<count where i >= single || values[i] == nil {
                guard let wanted = attributes[i], strlen(wanted) == length, strncasecmp(wanted, n, length) == 0 else { continue }
                if let list = ldap_get_values_len(ld, m, n) {
                    var k = 0
                    while let item = list[k] {
                        let v = item.pointee
                        let bytes = v.bv_val.map { Array(UnsafeRawBufferPointer(start: $0, count: Int(v.bv_len))) } ?? []
                        if i < single { values[i] = bytes; break }
                        lists[i - single].append(bytes)
                        k += 1
                    }
                    ldap_value_free_len(list)
                }
                break
            }
            ldap_memfree(n)
            name = ldap_next_attribute(ld, m, ber)
        }
        if let ber { ber_free(ber, 0) }
        entry(LDAPEntry(dn: dn, values: values, lists: lists))
    }

    /// The search base: the configured one, else the server's own from its RootDSE
    /// (`defaultNamingContext` on Active Directory, else the first of `namingContexts`).
    private(set) lazy var base: String = config.base

    /// Reads the RootDSE for the naming context to search under.
    func namingContext() throws -> String {
        var entry: LDAPEntry?
        var attributes: [UnsafeMutablePointer<CChar>?] = [strdup("defaultNamingContext"), strdup("namingContexts"), nil]
        defer { attributes.forEach { free($0) } }
        var timeout = Self.timeValue(seconds: try budget.wait())
        var message: OpaquePointer?
        try watchdog.bounded(try budget.wait(), "reading the RootDSE") {
            try check(ldap_search_ext_s(ld, "", LDAP_SCOPE_BASE, "(objectClass=*)", &attributes, 0, nil, nil, &timeout, 1, &message),
                      "reading the RootDSE for a search base")
        }
        defer { ldap_msgfree(message) }
        if let m = message, let first = ldap_first_entry(ld, m) {
            take(first, attributes: attributes, count: 2) { entry = $0 }
        }
        let found = (entry?.values[0] ?? entry?.values[1]).map { String(decoding: $0, as: UTF8.self) }
        guard let found, !found.isEmpty else {
            throw LDAPError(code: LDAP_NO_SUCH_OBJECT, message: "the server's RootDSE names no naming context: give --ldap-base", transient: false)
        }
        base = found
        return found
    }

    /// Searches page by page (the paged-results control marked critical, so a server that cannot
    /// page refuses rather than truncates), calling `entry` for each entry and `pageDone` per page.
    func pagedSearch(filter: String, attributes: [String], multiValued: Int = 0, pageSize: Int,
                     entry: (LDAPEntry) -> Void, reference: (String) -> Void = { _ in }, pageDone: () -> Void) throws {
        var cookie = berval(bv_len: 0, bv_val: nil)
        defer { if cookie.bv_val != nil { ber_memfree(cookie.bv_val) } }
        var attributePointers: [UnsafeMutablePointer<CChar>?] = attributes.map { strdup($0) } + [nil]
        defer { attributePointers.forEach { free($0) } }
        let scope: Int32 = switch config.scope {
        case .base: LDAP_SCOPE_BASE
        case .one: LDAP_SCOPE_ONELEVEL
        case .sub: LDAP_SCOPE_SUBTREE
        }
        if base.isEmpty { _ = try namingContext() }
        repeat {
            let wait = try budget.wait()
            try watchdog.bounded(wait, "a page of the search under \(base)") {
                try page(filter: filter, scope: scope, attributes: &attributePointers, count: attributes.count, multiValued: multiValued,
                         pageSize: pageSize, cookie: &cookie, wait: wait, entry: entry, reference: reference)
            }
            pageDone()
        } while cookie.bv_len > 0
    }

    /// One page: the search sent with the cookie, its entries taken as they arrive, the next cookie read.
    private func page(filter: String, scope: Int32, attributes attributePointers: inout [UnsafeMutablePointer<CChar>?], count: Int,
                      multiValued: Int, pageSize: Int, cookie: inout berval, wait: Double, entry: (LDAPEntry) -> Void,
                      reference: (String) -> Void) throws {
        var control: UnsafeMutablePointer<LDAPControl>?
        try check(ldap_create_page_control(ld, ber_int_t(pageSize), &cookie, 1, &control), "paged results control")
        defer { ldap_control_free(control) }
        var serverControls: [UnsafeMutablePointer<LDAPControl>?] = [control, nil]
        var timeout = Self.timeValue(seconds: wait)
        var messageID: Int32 = 0
        try check(ldap_search_ext(ld, base, scope, filter, &attributePointers, 0, &serverControls, nil, &timeout,
                                  LDAP_NO_LIMIT, &messageID), "search under \(base) for \(filter)")
        // Entries are taken one message at a time as they arrive, while the server prepares the
        // next: the table fills as the page streams in.
        var done: OpaquePointer?
        while done == nil {
            var message: OpaquePointer?
            let kind = ldap_result(ld, messageID, LDAP_MSG_ONE, &timeout, &message)
            if kind <= 0 {
                // -1: the connection failed; 0: the operation timed out.
                var code: Int32 = LDAP_TIMEOUT
                if kind < 0 { ldap_get_option(ld, LDAP_OPT_RESULT_CODE, &code) }
                try check(code == LDAP_SUCCESS ? LDAP_SERVER_DOWN : code, "search under \(base)")
            }
            guard let m = message else { continue }
            if kind == LDAP_RES_SEARCH_ENTRY {
                take(m, attributes: attributePointers, count: count, multiValued: multiValued, entry: entry)
                ldap_msgfree(m)
            } else if kind == LDAP_RES_SEARCH_RESULT {
                done = m
            } else if kind == LDAP_RES_SEARCH_REFERENCE {
                // A subtree held by another server (referrals are not chased): named, never dropped silently.
                var urls: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
                if ldap_parse_reference(ld, m, &urls, nil, 0) == LDAP_SUCCESS, let urls {
                    var i = 0
                    while let url = urls[i] { reference(String(cString: url)); i += 1 }
                    ldap_memvfree(UnsafeMutableRawPointer(urls).assumingMemoryBound(to: UnsafeMutableRawPointer?.self))
                }
                ldap_msgfree(m)
            } else {
                ldap_msgfree(m)
            }
        }
        defer { ldap_msgfree(done) }

        var code: Int32 = 0
        var responseControls: UnsafeMutablePointer<UnsafeMutablePointer<LDAPControl>?>?
        try check(ldap_parse_result(ld, done, &code, nil, nil, nil, &responseControls, 0), "reading the search result")
        defer { if let responseControls { ldap_controls_free(responseControls) } }
        if code == LDAP_SIZELIMIT_EXCEEDED {
            throw LDAPError(code: code, message: "the server's size limit cut the search short even though it was paged; nothing from it is used")
        }
        try check(code, "search under \(base)")
        guard let pageResponse = ldap_control_find(LDAP_CONTROL_PAGEDRESULTS, responseControls, nil) else {
            throw LDAPError(code: LDAP_NOT_SUPPORTED, message: "the server did not answer the paged-results control")
        }
        if cookie.bv_val != nil { ber_memfree(cookie.bv_val); cookie = berval(bv_len: 0, bv_val: nil) }
        var estimate: ber_int_t = 0
        try check(ldap_parse_pageresponse_control(ld, pageResponse, &estimate, &cookie), "reading the paged-results cookie")
    }
}
