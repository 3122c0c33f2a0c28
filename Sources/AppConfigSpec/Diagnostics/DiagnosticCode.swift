import AppConfigCore

/// Every rule the front end checks, one stable code each. The raw value is the interface: lint's
/// output and JSON carry it, scripts match on it. Never renumber or rename; add new cases.
public enum DiagnosticCode: String, Sendable, CaseIterable, Codable, ProblemCodeCatalog {
    // MARK: XML well-formedness and hostile input
    /// Not well-formed XML (unclosed tag, bad attribute syntax, mismatched end tag...).
    case xmlSyntax = "xml.syntax"
    /// Bytes that are not UTF-8, or an encoding declaration other than UTF-8.
    case xmlEncoding = "xml.encoding"
    /// A DOCTYPE: DTDs and entity declarations are refused outright (no external entities, no expansion bombs).
    case xmlDTD = "xml.dtd"
    /// An entity reference other than the five predefined ones and character references.
    case xmlEntity = "xml.entity"
    /// Input beyond a size, depth or count limit.
    case xmlLimit = "xml.limit"
    /// Text where the schema allows only elements.
    case xmlText = "xml.text"

    // MARK: Document structure (the schema's content models)
    /// The root element is neither managedAppConfiguration nor managedApplicationConfiguration.
    case structureRoot = "structure.root"
    /// An element the schema does not define at this place (e.g. a misspelt `<constraints>`).
    case unknownElement = "structure.unknown-element"
    /// An attribute the schema does not define on this element (e.g. Chromium's `future="true"`).
    case unknownAttribute = "structure.unknown-attribute"
    /// A required element is missing.
    case missingElement = "structure.missing-element"
    /// An element appears more often than the schema allows.
    case duplicateElement = "structure.duplicate-element"
    /// Elements are not in the order the schema gives.
    case elementOrder = "structure.order"
    /// A required attribute is missing.
    case missingAttribute = "structure.missing-attribute"
    /// `<dict>` holds no key: the schema requires at least one.
    case dictEmpty = "dict.empty"

    // MARK: Header
    /// `version` is not an integer of 1 to 5 digits (at least 1).
    case versionInvalid = "version.invalid"
    /// A release number (`1.0.0`, `2.1.2`) where an integer belongs: taken by its first number (a warning).
    case versionDotted = "version.dotted"
    /// `bundleId` is not a bundle identifier (letters and digits in parts separated by `.`, `-` or `+`).
    case bundleIdInvalid = "bundleId.invalid"

    // MARK: Keys
    /// A keyName with characters other than letters, digits, space, `_` and `-`, or an empty one.
    case keyNameCharacters = "keyName.characters"
    /// Two keys with the same keyName in the dict.
    case keyNameDuplicate = "keyName.duplicate"
    /// A keyName equal to `ManagedAppConfigurationVersion`, which the plist already holds.
    case keyNameReserved = "keyName.reserved"

    // MARK: Default values
    /// `<defaultValue>` without any child.
    case defaultEmpty = "default.empty"
    /// More than one child in the defaultValue of a scalar key.
    case defaultCount = "default.count"
    /// A userVariable or deviceVariable in a key that is neither string nor stringArray.
    case defaultVariableNotAllowed = "default.variable-not-allowed"
    /// A literal default that does not parse as the key's type.
    case defaultType = "default.type"
    /// A literal default that breaks its own key's constraint (a warning: a real spec does this).
    case defaultBreaksConstraint = "default.breaks-constraint"

    // MARK: Variables
    /// A user or device variable name that is not one of the 13 user or 9 device variables.
    case variableUnknown = "variable.unknown"
    /// A variable spelt other than canonically (`IMEI` for `imei`): accepted, with a warning.
    case variableSpelling = "variable.spelling"
    /// Another console's variable in a default (`$EMAIL`, `{EmailAddress}`, `{{mail}}`): devices
    /// would get the text as it is. A warning in a spec, which may mean it.
    case variableForeign = "variable.foreign"

    // MARK: Constraints
    /// A constraint attribute the key type does not allow (`pattern` on an integer, `min` on a boolean).
    case constraintAttributeNotAllowed = "constraint.attribute-not-allowed"
    /// `<values>` on a boolean or date key.
    case constraintValuesNotAllowed = "constraint.values-not-allowed"
    /// `min` or `max` that does not parse for the key type (a count for strings and arrays).
    case constraintBound = "constraint.bound"
    /// `min` greater than `max`.
    case constraintRange = "constraint.range"
    /// `nullable` other than `true` or `false`.
    case constraintNullable = "constraint.nullable"
    /// A `pattern` that PCRE2 does not compile.
    case constraintPattern = "constraint.pattern"
    /// `min`/`max` given together with `pattern`: the reference says they are then ignored.
    case constraintPatternIgnoresBounds = "constraint.pattern-ignores-bounds"
    /// A `<values>` entry that does not parse as the key's (element) type.
    case constraintValueType = "constraint.value-type"
    /// The same value twice in `<values>`.
    case constraintValueDuplicate = "constraint.value-duplicate"

