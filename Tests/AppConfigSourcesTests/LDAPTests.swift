import AppConfigCore
import AppConfigSources
import AppConfigSpec
import Foundation
import TestSupport
import Testing

/// Our libldap client against a real slapd (tools/ldap-test-server): paging past a size limit,
/// credentials, TLS, retry when the server goes away mid-search, targeted lookups.
@Suite("LDAP against slapd", .serialized, .enabled(if: LDAPTestServer.available, "slapd, ldap-utils and openssl are needed (tools/install-deps)"))
struct LDAPTests {
    /// One server for the suite; the tests that stop a server start their own.
    nonisolated(unsafe) static var shared: LDAPTestServer?
    static func server() throws -> LDAPTestServer {
        if let s = shared { return s }
        let s = try LDAPTestServer(users: 6000)
        shared = s
        return s
    }

    func configuration(_ s: LDAPTestServer, url: String? = nil) -> LDAPConfiguration {
        var c = LDAPConfiguration(url: url ?? s.url, base: s.base)
        c.bindDN = s.bindDN
        c.password = Secret(s.password)
        c.targeting = .never
        return c
    }

    @Test("a subtree referred to another server is named in a warning (ldap.referral), not dropped silently")
    func referral() throws {
        let s = try LDAPTestServer(users: 50)
        defer { try? s.stop() }
        let ldif = s.directory + "/referral.ldif"
        try """
            dn: ou=Remote,\(s.base)
            objectClass: referral
            objectClass: extensibleObject
            ou: Remote
            ref: ldap://remote.corp.example/ou=Remote,\(s.base)

            """.write(toFile: ldif, atomically: true, encoding: .utf8)
        let add = try runProcess("/usr/bin/ldapadd", ["-x", "-H", s.url, "-D", "cn=admin,\(s.base)", "-y", s.directory + "/admin.password", "-f", ldif])
        #expect(add.status == 0, "\(add.stderr)")
        var warnings: [Problem] = []
        let users = try LDAPDirectory.load(configuration(s), map: AttributeMap(), warning: { warnings.append($0) })
        #expect(users.count == 50)
        warnings.removeAll { $0.code.rawValue == SourceCode.ldapBind.rawValue }  // the password in clear over ldap://
        #expect(warnings.map(\.message) == ["the search under the base refers 1 subtree to other servers, not read: "
                                             + "ldap://remote.corp.example/ou=Remote,\(s.base)??sub (their users are not found; search there with another --directory)"])
        #expect(warnings.map(\.code.rawValue) == [SourceCode.ldapReferral.rawValue])
    }

    @Test("a paged search reads all 6000 users although the server stops plain searches at 1000")
    func pagedPastSizeLimit() throws {
        let s = try Self.server()
        // The limit is real: a plain search as the reader account stops at 1000 entries.
        let plain = try runProcess("/usr/bin/ldapsearch", ["-x", "-H", s.url, "-D", s.bindDN, "-y", s.passwordFile, "-b", s.base,
                                                            "(objectClass=person)", "dn"])
        #expect(plain.status == 4)  // LDAP_SIZELIMIT_EXCEEDED
        // Entries are "dn: ..." or, for non-ASCII DNs, "dn:: base64".
        #expect(plain.stdout.split(separator: "\n").filter { $0.hasPrefix("dn:") }.count == 1000)
        var pages = 0
        let users = try LDAPDirectory.load(configuration(s), map: AttributeMap(), onPage: { _ in pages += 1 })
        #expect(users.count == 6000)
        #expect(pages == 6)
        #expect(users.problems.isEmpty)
        // Every user has its variables, escaped DNs and non-ASCII names included.
        let u = try #require(users.user(forKey: "u0000007@corp.example"))
        #expect(users.string(user: u, .sAMAccountName) == "u0000007")
        #expect(users.string(user: u, .cn)?.contains(", ") == true)  // every 7th user's CN holds a comma
        #expect(users.string(user: u, .dn)?.contains("\\2C") == true || users.string(user: u, .dn)?.contains("\\,") == true)
    }

    @Test("a wrong password: a clear error, and the password appears nowhere")
    func wrongPassword() throws {
        let s = try Self.server()
        var c = configuration(s)
        let wrong = "wrong-\(UUID().uuidString)"
        c.password = Secret(wrong)
        #expect {
            try LDAPDirectory.load(c, map: AttributeMap())
        } throws: { error in
            let text = "\(error)"
            return text == "\(s.url): error: bind as \(s.bindDN) refused: invalid credentials (check the bind DN and the password's source) [ldap.bind]"
                && !text.contains(wrong) && !text.contains(s.password)
        }
        #expect("\(c)".contains(wrong) == false)
        #expect("\(Secret(wrong))" == "<redacted>")
    }

    @Test("TLS: ldaps without our CA fails with a verification message; with it, and with StartTLS, it works")
    func tls() throws {
        let s = try Self.server()
        var c = configuration(s, url: s.tlsURL)
        c.retries = 0
        #expect {
            try LDAPDirectory.load(c, map: AttributeMap())
        } throws: { error in
            (error as? Problem)?.code.as(SourceCode.self) == .ldapTLS
                && "\(error)".contains("TLS handshake with localhost:") && "\(error)".contains("could not be verified")
        }
        c.caFile = s.caFile
        #expect(try LDAPDirectory.load(c, map: AttributeMap()).count == 6000)
        var startTLS = configuration(s, url: s.url.replacingOccurrences(of: "127.0.0.1", with: "localhost"))
        startTLS.startTLS = true
        startTLS.caFile = s.caFile
        #expect(try LDAPDirectory.load(startTLS, map: AttributeMap()).count == 6000)
        var insecure = configuration(s, url: s.tlsURL)
        insecure.insecure = true
        #expect(try LDAPDirectory.load(insecure, map: AttributeMap()).count == 6000)
    }

    @Test("no base given: the server's naming context is read from its RootDSE; check() binds without searching")
    func rootDSEBase() throws {
        let s = try Self.server()
        var c = configuration(s)
        c.base = ""
        let users = try LDAPDirectory.load(c, map: AttributeMap())
        #expect(users.count == 6000)
        try LDAPDirectory.check(c)
        c.password = Secret("wrong")
        #expect(throws: Problem(.ldapBind, at: Location(file: s.url),
                                "bind as \(s.bindDN) refused: invalid credentials (check the bind DN and the password's source)")) {
            try LDAPDirectory.check(c)
        }
    }

    @Test("targeted mode fetches only the referenced users, with RFC 4515 escaping")
    func targeted() throws {
        let s = try Self.server()
        var c = configuration(s)
        c.targeting = .auto
        c.chunkSize = 7
        let keys = (0..<50).map { String(format: "u%07d@corp.example", $0 * 3) } + ["nobody*)(mail=*@corp.example"]
        let users = try LDAPDirectory.load(c, map: AttributeMap(), referencedKeys: { keys })
        #expect(users.count == 50)
        #expect(users.user(forKey: "u0000003@corp.example") != nil)
        #expect(users.user(forKey: "u0000001@corp.example") == nil)
        #expect(LDAPDirectory.escapeFilterValue("a*b(c)d\\e") == "a\\2ab\\28c\\29d\\5ce")
        // Too many keys for auto: the whole subtree is read.
        c.targetedLimit = 10
        #expect(try LDAPDirectory.load(c, map: AttributeMap(), referencedKeys: { keys }).count == 6000)
    }

    @Test("the server stops in the middle of a search and comes back: retried, every user once")
    func serverRestartsMidSearch() throws {
        let s = try LDAPTestServer(users: 3000)
        defer { try? s.stop() }
        var c = configuration(s)
        c.pageSize = 200
        c.backoff = 0.3
        var attempts = Set<Int>()
        let users = try LDAPDirectory.load(c, map: AttributeMap(), onPage: { progress in
            attempts.insert(progress.attempt)
            if progress.attempt == 1 && progress.pages == 3 {
                try? s.stop()
                // Back after a while: the client's retries with backoff must outlast the gap.
                DispatchQueue.global().asyncAfter(deadline: .now() + 1.0) { try? s.restart() }
            }
        })
        #expect(attempts.count >= 2)
        #expect(users.count == 3000)
        var seen = Set<String>()
        for u in 0..<users.count { seen.insert(users.string(user: u, .dn) ?? "") }
        #expect(seen.count == 3000)
    }

    @Test("the server stops for good mid-search: a clear error, no half table")
    func serverGone() throws {
        let s = try LDAPTestServer(users: 2000)
        var c = configuration(s)
        c.pageSize = 200
        c.retries = 2
        c.backoff = 0.1
        #expect {
            try LDAPDirectory.load(c, map: AttributeMap(), onPage: { progress in
                if progress.pages == 2 { try? s.stop() }
            })
        } throws: { error in
            let problem = error as? Problem
            return problem?.code.as(SourceCode.self) == .ldapConnect && problem?.location.file == s.url
                && problem?.message.hasSuffix("(after 3 attempts)") == true
        }
    }
}
