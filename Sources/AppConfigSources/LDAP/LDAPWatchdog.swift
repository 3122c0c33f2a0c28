import CLDAP
import Dispatch
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Bounds a blocking libldap call by time. libldap's own timeouts do not cover every wait: a server
/// that accepts and never answers holds a bind for the operation timeout, and an `ldaps://` TLS
/// handshake with it spins on a non-blocking socket forever (libldap 2.5). When the time is up,
/// the watchdog shuts the reading side of the connection's socket down (from a timer thread:
/// `shutdown(SHUT_RD)` wakes any read or poll on it; the writing side stays open, so the unbind that
/// follows raises no SIGPIPE), the call returns with an error, and `bounded` turns that into a
/// timeout. The connection is then dead; the caller drops it.
final class LDAPWatchdog: @unchecked Sendable {
    private let lock = NSLock()
    /// The session whose socket is cut; nil once the session is gone (after `release`).
    private var ld: OpaquePointer?
    /// Which arming a timer belongs to: a timer that fires after its call returned does nothing.
    private var arming = 0
    private var fired = false

    init(_ ld: OpaquePointer) { self.ld = ld }

    /// Runs `body`; if it has not returned after `seconds`, cuts the connection and throws a
    /// transient timeout naming `what`.
    func bounded<T>(_ seconds: Double, _ what: String, _ body: () throws -> T) throws -> T {
        let token: Int = lock.withLock { arming += 1; self.fired = false; return arming }
        DispatchQueue.global().asyncAfter(deadline: .now() + max(seconds, 0.001)) { [self] in
            lock.withLock {
                guard arming == token, let ld else { return }
                var fd: Int32 = -1
                if ldap_get_option(ld, LDAP_OPT_DESC, &fd) == LDAP_OPT_SUCCESS, fd >= 0 {
                    shutdown(fd, Int32(SHUT_RD))
                }
                fired = true
            }
        }
        let result: Result<T, any Error>
        do { result = .success(try body()) } catch { result = .failure(error) }
        let cut: Bool = lock.withLock { arming += 1; return fired }
        // libldap's own timeout (set to the same seconds) may end the wait first: one message either way.
        let timedOut = cut || { if case .failure(let error as LDAPError) = result { error.code == LDAP_TIMEOUT } else { false } }()
        if timedOut {
            throw LDAPError(code: LDAP_TIMEOUT, message: "\(what): no answer within \(Self.seconds(seconds))", transient: true)
        }
        return try result.get()
    }

    /// The session is about to be freed: no timer may touch it after this.
    func release() { lock.withLock { arming += 1; ld = nil } }

    static func seconds(_ s: Double) -> String {
        s == s.rounded() ? "\(Int(s)) s" : String(format: "%.1f s", s)
    }
}
