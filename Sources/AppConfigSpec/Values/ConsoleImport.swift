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

    /// One value as JSON; nil (with a note) for what a values file cannot hold.
    private static func json(_ e: XMLElement, key: String, notes: inout [Problem]) -> String? {
        switch e.name {
        case "string":
            let (text, untranslated) = ForeignVariables.translate(e.text)
            for token in untranslated {
                let what = token.known ? "(\(token.console.rawValue)) has no equivalent" : "is written like \(token.console.rawValue)'s variables but is not one of them"
                notes.append(Problem(.valuesForeignVariable, .warning, at: e.location, "\"\(key)\": \(token.text) \(what); it is kept as literal text"))
            }
            return jsonQuoted(text)
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
