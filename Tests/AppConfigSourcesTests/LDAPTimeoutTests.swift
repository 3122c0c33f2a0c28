import AppConfigCore
import AppConfigSources
import AppConfigSpec
import Foundation
import Testing

/// A server that accepts and never answers: every wait of the LDAP client is bounded by
/// `--ldap-timeout`, the whole load by `--ldap-deadline`. Before these bounds a plain bind waited
/// 120 s per attempt and an ldaps:// handshake spun at 100% CPU without end.
@Suite("LDAP against a server that never answers", .serialized)
struct LDAPTimeoutTests {
    /// A listening socket nobody accepts from: the kernel completes TCP handshakes into the
    /// backlog, so connects succeed and nothing is ever read or written.
    final class SilentServer {
        let fd: Int32
        let port: Int

        init() throws {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            self.fd = fd
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && listen(fd, 64) == 0 && getsockname(fd, $0, &length) == 0 }
            }
            guard bound else { throw POSIXError(.EADDRNOTAVAIL) }
            port = Int(UInt16(bigEndian: address.sin_port))
        }

        deinit { close(fd) }
    }

    struct Case: CustomTestStringConvertible, Sendable {
        var name: String
        var scheme: String
        var startTLS = false
        /// The error's message; PORT stands for the server's port.
        var message: String
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "ldap:// bind", scheme: "ldap", message: "bind as anonymous: no answer within 0.5 s (after 1 attempt)"),
        Case(name: "ldaps:// TLS handshake", scheme: "ldaps",
             message: "connecting to 127.0.0.1:PORT and the TLS handshake: no answer within 0.5 s (after 1 attempt)"),
        Case(name: "StartTLS", scheme: "ldap", startTLS: true, message: "StartTLS with 127.0.0.1:PORT: no answer within 0.5 s (after 1 attempt)"),
    ]

    @Test(arguments: cases)
    func everyWaitIsBounded(_ c: Case) throws {
        let server = try SilentServer()
        var config = LDAPConfiguration(url: "\(c.scheme)://127.0.0.1:\(server.port)", base: "dc=example")
        config.networkTimeout = 0.5
        config.retries = 0
        config.startTLS = c.startTLS
        let start = Date()
        #expect(throws: Problem(.ldapConnect, at: Location(file: config.url), c.message.replacingOccurrences(of: "PORT", with: "\(server.port)"))) {
            try LDAPDirectory.load(config, map: AttributeMap())
        }
        // Bounded: the wait ends with the timeout (a generous margin for a loaded CI machine).
        #expect(Date().timeIntervalSince(start) < 5)
    }

    @Test("retries print one warning each; the deadline ends them")
    func deadlineEndsRetries() throws {
        let server = try SilentServer()
        var config = LDAPConfiguration(url: "ldap://127.0.0.1:\(server.port)", base: "dc=example")
        config.networkTimeout = 0.3
        config.retries = 10
        config.backoff = 0.1
        config.deadline = 1.2
        var warnings: [Problem] = []
        let start = Date()
        #expect {
            try LDAPDirectory.load(config, map: AttributeMap(), warning: { warnings.append($0) })
        } throws: { error in
            // Which of the two ends it meets depends on timing; either is a connection problem.
            guard let problem = error as? Problem, problem.code == .ldapConnect else { return false }
            let message = problem.message
            return message.hasSuffix("(after \(warnings.count + 1) attempts; --ldap-deadline 1.2 s leaves no time for another)")
                || message == "the directory load passed its deadline (--ldap-deadline 1.2 s)"
        }
        #expect(Date().timeIntervalSince(start) < 5)
        // 0.3 s per attempt, 0.1 s, 0.2 s, 0.4 s between them: two or three attempts fit in 1.2 s.
        #expect((1...2).contains(warnings.count), "\(warnings)")
        #expect(warnings.first == Problem(.ldapConnect, .warning, at: Location(file: config.url),
                                          "bind as anonymous: no answer within 0.3 s; retrying in 0.1 s (attempt 2 of 11)"))
    }

    /// CPU time of the calling thread (user and system), in seconds.
    static func threadCPUSeconds() -> Double {
        var usage = rusage()
        getrusage(__rusage_who_t(1), &usage)  // RUSAGE_THREAD (GNU), not imported
        func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    @Test("an ldaps:// or StartTLS wait for a silent server sleeps: under 0.2 s of CPU in a 1.5 s wait (it spun: 4.5 s user, 5.5 s system in 10 s)",
          arguments: [false, true])
    func silentTLSWaitSleeps(startTLS: Bool) throws {
        let server = try SilentServer()
        var config = LDAPConfiguration(url: "\(startTLS ? "ldap" : "ldaps")://127.0.0.1:\(server.port)", base: "dc=example")
        config.networkTimeout = 1.5
        config.retries = 0
        config.startTLS = startTLS
        let cpu = Self.threadCPUSeconds(), start = Date()
        let waited = startTLS ? "StartTLS with 127.0.0.1:\(server.port)" : "connecting to 127.0.0.1:\(server.port) and the TLS handshake"
        #expect(throws: Problem(.ldapConnect, at: Location(file: config.url), "\(waited): no answer within 1.5 s (after 1 attempt)")) {
            try LDAPDirectory.load(config, map: AttributeMap())
        }
        let elapsed = Date().timeIntervalSince(start), spent = Self.threadCPUSeconds() - cpu
        #expect(elapsed >= 1.4)
        #expect(spent < 0.2, "\(spent) s of CPU in \(elapsed) s")
    }

    @Test("a connect that finds nothing listening fails at once with the system's reason")
    func refusedConnect() throws {
        let port: Int
        do { let s = try SilentServer(); port = s.port }  // closed: nothing listens there now
        var config = LDAPConfiguration(url: "ldaps://127.0.0.1:\(port)", base: "dc=example")
        config.retries = 0
        #expect(throws: Problem(.ldapConnect, at: Location(file: config.url), "connect to 127.0.0.1:\(port): Connection refused (after 1 attempt)")) {
            try LDAPDirectory.load(config, map: AttributeMap())
        }
    }
}
