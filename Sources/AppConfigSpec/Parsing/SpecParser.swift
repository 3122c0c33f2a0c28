import AppConfigCore
import AppConfigPattern

/// How strictly a spec is read.
public struct SpecOptions: Sendable {
    /// Unknown elements and attributes, and keyNames with characters the reference does not allow,
    /// become warnings instead of errors (real specs have both).
    public var lenient = false
    public var limits = XMLReader.Limits()

    public init(lenient: Bool = false) { self.lenient = lenient }
}

/// A spec as far as it could be read, and everything found wrong with it.
public struct SpecParseResult: Sendable {
    /// Nil only when the XML is not well-formed or the root is not an AppConfig root.
    public var spec: Spec?
    public var diagnostics: [Problem]

    public var hasErrors: Bool { diagnostics.contains { $0.severity == .error } }
}

/// XML -> `Spec`, checking every rule of the AppConfig reference (chapter 3) on the way. It does not
/// stop at the first problem: one run reports them all.
public enum SpecParser {
    /// Vendor specs are kilobytes (the largest in the corpus is well under 1 MiB); a file beyond this
    /// is refused from its size, before it is read whole.
    public static let maxFileBytes = 16 << 20

    public static let rootNames = ["managedAppConfiguration", "managedApplicationConfiguration"]
    public static let versionKey = "ManagedAppConfigurationVersion"

    public static func parse(_ bytes: [UInt8], file: String, options: SpecOptions = SpecOptions()) -> SpecParseResult {
        let root: XMLElement
        do {
            root = try XMLReader.parse(bytes, file: file, limits: options.limits)
        } catch {
            return SpecParseResult(spec: nil, diagnostics: [error.diagnostic])
        }
        var builder = SpecBuilder(file: file, checker: ContentChecker(lenient: options.lenient), lenient: options.lenient)
        let spec = builder.build(root)
        return SpecParseResult(spec: spec, diagnostics: builder.checker.log.sorted)
    }
}

/// The walk over the XML tree. Each element has one method that checks its content model, its
/// attributes and its values, and returns the model piece.
struct SpecBuilder {
    let file: String
    var checker: ContentChecker
    let lenient: Bool

    mutating func report(_ code: DiagnosticCode, _ severity: Problem.Severity? = nil,
                                 at location: Location, _ message: String, hint: String? = nil) {
        checker.log.append(Problem(code, severity, at: location, message, hint: hint))
    }

    mutating func build(_ root: XMLElement) -> Spec? {
        guard SpecParser.rootNames.contains(root.name) else {
            report(.structureRoot, at: root.location,
                   "the root element is <\(root.name)>; an AppConfig spec starts with <managedAppConfiguration>")
            return nil
        }
        checker.attributes(of: root, allowed: []) { $0.hasPrefix("xmlns") || $0.hasPrefix("xsi:") }
        let children = checker.children(of: root, [
            .one("version"), .one("bundleId"), .one("dict"), .optional("presentation"),
            // The SpecCreator XSD adds an optional <license> of free text; it has no effect.
            .optional("license"),
        ])
        let version = children["version"]?.first.flatMap { parseVersion($0) } ?? 0
        let bundleId = children["bundleId"]?.first.map { parseBundleId($0) } ?? ""
        let keys = children["dict"]?.first.map { parseDict($0) } ?? []
        var spec = Spec(file: file, rootName: root.name, version: version, bundleId: bundleId, keys: keys)
        if let presentation = children["presentation"]?.first {
            spec.presentation = parsePresentation(presentation, keys: keys)
        }
        if let license = children["license"]?.first { _ = checker.textContent(of: license) }
        return spec
    }

    // MARK: Header

