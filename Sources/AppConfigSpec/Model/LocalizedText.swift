/// The `language` elements of a label, description, option or group name.
public struct LocalizedText: Sendable, Equatable {
    public struct Entry: Sendable, Equatable {
        /// As written: `en-US`, `en_US`, `es`.
        public var language: String
        public var text: String

        public init(language: String, text: String) {
            self.language = language
            self.text = text
        }
    }

    public var entries: [Entry]

    public init(entries: [Entry]) { self.entries = entries }

    /// The reference's fallback ("How an EMM service's admin console chooses a localized string"):
    /// for `xx-YY`, an exact match, then any entry of language `xx`, then `defaultLocale` exactly;
    /// for `xx`, any entry of language `xx`, then `defaultLocale`. Codes compare case-insensitively,
    /// with `_` and `-` taken as the same separator (the reference's own examples write `en_US`).
    /// The first entry wins among equals. Nil when nothing matches: the caller falls back to the
    /// keyName (labels) or shows nothing (descriptions, names).
    public func resolve(for displayLanguage: String, defaultLocale: String?) -> String? {
        let wanted = Self.normalize(displayLanguage)
        let wantedLanguage = Self.language(of: wanted)
        let normalized = entries.map { (code: Self.normalize($0.language), text: $0.text) }
        if wanted.contains("-"), let exact = normalized.first(where: { $0.code == wanted }) {
            return exact.text
        }
        if let sameLanguage = normalized.first(where: { Self.language(of: $0.code) == wantedLanguage }) {
            return sameLanguage.text
        }
        if let defaultLocale, let fallback = normalized.first(where: { $0.code == Self.normalize(defaultLocale) }) {
            return fallback.text
        }
        return nil
    }

    static func normalize(_ code: String) -> String {
        String(code.trimmingXMLWhitespace.lowercased().map { $0 == "_" ? "-" : $0 })
    }

    static func language(of normalizedCode: String) -> Substring {
        normalizedCode.prefix { $0 != "-" }
    }
}
