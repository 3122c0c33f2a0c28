import AppConfigCore
/// `appconfig import`: an app configuration as Jamf Pro, Workspace ONE or Intune hold it (a plist
/// `<dict>` fragment as pasted into the console, or a whole XML plist) turned into one of our values
/// files (JSON), their variable tokens translated to ours. Read with our XML reader, so that every
/// note points at the fragment's real line and column.
public enum ConsoleImport {
    public struct Result: Sendable {
        /// The values file: a JSON object, keys in the configuration's order.
        public var json: String
        /// What did not translate (a token without an equivalent, a nested dictionary, data), as
        /// warnings with positions.
        public var notes: [Problem]
    }

    public static func convert(_ bytes: [UInt8], file: String, from console: ForeignVariables.Console) throws(Problem) -> Result {
        if bytes.first(where: { $0 != 0x20 && $0 != 0x0A && $0 != 0x0D && $0 != 0x09 }) == UInt8(ascii: "{") {
            return try convertJSON(bytes, file: file, from: console)
        }
        let root: XMLElement
        do { root = try XMLReader.parse(bytes, file: file, allowingPlainDoctype: true) } catch { throw error.diagnostic }
        let dict: XMLElement
        if root.name == "dict" { dict = root }
        else if root.name == "plist", let first = root.elements.first, first.name == "dict" { dict = first }
        else {
            throw Problem(.valuesRoot, at: root.location, "expected a <dict> (as pasted into \(console.rawValue)) or a <plist> holding one, not <\(root.name)>")
        }
        var notes: [Problem] = []
        var members: [String] = []
        let elements = dict.elements
        var i = 0
        while i < elements.count {
            let keyElement = elements[i]
            guard keyElement.name == "key", i + 1 < elements.count else {
                throw Problem(.valuesSyntax, at: keyElement.location, "expected <key> then its value, found <\(keyElement.name)>")
            }
            let value = elements[i + 1]
            i += 2
            if let json = self.json(value, key: keyElement.text, notes: &notes) {
                members.append("  " + jsonQuoted(keyElement.text) + ": " + json)
            }
        }
        return Result(json: "{\n" + members.joined(separator: ",\n") + "\n}\n", notes: notes)
    }

    /// The JSON forms `export` writes and the consoles' APIs take: an Intune policy body
    /// (`settings[]`, or `encodedSettingXml`: the plist, base64) and Workspace ONE's
    /// `application_configuration` list. Each value typed as the console's type says.
    private static func convertJSON(_ bytes: [UInt8], file: String, from console: ForeignVariables.Console) throws(Problem) -> Result {
        let root = try JSONReader.document(bytes, file: file)
        guard case .dictionary(let top) = root.kind else { throw Problem(.valuesRoot, at: root.location, "expected a JSON object, not \(root.typeName)") }
        func member(_ o: [RawValue.Member], _ key: String) -> RawValue? { o.first { $0.key == key }?.value }
        func string(_ v: RawValue?) -> String? { if case .string(let s)? = v?.kind { s } else { nil } }
        if console == .intune, let xml = string(member(top, "encodedSettingXml")) {
            guard let plist = Base64.decode(Array(xml.utf8)) else {
                throw Problem(.valuesSyntax, at: member(top, "encodedSettingXml")!.location, "encodedSettingXml is not base64")
            }
            return try convert(plist, file: file + " (encodedSettingXml)", from: console)
        }
        let (listKey, nameKey, typeKey, valueKey) = console == .intune ? ("settings", "appConfigKey", "appConfigKeyType", "appConfigKeyValue")
                                                                       : ("application_configuration", "key", "type", "value")
        guard console != .jamf, let list = member(top, listKey), case .array(let items) = list.kind else {
            throw Problem(.valuesRoot, at: root.location, "expected \(console == .jamf ? "a plist <dict>" : "\"\(listKey)\": [...]") as \(console.rawValue) holds a configuration")
        }
        var notes: [Problem] = []
        var members: [String] = []
        for item in items {
            guard case .dictionary(let o) = item.kind, let name = string(member(o, nameKey)), let text = string(member(o, valueKey)) else {
                throw Problem(.valuesSyntax, at: item.location, "each entry of \"\(listKey)\" has a \"\(nameKey)\" and a string \"\(valueKey)\"")
            }
            let type = string(member(o, typeKey)) ?? ""
            let json: String
            switch type {
            case "integerType", "Integer":
                guard Int64(text) != nil else { throw Problem(.valuesType, at: item.location, "\"\(name)\": \(text) is not an integer") }
                json = text
            case "realType", "Float":
                guard Double(text) != nil else { throw Problem(.valuesType, at: item.location, "\"\(name)\": \(text) is not a number") }
                json = text
            case "booleanType", "Boolean":
                guard text == "true" || text == "false" else { throw Problem(.valuesType, at: item.location, "\"\(name)\": \(text) is not true or false") }
                json = text
            default:
                json = jsonQuoted(translated(text, key: name, at: item.location, notes: &notes))
            }
            members.append("  " + jsonQuoted(name) + ": " + json)
        }
        return Result(json: "{\n" + members.joined(separator: ",\n") + "\n}\n", notes: notes)
    }

    /// A console's text in our syntax; each token without an equivalent kept as text, with a note.
    private static func translated(_ text: String, key: String, at location: Location, notes: inout [Problem]) -> String {
        let (translated, untranslated) = ForeignVariables.translate(text)
        for token in untranslated {
            let what = token.known ? "(\(token.console.rawValue)) has no equivalent" : "is written like \(token.console.rawValue)'s variables but is not one of them"
            notes.append(Problem(.valuesForeignVariable, .warning, at: location, "\"\(key)\": \(token.text) \(what); it is kept as literal text"))
        }
        return translated
    }

    /// One value as JSON; nil (with a note) for what a values file cannot hold.
    private static func json(_ e: XMLElement, key: String, notes: inout [Problem]) -> String? {
        switch e.name {
        case "string":
            return jsonQuoted(translated(e.text, key: key, at: e.location, notes: &notes))
        case "integer", "real": return e.text.trimmingXMLWhitespace
        case "true", "false": return e.name
        case "date": return jsonQuoted(e.text.trimmingXMLWhitespace)
        case "array":
            let items = e.elements.compactMap { json($0, key: key, notes: &notes) }
            return "[" + items.joined(separator: ", ") + "]"
        default:
            notes.append(Problem(.valuesType, .warning, at: e.location, "\"\(key)\": a <\(e.name)> has no place in a values file; left out"))
            return nil
        }
    }
}

/// A JSON string literal: quotes, backslashes and control characters escaped (lint's JSON output
/// and the values files `import` writes).
public func jsonQuoted(_ s: String) -> String {
    var out: [UInt8] = []
    appendJSONString(s.utf8, to: &out)
    return String(decoding: out, as: UTF8.self)
}
