/// Other consoles' variable tokens, as admins paste them from Jamf Pro (`$EMAIL`), Workspace ONE
/// (`{EmailAddress}`) and Microsoft Intune (`{{mail}}`). Left as they are they would reach devices
/// as literal text; lint names each with our equivalent, and `appconfig import` translates them.
public enum ForeignVariables {
    public enum Console: String, Sendable, CaseIterable {
        case jamf = "Jamf Pro", ws1 = "Workspace ONE", intune = "Intune"
    }

    public struct Token: Sendable, Equatable {
        /// As written: `$EMAIL`, `{EmailAddress}`, `{{mail}}`.
        public var text: String
        public var console: Console
        /// Ours (`$(emailAddress)`), or nil when there is none.
        public var equivalent: String?
        /// Unicode-scalar offset in the string.
        public var offset: Int
        /// In the console's published list; false for a token written its way that is not
        /// (`$DEPARTMENT_NAME`).
        public var known = true
    }

    /// Each console's tokens by name (Jamf's in capitals, the others' in lower case: they match
    /// whatever the case), from the one table export reads too (`ConsoleTokens`).
    static let jamf = ConsoleTokens.lookup(.jamf)
    static let ws1 = ConsoleTokens.lookup(.ws1)
    static let intune = ConsoleTokens.lookup(.intune)

    /// Every known token in `text`, in order.
    public static func tokens(in text: String) -> [Token] {
        let s = Array(text.unicodeScalars)
        var found: [Token] = []
        var i = 0
        func word(from start: Int, _ allowed: (Unicode.Scalar) -> Bool) -> Int {
            var j = start
            while j < s.count && allowed(s[j]) { j += 1 }
            return j
        }
        func string(_ range: Range<Int>) -> String { var t = ""; t.unicodeScalars.append(contentsOf: s[range]); return t }
        while i < s.count {
            if s[i] == "$", i + 1 < s.count, s[i + 1] == "$" { i += 2; continue }  // `$$`: a literal dollar, as written on purpose
            if s[i] == "$", i + 1 < s.count, s[i + 1] != "(" {
                // `$NAME`, or `${NAME}` as some of Jamf's examples write it.
                let braced = s[i + 1] == "{"
                let start = braced ? i + 2 : i + 1
                let end = word(from: start) { ("A"..."Z").contains($0) || $0 == "_" || ("0"..."9").contains($0) }
                let name = string(start..<end)
                let close = braced ? (end < s.count && s[end] == "}" ? end + 1 : nil) : end
                if let close, !name.isEmpty {
                    let text = string(i..<close)
                    if let equivalent = jamf[name] {
                        found.append(Token(text: text, console: .jamf, equivalent: equivalent, offset: i))
                        i = close
                        continue
                    }
                    // Jamf's spelling (capitals, three or more) but not in its list: reported, never
                    // shipped silently as text.
                    if name.hasPrefix("EXTENSIONATTRIBUTE_") || (name.count >= 3 && ("A"..."Z").contains(name.unicodeScalars.first!)) {
                        found.append(Token(text: text, console: .jamf, equivalent: nil, offset: i, known: name.hasPrefix("EXTENSIONATTRIBUTE_")))
                        i = close
                        continue
                    }
                }
            } else if s[i] == "{", i + 1 < s.count, s[i + 1] == "{" {
                let end = word(from: i + 2) { $0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_" }
                if end + 1 < s.count, s[end] == "}", s[end + 1] == "}", let equivalent = intune[string((i + 2)..<end).lowercased()] {
                    found.append(Token(text: string(i..<(end + 2)), console: .intune, equivalent: equivalent, offset: i))
                    i = end + 2
                    continue
                }
            } else if s[i] == "{" {
                let end = word(from: i + 1) { $0.properties.isAlphabetic }
                if end < s.count, s[end] == "}", let equivalent = ws1[string((i + 1)..<end).lowercased()] {
                    found.append(Token(text: string(i..<(end + 1)), console: .ws1, equivalent: equivalent, offset: i))
                    i = end + 1
                    continue
                }
            }
            i += 1
        }
        return found
    }

    /// `text` with every token that has an equivalent replaced by it (and `$` of the rest kept as
    /// a literal `$$`); the tokens without one are returned apart.
    public static func translate(_ text: String) -> (text: String, untranslated: [Token]) {
        let s = Array(text.unicodeScalars)
        var out = "", untranslated: [Token] = [], i = 0
        for token in tokens(in: text) {
            for scalar in s[i..<token.offset] { out += scalar == "$" ? "$$" : String(scalar) }
            if let equivalent = token.equivalent { out += equivalent } else {
                out += token.text.replacingDollars
                untranslated.append(token)
            }
            i = token.offset + token.text.unicodeScalars.count
        }
        for scalar in s[i...] { out += scalar == "$" ? "$$" : String(scalar) }
        return (out, untranslated)
    }

    /// The message for a token found in a value or a default.
    public static func message(_ token: Token) -> String {
        if !token.known {
            return "\(token.text) is written as \(token.console.rawValue)'s variables are but is not one of them; it would reach devices as "
                + "literal text: write one of ours ($(emailAddress), $(device.<Column>)...), or $$ for a literal $"
        }
        return "\(token.text) is \(token.console.rawValue)'s variable, which would reach devices as literal text; "
            + (token.equivalent.map { "write \($0)" } ?? "it has no equivalent here: map the value to an inventory column and write $(device.<Column>)")
    }

    /// Tokens in the literal text a template writes (`$$DEPARTMENTID` writes `$DEPARTMENTID`): a
    /// warning, as another console's variable would reach devices as text.
    public static func literalTokens(in template: StringTemplate) -> [Token] {
        template.parts.flatMap { part -> [Token] in
            guard case .literal(let text) = part else { return [] }
            return tokens(in: text).filter(\.known)
        }
    }
}

private extension String {
    var replacingDollars: String { unicodeScalars.map { $0 == "$" ? "$$" : String($0) }.joined() }
}
