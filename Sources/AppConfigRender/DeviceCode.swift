import AppConfigCore

/// Why one device could not be rendered. Nothing of its plist is kept: a device renders whole or
/// not at all. The problem's location names the key, and (filled in by the caller) the device and
/// where the variable's value came from (CSV line, DN).
public enum DeviceCode: String, Sendable, CaseIterable, ProblemCodeCatalog {
    /// A variable the key needs is missing or empty and the key's policy is `fail`.
    case missingVariable = "device.missing-variable"
    /// The resolved string does not match the key's pattern.
    case pattern = "device.pattern"
    /// PCRE2's match or depth limit was hit: no verdict, so no plist.
    case patternLimit = "device.pattern-limit"
    /// The resolved string's length (UTF-16 code units) is outside the key's min/max.
    case length = "device.length"
    /// The resolved string is not one of the key's values.
    case valueNotAllowed = "device.value-not-allowed"
    /// XML output, and the value holds a character XML 1.0 cannot carry (U+0001 from a directory).
    case xmlCharacter = "device.xml-character"
    /// A variable's bytes are not valid UTF-8.
    case invalidUTF8 = "device.invalid-utf8"
    /// `--verify`: libplist read back something other than an independent evaluation expects
    /// (a bug in the engine, never a problem of the inputs).
    case verifyMismatch = "device.verify-mismatch"
    /// DDM: the configuration is larger than Apple's 1 MB (1,048,576 bytes) limit for app config data.
    case assetTooLarge = "device.asset-too-large"
    /// A credential's per-user secret has no value for this device's user.
    case secretMissing = "device.secret-missing"
    /// A credential's file (a PKCS#12 identity, a certificate) cannot be read, opened or parsed.
    case credentialFile = "device.credential-file"
    /// A credential file's path template took a variable whose value would name another folder
    /// (`/`, `..`, NUL or a control character in it): the directory never chooses a folder.
    case credentialPath = "device.credential-path"
    /// Two users share the key of a per-user secret or a credential file's path (one copied the
    /// other's `uid`): neither is given the other's credential.
    case credentialSharedKey = "credential.shared-key"

    public var defaultSeverity: Problem.Severity { .error }
}

extension Problem {
    public init(_ code: DeviceCode, _ severity: Severity? = nil, at location: Location, _ message: String,
                hint: String? = nil, variable: Variable? = nil, value: String? = nil) {
        self.init(code as any ProblemCodeCatalog, severity, at: location, message, hint: hint, variable: variable, value: value)
    }
}

extension ProblemCode {
    public static func == (lhs: ProblemCode, rhs: DeviceCode) -> Bool { lhs.rawValue == rhs.rawValue }
    public static func != (lhs: ProblemCode, rhs: DeviceCode) -> Bool { lhs.rawValue != rhs.rawValue }
}

public enum OutputFormat: String, SettingChoice {
    case binary, xml
}
