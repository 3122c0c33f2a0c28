import Foundation

/// A private slapd started by tools/ldap-test-server in a temporary folder, stopped when the test
/// process exits (or by `stop()`).
public final class LDAPTestServer: @unchecked Sendable {
    public let directory: String
    public let env: [String: String]

    public var url: String { env["LDAP_URL"]! }
    public var tlsURL: String { env["LDAPS_URL"]! }
    public var base: String { env["LDAP_BASE"]! }
    public var bindDN: String { env["LDAP_BIND_DN"]! }
    public var passwordFile: String { env["LDAP_PASSWORD_FILE"]! }
    public var password: String { (try? String(contentsOfFile: passwordFile, encoding: .utf8)) ?? "" }
    public var caFile: String { env["LDAP_CA_FILE"]! }
    public var users: Int { Int(env["LDAP_USERS"]!)! }
    public var inventory: String { directory + "/fleet/inventory.csv" }

    /// slapd, ldapsearch and openssl are installed (tools/install-deps installs them).
    public static var available: Bool {
        FileManager.default.isExecutableFile(atPath: "/usr/sbin/slapd") && which("ldapsearch") != nil && which("openssl") != nil
    }

    private static let script = Paths.root.appendingPathComponent("tools/ldap-test-server").path
    nonisolated(unsafe) private static var running: [String] = []
    private static let registerExit: Void = { atexit { LDAPTestServer.stopAll() } }()

    public init(users: Int = 6000) throws {
        _ = Self.registerExit
        directory = try Paths.temporaryDirectory().path
        let r = try runProcess(Self.script, ["start", directory, "--users", String(users)])
        guard r.status == 0 else { throw TestServerError(message: "ldap-test-server start failed: \(r.stderr)") }
        var env: [String: String] = [:]
        for line in r.stdout.split(separator: "\n") {
            guard let eq = line.firstIndex(of: "=") else { continue }
            env[String(line[..<eq])] = String(line[line.index(after: eq)...])
        }
        self.env = env
        Self.running.append(directory)
    }

    public func stop() throws { _ = try runProcess(Self.script, ["stop", directory]) }

    public func restart() throws {
        let r = try runProcess(Self.script, ["restart", directory])
        guard r.status == 0 else { throw TestServerError(message: "ldap-test-server restart failed: \(r.stderr)") }
    }

    static func stopAll() {
        for dir in running {
            _ = try? runProcess(script, ["stop", dir])
            try? FileManager.default.removeItem(atPath: dir)
        }
    }

    struct TestServerError: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }
}
