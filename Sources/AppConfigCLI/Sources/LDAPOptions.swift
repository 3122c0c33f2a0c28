import AppConfigSources
import ArgumentParser
import Foundation

/// LDAP / Active Directory options. The password comes from an environment variable or a file,
/// never from the command line (where `ps` and shell history would show it).
struct LDAPOptions: ParsableArguments {
    @Option(name: .customLong("ldap-base"), help: "The search base, e.g. DC=corp,DC=example (default: the server's, from its RootDSE).")
    var base: String?

    @Option(name: .customLong("ldap-bind-dn"), help: "The DN to bind as (default: anonymous).")
    var bindDN: String?

    @Option(name: .customLong("ldap-password-env"), help: "The environment variable that holds the bind password.")
    var passwordEnv: String?

    @Option(name: .customLong("ldap-password-file"), help: "A file that holds the bind password (one line).")
    var passwordFile: String?

    @Option(name: .customLong("ldap-filter"), help: "The filter selecting users.")
    var filter: String = "(objectClass=person)"

    @Option(name: .customLong("ldap-scope"), help: "base, one or sub.")
    var scope: LDAPConfiguration.Scope = .sub

    @Option(name: .customLong("ldap-page-size"), help: "Entries per page (RFC 2696 paged results).")
    var pageSize: Int = 1000

    @Flag(name: .customLong("ldap-starttls"), inversion: .prefixedNo, help: "Upgrade an ldap:// connection with StartTLS.")
    var startTLS = false

    @Option(name: .customLong("ldap-ca-file"), help: "PEM certificates to trust for ldaps:// and StartTLS.")
    var caFile: String?

    @Flag(name: .customLong("ldap-insecure"), inversion: .prefixedNo, help: "Do not verify the server's certificate (prints a warning).")
    var insecure = false

    @Option(name: .customLong("ldap-timeout"), help: "Seconds any one network wait may take: connect, TLS handshake, StartTLS, bind, each page.")
    var timeout: Double = 10

    @Option(name: .customLong("ldap-deadline"), help: "Seconds the whole directory load may take, retries included.")
    var deadline: Double = 600

    @Option(name: .customLong("ldap-retries"), help: "Attempts after the first when the server is down or busy.")
    var retries: Int = 4

    @Option(name: .customLong("ldap-targeted"), help: "Look up only the inventory's users: auto (at most 2000 distinct keys), always or never.")
    var targeted: LDAPConfiguration.Targeting = .auto

    /// A password file's one trailing line break (`\n` or `\r\n`, as editors and `echo` leave it)
    /// is not part of the password; anything before it is, spaces and further line breaks included.
    /// (`ldapsearch -y` keeps the line break, which is why those files are often made with `echo -n`.)
    static func passwordLine(_ text: String) -> String {
        var bytes = Array(text.utf8)
        if bytes.last == 0x0A {
            bytes.removeLast()
            if bytes.last == 0x0D { bytes.removeLast() }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    func configuration(url: String) throws -> LDAPConfiguration {
        if LDAPConfiguration.holdsCredentials(url) { throw ValidationError(LDAPConfiguration.credentialsRefusal) }
        var c = LDAPConfiguration(url: url, base: base ?? "")
        c.bindDN = bindDN
        c.filter = filter
        c.scope = scope
        c.pageSize = pageSize
        c.startTLS = startTLS
        c.caFile = caFile
        c.insecure = insecure
        guard timeout > 0, deadline > 0 else { throw ValidationError("--ldap-timeout and --ldap-deadline take a number of seconds above 0") }
        c.networkTimeout = timeout
        c.deadline = deadline
        c.retries = retries
        c.targeting = targeted
        if passwordEnv != nil && passwordFile != nil { throw ValidationError("give --ldap-password-env or --ldap-password-file, not both") }
        if let name = passwordEnv {
            guard let value = ProcessInfo.processInfo.environment[name] else {
                throw ValidationError("--ldap-password-env: the environment variable \(name) is not set")
            }
            c.password = Secret(value)
        } else if let path = passwordFile {
            guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else {
                throw ValidationError("--ldap-password-file: cannot read \(path)")
            }
            c.password = Secret(Self.passwordLine(text))
        }
        if bindDN != nil && c.password == nil { throw ValidationError("--ldap-bind-dn needs --ldap-password-env or --ldap-password-file") }
        if bindDN == nil && c.password != nil { throw ValidationError("a password needs --ldap-bind-dn: without one the bind is anonymous") }
        return c
    }
}

extension LDAPConfiguration.Scope: ExpressibleByArgument {}
extension LDAPConfiguration.Targeting: ExpressibleByArgument {}
