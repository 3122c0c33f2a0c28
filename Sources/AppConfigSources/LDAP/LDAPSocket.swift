import CLDAP
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The TCP connection to the directory server, opened here rather than by libldap: a connect
/// waits in `poll` for at most its time, and the socket handed to libldap (`ldap_init_fd`) is
/// blocking, so a TLS handshake with a server that never answers sleeps in `read` until the
/// watchdog cuts it. With libldap's own network timeout the socket was non-blocking and an
/// `ldaps://` handshake with a silent server spun in its retry loop, a core busy for the whole wait.
enum LDAPSocket {
    /// A connected, blocking socket to `host:port`, trying each address in turn within `seconds`
    /// in all. Throws a transient `LDAPError`: the server down (refused, unreachable), or a timeout.
    static func connect(host: String, port: Int, seconds: Double) throws -> Int32 {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let looked = getaddrinfo(host, String(port), &hints, &list)
        guard looked == 0 else {
            throw LDAPError(code: LDAP_SERVER_DOWN, message: "connect to \(host):\(port): \(String(cString: gai_strerror(looked)))")
        }
        defer { freeaddrinfo(list) }
        let deadline = Date().addingTimeInterval(seconds)
        var failure = "Can't contact LDAP server"
        var node = list
        while let info = node {
            node = info.pointee.ai_next
            let fd = socket(info.pointee.ai_family, info.pointee.ai_socktype | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), info.pointee.ai_protocol)
            guard fd >= 0 else { continue }
            var connected = Glibc.connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0
            if !connected && errno == EINPROGRESS {
                var waiting = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                var ready: Int32 = 0
                repeat {
                    let left = deadline.timeIntervalSinceNow
                    if left <= 0 { break }
                    ready = poll(&waiting, 1, Int32(min(left * 1000 + 1, Double(Int32.max))))
                } while ready < 0 && errno == EINTR
                if ready <= 0 {
                    close(fd)
                    throw LDAPError(code: LDAP_TIMEOUT, message: "connect to \(host):\(port): no answer within \(LDAPWatchdog.seconds(seconds))")
                }
                var code: Int32 = 0
                var length = socklen_t(MemoryLayout<Int32>.size)
                connected = getsockopt(fd, SOL_SOCKET, SO_ERROR, &code, &length) == 0 && code == 0
                if !connected { failure = String(cString: strerror(code)) }
            } else if !connected {
                failure = String(cString: strerror(errno))
            }
            guard connected else { close(fd); continue }
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
            return fd
        }
        throw LDAPError(code: LDAP_SERVER_DOWN, message: "connect to \(host):\(port): \(failure)")
    }
}
