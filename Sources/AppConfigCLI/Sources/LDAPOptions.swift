import AppConfigBatch
import AppConfigSources
import ArgumentParser

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

    @Option(name: .customLong("ldap-filter"), help: "The filter selecting users (default: (objectClass=person)).")
    var filter: String?

    @Option(name: .customLong("ldap-scope"), help: "base, one or sub (default: sub).")
    var scope: LDAPConfiguration.Scope?

    @Option(name: .customLong("ldap-page-size"), help: "Entries per page (RFC 2696 paged results; default: 1000).")
    var pageSize: Int?

    @Flag(name: .customLong("ldap-starttls"), inversion: .prefixedNo, help: "Upgrade an ldap:// connection with StartTLS.")
    var startTLS: Bool?

    @Option(name: .customLong("ldap-ca-file"), help: "PEM certificates to trust for ldaps:// and StartTLS.")
    var caFile: String?

    @Flag(name: .customLong("ldap-insecure"), inversion: .prefixedNo, help: "Do not verify the server's certificate (prints a warning).")
    var insecure: Bool?

    @Option(name: .customLong("ldap-timeout"), help: "Seconds any one network wait may take: connect, TLS handshake, StartTLS, bind, each page (default: 10).")
    var timeout: Double?

    @Option(name: .customLong("ldap-deadline"), help: "Seconds the whole directory load may take, retries included (default: 600).")
    var deadline: Double?

    @Option(name: .customLong("ldap-retries"), help: "Attempts after the first when the server is down or busy (default: 4).")
    var retries: Int?

    @Option(name: .customLong("ldap-targeted"), help: "Look up only the inventory's users: auto (default: at most 2000 distinct keys), always or never.")
    var targeted: LDAPConfiguration.Targeting?

    var settings: JobSettings.LDAP {
        var s = JobSettings.LDAP()
        (s.base, s.bindDN, s.passwordEnv, s.passwordFile, s.filter) = (base, bindDN, passwordEnv, passwordFile, filter)
        (s.scope, s.pageSize, s.startTLS, s.caFile, s.insecure) = (scope, pageSize, startTLS, caFile, insecure)
        (s.timeout, s.deadline, s.retries, s.targeted) = (timeout, deadline, retries, targeted)
        return s
    }
}

extension LDAPConfiguration.Scope: ExpressibleByArgument {}
extension LDAPConfiguration.Targeting: ExpressibleByArgument {}