    // MARK: Presentation
    /// A field whose keyName names no key in the dict.
    case fieldUnknownKey = "field.unknown-key"
    /// A field type other than checkbox, datetime, hidden, input, list, multiselect, select.
    case fieldType = "field.type"
    /// A field type that does not suit its key (checkbox on a non-boolean, list on a scalar...).
    case fieldTypeMismatch = "field.type-mismatch"
    /// Two fields for the same key.
    case fieldDuplicate = "field.duplicate"
    /// A hidden field whose key has no default: the admin cannot set it and the app gets nothing.
    case hiddenWithoutDefault = "field.hidden-without-default"
    /// An option value that is not one of the key's constraint values.
    case optionValue = "option.value"
    /// An option `selected` other than `true` or `false`.
    case optionSelected = "option.selected"
    /// A language code that is not `xx` or `xx-YY` (an underscore is accepted with this warning).
    case languageCode = "language.code"
    /// A label, description, name or option with no language matching the presentation's defaultLocale.
    case languageNoDefaultLocale = "language.no-default-locale"

    // MARK: Admin values files
    /// A values file that does not parse (JSON syntax, plist that libplist rejects).
    case valuesSyntax = "values.syntax"
    /// The values file's top level is not a dictionary.
    case valuesRoot = "values.root"
    /// A values entry for a key the spec does not define.
    case valuesUnknownKey = "values.unknown-key"
    /// The same key twice in one values dictionary (JSON and plists alike: which one wins is not
    /// something an admin should have to guess).
    case valuesDuplicateKey = "values.duplicate-key"
    /// A values entry not of its key's type.
    case valuesType = "values.type"
    /// A literal values entry that breaks its key's constraint.
    case valuesConstraint = "values.constraint"
    /// A template naming a variable that does not exist.
    case valuesVariableUnknown = "values.variable-unknown"
    /// A malformed template: `$(` without `)`, an empty name, a lone `$`, an unknown filter.
    case valuesTemplate = "values.template"
    /// Another console's variable in a value (`$EMAIL`, `{EmailAddress}`, `{{mail}}`), named with ours.
    case valuesForeignVariable = "values.foreign-variable"
    /// Another console's variable written as literal text (`$$DEPARTMENTID`, as `import` keeps a token
    /// without an equivalent): a warning, since devices would receive the token as text.
    case valuesForeignLiteral = "values.foreign-literal"
    /// A key whose name or description says it holds a secret (a password, token, API key) given a
    /// literal: every device's plist, every copy of the output and every MDM log carries it.
    case valuesSecretLiteral = "values.secret-literal"
    /// A key its constraint makes non-nullable that would get an empty string: the values leave it
    /// out and its default is empty (a vendor's "fill this in"), or give it `""`.
    case valuesRequiredEmpty = "values.required-empty"

    // MARK: Credentials (secrets the ManagedApp framework hands the app)
    /// A `credentials` entry that is not a dictionary with identifier and kind, a kind not known.
    case credentialSyntax = "credential.syntax"
    /// A field its kind's document does not have, of the wrong shape, missing, out of its range, or
    /// a secret given as a literal.
    case credentialField = "credential.field"
    /// Two credentials with one identifier (the app looks each up by it).
    case credentialDuplicateIdentifier = "credential.duplicate-identifier"

    // MARK: Assignments (values for the devices a match selects)
    /// An assignment that is not a dictionary of name, match and values, a match that is empty or
    /// not strings, an unknown top-level entry beside `values` and `assignments`.
    case assignmentSyntax = "assignment.syntax"
    /// Two assignments with one name (the report counts devices per name).
    case assignmentDuplicateName = "assignment.duplicate-name"
    /// A match on something that is not a user or device variable, `device.<Column>` or `group`.
    case assignmentMatchKey = "assignment.match-key"
    /// A group named by a DN that RFC 4514 does not read.
    case assignmentGroupDN = "assignment.group-dn"

    // MARK: Compilation (spec + values -> program)
    /// A literal that is not of its key's type (a model built in code; the parsers refuse it earlier).
    case compileType = "compile.type"
    /// A variable in a key whose type cannot hold one.
    case compileVariableNotAllowed = "compile.variable-not-allowed"
    /// The value a key would get (the admin's, else the default) breaks the key's constraint.
    case compileLiteralBreaksConstraint = "compile.literal-breaks-constraint"
    /// A missing-value policy names a key the spec does not define.
    case compileUnknownPolicyKey = "compile.unknown-policy-key"

    /// Problems that make a spec unusable are errors; advice and tolerated deviations are warnings.
    public var defaultSeverity: Problem.Severity {
        switch self {
        case .defaultBreaksConstraint, .variableSpelling, .variableForeign, .constraintPatternIgnoresBounds,
             .constraintValueDuplicate, .fieldTypeMismatch, .fieldDuplicate, .hiddenWithoutDefault,
             .languageCode, .languageNoDefaultLocale, .valuesSecretLiteral, .versionDotted, .valuesForeignLiteral:
            return .warning
        default:
            return .error
        }
    }
}

extension Problem {
    public init(_ code: DiagnosticCode, _ severity: Severity? = nil, at location: Location, _ message: String,
                hint: String? = nil, variable: Variable? = nil, value: String? = nil) {
        self.init(code as any ProblemCodeCatalog, severity, at: location, message, hint: hint, variable: variable, value: value)
    }
}

extension ProblemCode {
    public static func == (lhs: ProblemCode, rhs: DiagnosticCode) -> Bool { lhs.rawValue == rhs.rawValue }
    public static func != (lhs: ProblemCode, rhs: DiagnosticCode) -> Bool { lhs.rawValue != rhs.rawValue }
}

extension ProblemLog {
    public mutating func report(_ code: DiagnosticCode, at location: Location, _ message: String, hint: String? = nil) {
        append(Problem(code, at: location, message, hint: hint))
    }
}