    /// An integer of 1 to 5 digits, at least 1 (the reference; the XSD's xs:int totalDigits 5, minInclusive 1).
    private mutating func parseVersion(_ element: XMLElement) -> Int? {
        checker.attributes(of: element, allowed: [])
        let text = checker.textContent(of: element).trimmingXMLWhitespace
        // Real vendors version specs as releases ("1.0.0", "2.1.2"): taken by their first number,
        // with a warning (ManagedAppConfigurationVersion is an integer).
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        if parts.count > 1, parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy { $0.isASCII && $0.isNumber } }),
           parts[0].count <= 5, let major = Int(parts[0]), major >= 1 {
            report(.versionDotted, at: element.location,
                   "version \"\(text)\" is a release number, not an integer: ManagedAppConfigurationVersion is \(major), its first number",
                   hint: "write <version>\(major)</version> to say so")
            return major
        }
        guard (1...5).contains(text.count), text.allSatisfy({ $0.isASCII && $0.isNumber }), let v = Int(text), v >= 1 else {
            report(.versionInvalid, at: element.location, "version \"\(text)\" is not an integer of 1 to 5 digits (1 to 99999)")
            return nil
        }
        return v
    }

    /// Letters and digits in at least two parts joined by `.`, `-` or `+` (the SpecCreator XSD's pattern).
    private mutating func parseBundleId(_ element: XMLElement) -> String {
        checker.attributes(of: element, allowed: [])
        let text = checker.textContent(of: element).trimmingXMLWhitespace
        if !Self.isBundleId(text) {
            report(.bundleIdInvalid, at: element.location, "bundleId \"\(text)\" is not a bundle identifier",
                   hint: "letters and digits in parts separated by '.', such as com.example.app")
        }
        return text
    }

    static func isBundleId(_ s: String) -> Bool {
        var parts = 0
        var run = 0
        for c in s.unicodeScalars {
            if c.isASCII && (c.properties.isAlphabetic || ("0"..."9").contains(c)) {
                run += 1
            } else if c == "." || c == "-" || c == "+" {
                guard run > 0 else { return false }
                parts += 1
                run = 0
            } else {
                return false
            }
        }
        return run > 0 && parts >= 1
    }

    // MARK: Keys

    private mutating func parseDict(_ dict: XMLElement) -> [Key] {
        checker.attributes(of: dict, allowed: [])
        let names = KeyType.allCases.map(\.rawValue)
        _ = checker.children(of: dict, names.map { .any($0) }, ordered: false)
        var keys: [Key] = []
        var seen = FirstOfEachName()
        for element in dict.elements {
            guard let type = KeyType(rawValue: element.name) else { continue }  // reported above
            guard let key = parseKey(element, type: type) else { continue }
            if let first = seen.earlier(key.name, at: key.location) {
                report(.keyNameDuplicate, at: key.location,
                       "keyName \"\(key.name)\" is already used by the key at line \(first.line)")
            }
            keys.append(key)
        }
        if keys.isEmpty && dict.elements.allSatisfy({ KeyType(rawValue: $0.name) == nil }) {
            report(.dictEmpty, at: dict.location, "<dict> holds no key; a spec needs at least one")
        }
        return keys
    }

    private mutating func parseKey(_ element: XMLElement, type: KeyType) -> Key? {
        checker.attributes(of: element, allowed: ["keyName"], required: ["keyName"])
        guard let nameAttribute = element.attribute("keyName") else { return nil }
        let name = nameAttribute.value
        checkKeyName(name, at: nameAttribute.location)
        let children = checker.children(of: element, [.optional("defaultValue"), .optional("constraint")])
        var key = Key(name: name, type: type, location: element.location)
        key.constraint = children["constraint"]?.first.map { parseConstraint($0, type: type) }
        key.defaultValue = children["defaultValue"]?.first.flatMap { parseDefault($0, type: type) }
        if let constraint = key.constraint, let literals = key.defaultValue?.literals {
            for reason in constraint.violations(of: literals, keyType: type) {
                report(.defaultBreaksConstraint, at: key.defaultValue!.location,
                       "the default of \"\(name)\" breaks its own constraint: \(reason)")
            }
        }
        return key
    }

    /// Letters, digits, space, `_` and `-` (the reference's words: "alphanumeric characters").
    /// Letters and digits of any script count as alphanumeric.
    private mutating func checkKeyName(_ name: String, at location: Location) {
        if name == SpecParser.versionKey {
            report(.keyNameReserved, at: location,
                   "keyName \"\(name)\" is reserved: the plist already carries the spec's version under it")
            return
        }
        if name.isEmpty {
            report(.keyNameCharacters, at: location, "keyName is empty")
            return
        }
        // Errors even when lenient: a key no admin can see or type apart from another.
        if name.allSatisfy({ $0 == " " }) {
            report(.keyNameCharacters, at: location, "keyName is only spaces")
            return
        }
        let invisible = name.unicodeScalars.filter { $0.properties.generalCategory == .format || $0.properties.generalCategory == .control }
        if !invisible.isEmpty {
            let shown = invisible.map { "U+" + String($0.value, radix: 16, uppercase: true).leftPadded(4) }
            report(.keyNameCharacters, at: location,
                   "keyName \"\(name)\" holds invisible characters (\(Array(Set(shown)).sorted().joined(separator: ", "))): it would differ from the name an admin types")
            return
        }
        // Scalars, not Characters: a combining mark or joiner must not hide inside a letter's cluster.
        let bad = name.unicodeScalars.filter { !($0.properties.isAlphabetic || $0.properties.numericType != nil || $0.properties.generalCategory == .nonspacingMark
                                                 || $0 == " " || $0 == "_" || $0 == "-") }
        if !bad.isEmpty {
            let shown = Array(Set(bad.map(String.init))).sorted().map { "\"\($0)\"" }.joined(separator: ", ")
            report(.keyNameCharacters, lenient ? .warning : .error, at: location,
                   "keyName \"\(name)\" has \(shown); only letters, digits, space, '_' and '-' are allowed",
                   hint: lenient ? nil : "rename the key, or lint with --lenient to accept it with a warning")
        }
    }

    // MARK: Default values

    /// What a defaultValue may hold depends on the key type (the reference's defaultValue table).
    private mutating func parseDefault(_ element: XMLElement, type: KeyType) -> AssignedValue? {
        checker.attributes(of: element, allowed: [])
        _ = checker.children(of: element, [.any("value"), .any("userVariable"), .any("deviceVariable")], ordered: false)
        let items = element.elements.filter { ["value", "userVariable", "deviceVariable"].contains($0.name) }
        if items.isEmpty {
            report(.defaultEmpty, at: element.location, "<defaultValue> holds no <value>",
                   hint: "remove the empty <defaultValue>, or give it a value")
            return nil
        }
        if !type.isArray && items.count > 1 {
            report(.defaultCount, at: items[1].location, "a \(type.rawValue) key takes one default value, not \(items.count)")
        }
        var out: [AssignedValue.Item] = []
        for item in type.isArray ? items : [items[0]] {
            if item.name == "value" {
                checker.attributes(of: item, allowed: [])
                let text = checker.textContent(of: item)
                if let value = type.elementType.parse(text) {
                    if type.elementType == .string {
                        for token in ForeignVariables.tokens(in: text) {
                            report(.variableForeign, at: item.location, ForeignVariables.message(token))
                        }
                    }
                    out.append(.init(.literal(value), at: item.location))
                } else {
                    report(.defaultType, at: item.location,
                           "default \"\(text.trimmingXMLWhitespace)\" is not \(Self.article(type.elementType))",
                           hint: Self.literalHint(type.elementType))
                }
            } else if let variable = parseVariable(item, keyType: type) {
                out.append(.init(.template(StringTemplate(parts: [.variable(variable)])), at: item.location))
            }
        }
        return out.isEmpty ? nil : AssignedValue(items: out, location: element.location)
    }

    private mutating func parseVariable(_ element: XMLElement, keyType: KeyType) -> Variable? {
        checker.attributes(of: element, allowed: ["value"], required: ["value"])
        _ = checker.textContent(of: element)
        guard keyType.acceptsVariables else {
            report(.defaultVariableNotAllowed, at: element.location,
                   "a \(keyType.rawValue) key cannot take a <\(element.name)>; only string and stringArray keys can")
            return nil
        }
        guard let attribute = element.attribute("value") else { return nil }
        let name = attribute.value.trimmingXMLWhitespace
        let wantsUser = element.name == "userVariable"
        guard let (variable, canonical) = Variable.named(name) else {
            let pool = wantsUser ? UserVariable.allCases.map(\.rawValue) : DeviceVariable.allCases.map(\.rawValue)
            report(.variableUnknown, at: attribute.location, "\"\(name)\" is not a \(wantsUser ? "user" : "device") variable",
                   hint: ContentChecker.suggestion(for: name, among: pool).map { "did you mean \"\($0)\"?" }
                       ?? "one of: " + pool.joined(separator: ", "))
            return nil
        }
        switch (variable, wantsUser) {
        case (.user, false), (.device, true):
            let other = wantsUser ? "deviceVariable" : "userVariable"
            report(.variableUnknown, at: attribute.location,
                   "\"\(name)\" is a \(wantsUser ? "device" : "user") variable, not a \(wantsUser ? "user" : "device") one",
                   hint: "write <\(other) value=\"\(variable)\"/>")
            return nil
        default:
            break
        }
        if !canonical {
            report(.variableSpelling, at: attribute.location,
                   "variable \"\(name)\" is spelt \"\(variable)\" in the reference; accepted as \"\(variable)\"")
        }
        return variable
    }

    static func article(_ type: ScalarType) -> String {
        switch type {
        case .integer: "an integer"
        case .float: "a float"
        case .date: "an ISO-8601 date"
        case .boolean: "a boolean"
        case .string: "a string"
        }
    }

    static func literalHint(_ type: ScalarType) -> String? {
        switch type {
        case .integer: "a whole number such as 42 or -7, within 64 bits"
        case .float: "a decimal number such as 1.5 or 2e-3"
        case .date: "such as 2015-07-25, 2015-07-25T21:19Z or 2015-07-25T22:12:52+00:00"
        case .boolean: "true or false"
        case .string: nil
        }
    }

}

extension String {
    var replacingUnderscores: String { String(map { $0 == "_" ? "-" : $0 }) }
}

private extension String {
    func leftPadded(_ width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
