/// Which spec keys hold secrets, from what the spec says of them: a key named like one
/// (`password`, `apiToken`, `client_secret`, `licenseKey`) or described as one ("The service
/// password"). Lint warns when such a key is given a literal (`values.secret-literal`).
enum SecretKeys {
    /// Words of a key's name that say it holds a secret wherever they stand (or their plurals).
    static let secretWords: Set<String> = ["password", "passwd", "pwd", "secret", "token", "passphrase", "passcode", "credential", "credentials", "apikey"]
    /// Words that make a final `key` a secret one (`apiKey`, `license_key`); `key` alone, or in
    /// `keyboardLayout` or `hotKey`, is not.
    static let keyQualifiers: Set<String> = ["api", "license", "licence", "access", "secret", "private", "client", "auth", "signing", "encryption", "shared", "app", "activation"]
    /// Phrases of a description that say the value is a secret.
    static let descriptionPhrases = ["password", "secret", "token", "passphrase", "api key", "license key", "licence key", "private key", "access key"]

    /// Why the key looks like a secret ("its name says token"), or nil.
    static func reason(for key: Key, in spec: Spec) -> String? {
        let words = nameWords(key.name)
        if let word = words.first(where: { secretWords.contains($0) || ($0.hasSuffix("s") && secretWords.contains(String($0.dropLast()))) }) {
            return "its name says \(word)"
        }
        if words.count >= 2, words.last == "key", keyQualifiers.contains(words[words.count - 2]) {
            return "its name says \(words[words.count - 2]) key"
        }
        let descriptions = (spec.presentation?.allFields ?? []).filter { $0.keyName == key.name }
            .flatMap { [$0.label, $0.description].compactMap { $0 } }.flatMap(\.entries).map { $0.text.lowercased() }
        for text in descriptions {
            if let phrase = descriptionPhrases.first(where: { text.contains($0) }) { return "its description says \(phrase)" }
        }
        return nil
    }

    /// A name's words, lowercased: split at `_`, `-`, `.`, spaces and camelCase humps (`APIToken`
    /// is `api`, `token`).
    static func nameWords(_ name: String) -> [String] {
        var words: [String] = []
        var current = ""
        let chars = Array(name)
        for (i, c) in chars.enumerated() {
            if !(c.isLetter || c.isNumber) {
                if !current.isEmpty { words.append(current) }
                current = ""
                continue
            }
            // A hump: lower to upper, or the last capital of a run before a lower (`APIToken`: `API|Token`).
            let startsWord = c.isUppercase && !current.isEmpty
                && (chars[i - 1].isLowercase || chars[i - 1].isNumber || (i + 1 < chars.count && chars[i + 1].isLowercase))
            if startsWord {
                words.append(current)
                current = ""
            }
            current.append(c)
        }
        if !current.isEmpty { words.append(current) }
        return words.map { $0.lowercased() }
    }
}

extension Spec {
    /// Whether the key's name or description says it holds a secret (a diff shows it masked).
    public func looksSecret(keyNamed name: String) -> Bool {
        key(named: name).map { SecretKeys.reason(for: $0, in: self) != nil } ?? false
    }
}
