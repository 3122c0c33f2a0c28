import AppConfigCore

/// Codes for problems with the inputs a fleet comes from: inventory rows, directory entries, the
/// join, and the loads themselves. Bad rows and entries are reported and skipped (or fail the run
/// with `--strict`); none is dropped silently.
public enum SourceCode: String, Sendable, CaseIterable, ProblemCodeCatalog {
    /// A quoted field that never ends.
    case csvUnterminatedQuote = "csv.unterminated-quote"
    /// Text after the closing quote of a field.
    case csvTextAfterQuote = "csv.text-after-quote"
    /// A row with another number of fields than the header.
    case csvFieldCount = "csv.field-count"
    /// Bytes that are not UTF-8.
    case csvInvalidUTF8 = "csv.invalid-utf8"
    /// A column name given twice (the first is used).
    case csvDuplicateColumn = "csv.duplicate-column"
    /// A column named by an option or `$(device.<Column>)` that the header does not have.
    case csvUnknownColumn = "csv.unknown-column"
    /// An empty file.
    case csvNoHeader = "csv.no-header"
    /// A NUL, a byte order mark or a control character inside a column's name: the export is
    /// damaged, and the column would read as another than the one it names.
    case csvHeaderName = "csv.header-name"
    /// A header with more columns than `InventoryTable.maxColumns`.
    case csvTooManyColumns = "csv.too-many-columns"
    /// No column names devices (no UDID or Serial Number, no `--device-key`).
    case csvNoDeviceKey = "csv.no-device-key"
    /// A row whose device key is empty.
    case csvEmptyDeviceKey = "csv.empty-device-key"
    /// A device key of only spaces, or holding a line break or another control character.
    case csvBadDeviceKey = "csv.bad-device-key"
    /// A device key on two rows, or two keys equal but for ASCII case (the second is skipped).
    case csvDuplicateDeviceKey = "csv.duplicate-device-key"
    /// Values of a mapped column shaped unlike their variable (serial numbers that are IP addresses,
    /// addresses without `@`): the header may not line up with the rows.
    case inventorySuspectValues = "inventory.suspect-values"
    /// Most rows have another number of fields than the header.
    case inventoryHeaderWidth = "inventory.header-width"
    /// Most rows repeat a device key.
    case inventoryDuplicateKeys = "inventory.duplicate-keys"
    /// Two device keys that differ only in Unicode normalization (NFC against NFD): a hint.
    case inventoryKeyNormalization = "inventory.key-normalization"
    case ldifSyntax = "ldif.syntax"
    /// A directory file without a single entry.
    case directoryEmpty = "directory.empty"
    /// An ldapsearch export whose trailer says the search failed (`result: 32 No such object`).
    case directorySearchFailed = "directory.search-failed"
    /// An LDIF change record (`changetype:`): a directory export holds content records only.
    case ldifChangeRecord = "ldif.change-record"
    /// A `:<` URL value: never fetched.
    case ldifURLValue = "ldif.url-value"
    case ldifBase64 = "ldif.base64"
    case ldifInvalidUTF8 = "ldif.invalid-utf8"
    /// A DN that is not valid RFC 4514.
    case ldifDN = "ldif.dn"
    case ldifDuplicateDN = "ldif.duplicate-dn"
    /// A `memberOf` or `member` value that is not a DN (ignored: the membership cannot be placed).
    case groupDN = "group.dn"
    /// An assignment names a group the directory does not hold: no device can match it.
    case groupUnknown = "group.unknown"
    /// The server cannot be reached (after the retries).
    case ldapConnect = "ldap.connect"
    /// The TLS handshake failed (most often: the certificate is not trusted).
    case ldapTLS = "ldap.tls"
    /// The bind was refused.
    case ldapBind = "ldap.bind"
    /// The search failed or was cut short.
    case ldapSearch = "ldap.search"
    /// The search met references to other servers (referrals are not chased): a warning naming them.
    case ldapReferral = "ldap.referral"
    /// Two users with the same join key (the first is used).
    case userDuplicateKey = "user.duplicate-key"
    /// A device whose user key matches no user.
    case userNotFound = "join.user-not-found"
    /// A device whose user key column is empty.
    /// A device with no user: its user key is empty (a shared iPad, a kiosk); its user variables
    /// are missing.
    case userKeyEmpty = "join.no-user"
    /// Fewer than half of the devices with a user key found their user (a warning, with the reason).
    case joinFew = "join.few"
    /// Not one device found its user although the inventory names users: the wrong attribute or
    /// the wrong directory, refused unless `--allow-unjoined`.
    case joinNone = "join.none"

    public var defaultSeverity: Problem.Severity {
        switch self {
        case .csvDuplicateColumn, .userDuplicateKey, .joinFew, .inventorySuspectValues, .inventoryHeaderWidth, .inventoryDuplicateKeys, .inventoryKeyNormalization, .groupDN, .groupUnknown, .ldapReferral: .warning
        default: .error
        }
    }
}

extension Problem {
    public init(_ code: SourceCode, _ severity: Severity? = nil, at location: Location, _ message: String,
                hint: String? = nil, variable: Variable? = nil, value: String? = nil) {
        self.init(code as any ProblemCodeCatalog, severity, at: location, message, hint: hint, variable: variable, value: value)
    }
}

extension ProblemCode {
    public static func == (lhs: ProblemCode, rhs: SourceCode) -> Bool { lhs.rawValue == rhs.rawValue }
    public static func != (lhs: ProblemCode, rhs: SourceCode) -> Bool { lhs.rawValue != rhs.rawValue }
}
