/// Something wrong with one row, one entry or one column of an input, with where it is. Bad rows
/// are reported and skipped (or fail the run with `--strict`); none is dropped silently.
public struct SourceProblem: Error, Sendable, Hashable, CustomStringConvertible {
    /// Stable codes: reports and scripts match on them.
    public enum Code: String, Sendable, CaseIterable {
        case csvUnterminatedQuote = "csv.unterminated-quote"
        case csvTextAfterQuote = "csv.text-after-quote"
        case csvFieldCount = "csv.field-count"
        case csvInvalidUTF8 = "csv.invalid-utf8"
        case csvDuplicateColumn = "csv.duplicate-column"
        case csvUnknownColumn = "csv.unknown-column"
        case csvNoHeader = "csv.no-header"
        case csvEmptyDeviceKey = "csv.empty-device-key"
        case csvDuplicateDeviceKey = "csv.duplicate-device-key"
        case csvTooLarge = "csv.too-large"
        case ldifSyntax = "ldif.syntax"
        case ldifChangeRecord = "ldif.change-record"
        case ldifURLValue = "ldif.url-value"
        case ldifBase64 = "ldif.base64"
        case ldifInvalidUTF8 = "ldif.invalid-utf8"
        case ldifDN = "ldif.dn"
        case ldifDuplicateDN = "ldif.duplicate-dn"
        case userDuplicateKey = "user.duplicate-key"
        case userNotFound = "join.user-not-found"
        case userKeyEmpty = "join.user-key-empty"
    }

    public var code: Code
    /// `inventory.csv:42` or `users.ldif:17`.
    public var location: String
    public var message: String

    public init(_ code: Code, at location: String, _ message: String) {
        self.code = code
        self.location = location
        self.message = message
    }

    public var description: String { "\(location): \(code.rawValue): \(message)" }
}

/// A problem that stops a load: unreadable file, bad option, a row error under `--strict`.
public struct SourceError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public var problems: [SourceProblem]

    public init(_ message: String, problems: [SourceProblem] = []) {
        self.message = message
        self.problems = problems
    }

    public var description: String { message }
}
