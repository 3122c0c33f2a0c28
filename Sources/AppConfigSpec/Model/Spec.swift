import AppConfigCore
import AppConfigPattern

/// A parsed AppConfig specification. Built even when the spec has errors (as far as it could be
/// read), so that lint can check everything at once; compile refuses a spec whose log has errors.
public struct Spec: Sendable {
    public var file: String
    /// `managedAppConfiguration` (every real spec) or `managedApplicationConfiguration` (the reference's prose).
    public var rootName: String
    /// `ManagedAppConfigurationVersion` in the output.
    public var version: Int
    public var bundleId: String
    public var keys: [Key]
    public var presentation: Presentation?

    public init(file: String, rootName: String, version: Int, bundleId: String, keys: [Key], presentation: Presentation? = nil) {
        self.file = file
        self.rootName = rootName
        self.version = version
        self.bundleId = bundleId
        self.keys = keys
        self.presentation = presentation
    }

    public func key(named name: String) -> Key? { keys.first { $0.name == name } }
}

/// One key element of the dict: its name, type, default and constraint.
public struct Key: Sendable {
    public var name: String
    public var type: KeyType
    public var location: Location
    public var defaultValue: AssignedValue?
    public var constraint: Constraint?

    public init(name: String, type: KeyType, location: Location, defaultValue: AssignedValue? = nil,
                constraint: Constraint? = nil) {
        self.name = name
        self.type = type
        self.location = location
        self.defaultValue = defaultValue
        self.constraint = constraint
    }

    /// The key may be left out of a device's plist when its value is missing.
    public var isNullable: Bool { constraint?.nullable ?? false }
}

/// A value given to a key, by the spec's default or by the admin: one item for a scalar key,
/// any number for an array key.
public struct AssignedValue: Sendable {
    public struct Item: Sendable {
        public enum Content: Hashable, Sendable {
            /// A typed literal (for strings, a template without variables is stored as a literal).
            case literal(ScalarValue)
            /// A string with at least one variable.
            case template(StringTemplate)
        }

        public var content: Content
        public var location: Location

        public init(_ content: Content, at location: Location) {
            self.content = content
            self.location = location
        }

        /// A template collapses to a literal string when it has no variable.
        public init(template: StringTemplate, at location: Location) {
            if let s = template.literalValue {
                self.init(.literal(.string(s)), at: location)
            } else {
                self.init(.template(template), at: location)
            }
        }
    }

    public var items: [Item]
    public var location: Location

    public init(items: [Item], location: Location) {
        self.items = items
        self.location = location
    }

    /// The literal values, when no item has a variable.
    public var literals: [ScalarValue]? {
        var out: [ScalarValue] = []
        for item in items {
            guard case .literal(let v) = item.content else { return nil }
            out.append(v)
        }
        return out
    }
}

/// The constraint element: bounds, pattern, allowed values and nullability.
public struct Constraint: Sendable {
    public enum Bound: Hashable, Sendable, CustomStringConvertible {
        /// Characters (UTF-16 code units) of a string, or elements of an array.
        case count(Int)
        case integer(Int64)
        case float(Double)
        case date(PlistDate)

        public var description: String {
            switch self {
            case .count(let n): String(n)
            case .integer(let i): String(i)
            case .float(let d): String(d)
            case .date(let d): d.description
            }
        }
    }

    public var nullable = false
    public var min: Bound?
    public var max: Bound?
    /// The pattern's source text; `compiledPattern` is nil when PCRE2 rejected it.
    public var pattern: String?
    public var compiledPattern: Pattern?
    public var values: [ScalarValue]?
    public var location: Location

    public init(nullable: Bool = false, min: Bound? = nil, max: Bound? = nil, pattern: String? = nil,
                compiledPattern: Pattern? = nil, values: [ScalarValue]? = nil, location: Location) {
        self.nullable = nullable
        self.min = min
        self.max = max
        self.pattern = pattern
        self.compiledPattern = compiledPattern
        self.values = values
        self.location = location
    }
}

/// The presentation element: how the admin console shows the keys.
public struct Presentation: Sendable {
    public enum Item: Sendable {
        case field(Field)
        case group(FieldGroup)
    }

    public var defaultLocale: String
    public var items: [Item]
    public var location: Location

    /// Every field, inside groups or not, in document order.
    public var allFields: [Field] {
        items.flatMap { item -> [Field] in
            switch item {
            case .field(let f): [f]
            case .group(let g): g.fields
            }
        }
    }
}

public struct FieldGroup: Sendable {
    public var name: LocalizedText
    public var fields: [Field]
    public var location: Location
}

public enum FieldType: String, CaseIterable, Sendable {
    case checkbox, datetime, hidden, input, list, multiselect, select
}

public struct Field: Sendable {
    public var keyName: String
    public var type: FieldType?
    public var label: LocalizedText?
    public var description: LocalizedText?
    public var options: [FieldOption]
    public var location: Location
}

public struct FieldOption: Sendable {
    public var value: String
    public var selected: Bool
    public var text: LocalizedText
    public var location: Location
}
