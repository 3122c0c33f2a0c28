extension Pattern {
    /// The assertions a pattern makes about the subject around its match, when those are only `^`
    /// (the match starts the subject) and `$` (it ends it, or stands before a final newline). Then
    /// the pattern is blind to text outside its match: if it matches inside a piece of a string, it
    /// matches the string (the piece first, for `^`; last, for `$`). How the compiler proves a
    /// pattern check that every device passes, from a template's fixed text.
    public struct Anchors: Sendable, Equatable {
        public var start: Bool
        public var end: Bool

        public init(start: Bool, end: Bool) {
            self.start = start
            self.end = end
        }

        /// Read from a source PCRE2 compiled (default options). Nil for anything that may look
        /// beyond the match or that this reading does not follow: any `(` (groups, lookarounds,
        /// conditions, verbs, inline options), `\\` before a letter other than a character type
        /// (`\\d \\w \\s \\h \\v` and capitals) or a control escape (`\\t \\n \\r \\f \\e`), before a
        /// digit (a backreference), `\\Q`, and the word boundaries `[[:<:]]`, `[[:>:]]`.
        public static func of(_ source: String) -> Anchors? {
            let s = Array(source.unicodeScalars)
            var anchors = Anchors(start: false, end: false)
            var i = 0
            while i < s.count {
                switch s[i] {
                case "^": anchors.start = true
                case "$": anchors.end = true
                case "(", ")": return nil
                case "\\":
                    guard i + 1 < s.count, isBlindEscape(s[i + 1]) else { return nil }
                    i += 1
                case "[":
                    guard let close = classEnd(s, open: i) else { return nil }
                    i = close
                default: break
                }
                i += 1
            }
            return anchors
        }

        /// An escape that stands for characters: a character type, a control, or punctuation
        /// taken literally.
        private static func isBlindEscape(_ c: Unicode.Scalar) -> Bool {
            if "dDwWsShHvVtnrfe".unicodeScalars.contains(c) { return true }
            return c.isASCII && !(c.properties.isAlphabetic || ("0"..."9").contains(c)) && c.value >= 0x20
        }

        /// The `]` closing the class opened at `open`, or nil (not found, or an escape or POSIX
        /// name this reading does not follow).
        private static func classEnd(_ s: [Unicode.Scalar], open: Int) -> Int? {
            var i = open + 1
            if i < s.count, s[i] == "^" { i += 1 }
            if i < s.count, s[i] == "]" { i += 1 }  // first in the class, `]` is itself
            while i < s.count {
                switch s[i] {
                case "]":
                    return i
                case "\\":
                    // In a class every escape is characters; `\\Q...\\E` quotes and is not followed.
                    guard i + 1 < s.count, s[i + 1] != "Q", s[i + 1] != "E" else { return nil }
                    i += 2
                    continue
                case "[" where i + 1 < s.count && [":", ".", "="].contains(s[i + 1]):
                    // `[:alpha:]` to its `:]`; `[:<:]` and `[:>:]` are word boundaries.
                    let mark = s[i + 1]
                    var j = i + 2
                    while j + 1 < s.count && !(s[j] == mark && s[j + 1] == "]") { j += 1 }
                    guard j + 1 < s.count else { return nil }
                    let name = String(String.UnicodeScalarView(s[(i + 2)..<j]))
                    if name == "<" || name == ">" { return nil }
                    i = j + 2
                    continue
                default:
                    break
                }
                i += 1
            }
            return nil
        }
    }
}
