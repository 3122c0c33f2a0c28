import AppConfigCore
import AppConfigSpec

/// Decodes settings from a JSON document read with its places (`RawValue`), so that every error
/// names the file, line and column of the value at fault and the setting it belongs to. Values are
/// read as a command line would take them: a number where a string goes is its digits, a string
/// of digits where a number goes is that number.
struct LocatedDecoder: Decoder {
    let value: RawValue
    /// The setting (the top-level key) the value belongs to, for messages; nil for the document.
    let setting: String?
    var codingPath: [any CodingKey] = []
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .dictionary(let members) = value.kind else { throw mismatch("an object") }
        return KeyedDecodingContainer(Keyed(decoder: self, members: members))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let items) = value.kind else { throw mismatch("an array") }
        return Unkeyed(decoder: self, items: items)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { Single(decoder: self) }

    /// The decoder of a value inside this one: a top-level member names its setting.
    func child(_ value: RawValue, setting: String? = nil) -> LocatedDecoder {
        LocatedDecoder(value: value, setting: setting ?? self.setting, codingPath: codingPath)
    }

    func mismatch(_ expected: String) -> Problem {
        guard let setting else { return Problem(.jobSetting, at: value.location, "not a JSON object of settings, but \(value.typeName)") }
        return Problem(.jobSetting, at: value.location, "\"\(setting)\" takes \(expected), not \(value.typeName)")
    }

    /// This value as a `T`: the scalars and choices here, anything else by its own `init(from:)`.
    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        if let scalar = try scalar(type) { return scalar }
        if let choice = type as? any SettingChoice.Type { return try self.choice(choice) as! T }
        if type == Entries.self { return try entries() as! T }
        return try T(from: self)
    }

    /// Strings, booleans, `Int` and `Double`; nil for any other type. Other numeric types are
    /// refused rather than decoded through their own `init(from:)`, which would come back here.
    func scalar<T>(_ type: T.Type) throws(Problem) -> T? {
        switch (type, value.kind) {
        case (is String.Type, .string(let s)): return s as? T
        case (is String.Type, .integer(let i)): return String(i) as? T
        case (is String.Type, .real(let d)): return String(d) as? T
        case (is String.Type, _): throw mismatch("a string")
        case (is Bool.Type, .boolean(let b)): return b as? T
        case (is Bool.Type, .string(let s)) where s == "true" || s == "false": return (s == "true") as? T
        case (is Bool.Type, _): throw mismatch("true or false")
        case (is Int.Type, .integer(let i)): if let n = Int(exactly: i) { return n as? T }
        case (is Int.Type, .string(let s)): if let n = Int(s) { return n as? T }
        case (is Double.Type, .integer(let i)): return Double(i) as? T
        case (is Double.Type, .real(let d)): return d as? T
        case (is Double.Type, .string(let s)): if let d = Double(s) { return d as? T }
        default: break
        }
        if type is any FixedWidthInteger.Type { throw mismatch("an integer") }
        if type is any BinaryFloatingPoint.Type { throw mismatch("a number") }
        return nil
    }

    func string() throws(Problem) -> String {
        guard let s = try scalar(String.self) else { throw mismatch("a string") }
        return s
    }

    private func choice<C: SettingChoice>(_ type: C.Type) throws(Problem) -> C {
        guard case .string(let name) = value.kind else { throw mismatch(C.choices) }
        guard let choice = C(rawValue: name) else {
            throw Problem(.jobSetting, at: value.location, "\"\(setting ?? "")\" takes \(C.choices), not \"\(Problem.printable(name))\"")
        }
        return choice
    }

    /// `NAME=VALUE` entries: an object of them, an array of such strings, or one.
    private func entries() throws(Problem) -> Entries {
        let expected = "NAME=VALUE strings or an object of names and values"
        switch value.kind {
        case .string(let s): return Entries([s])
        case .array(let items):
            return Entries(try items.map { item throws(Problem) in
                guard case .string(let s) = item.kind else { throw child(item).mismatch(expected) }
                return s
            })
        case .dictionary(let members):
            return Entries(try members.map { m throws(Problem) in "\(m.key)=\(try child(m.value).string())" })
        default: throw mismatch(expected)
        }
    }

    private struct Keyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let decoder: LocatedDecoder
        let members: [RawValue.Member]
        var codingPath: [any CodingKey] { decoder.codingPath }
        var allKeys: [Key] { members.compactMap { Key(stringValue: $0.key) } }

        func contains(_ key: Key) -> Bool { members.contains { $0.key == key.stringValue } }

        private func member(_ key: Key) throws -> LocatedDecoder {
            guard let m = members.first(where: { $0.key == key.stringValue }) else {
                throw Problem(.jobSetting, at: decoder.value.location, "\"\(key.stringValue)\" is missing")
            }
            // At the top, each member is a setting of its own.
            return decoder.child(m.value, setting: decoder.setting == nil ? m.key : nil)
        }

        func decodeNil(forKey key: Key) throws -> Bool {
            guard let m = members.first(where: { $0.key == key.stringValue }) else { return true }
            if case .null = m.value.kind { return true }
            return false
        }
        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try member(key).decode(type) }
        func nestedContainer<N: CodingKey>(keyedBy type: N.Type, forKey key: Key) throws -> KeyedDecodingContainer<N> {
            try member(key).container(keyedBy: type)
        }
        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer { try member(key).unkeyedContainer() }
        func superDecoder() throws -> any Decoder { decoder }
        func superDecoder(forKey key: Key) throws -> any Decoder { try member(key) }
    }

    private struct Unkeyed: UnkeyedDecodingContainer {
        let decoder: LocatedDecoder
        let items: [RawValue]
        var codingPath: [any CodingKey] { decoder.codingPath }
        var count: Int? { items.count }
        var isAtEnd: Bool { currentIndex >= items.count }
        var currentIndex = 0

        private mutating func next() throws -> LocatedDecoder {
            guard !isAtEnd else { throw decoder.mismatch("more items") }
            defer { currentIndex += 1 }
            return decoder.child(items[currentIndex])
        }

        mutating func decodeNil() throws -> Bool {
            guard !isAtEnd, case .null = items[currentIndex].kind else { return false }
            currentIndex += 1
            return true
        }
        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try next().decode(type) }
        mutating func nestedContainer<N: CodingKey>(keyedBy type: N.Type) throws -> KeyedDecodingContainer<N> {
            try next().container(keyedBy: type)
        }
        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { try next().unkeyedContainer() }
        mutating func superDecoder() throws -> any Decoder { try next() }
    }

    private struct Single: SingleValueDecodingContainer {
        let decoder: LocatedDecoder
        var codingPath: [any CodingKey] { decoder.codingPath }
        func decodeNil() -> Bool { if case .null = decoder.value.kind { true } else { false } }
        func decode<T: Decodable>(_ type: T.Type) throws -> T { try decoder.decode(type) }
    }
}
