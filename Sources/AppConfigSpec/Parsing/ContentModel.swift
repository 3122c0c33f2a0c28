import AppConfigCore

/// Checks an element's children and attributes against the schema's content model, reporting
/// unknown, missing, repeated and misordered elements. Shared by the spec parser for every element.
struct ContentChecker {
    struct Rule {
        var name: String
        var min: Int
        var max: Int

        static func one(_ name: String) -> Rule { Rule(name: name, min: 1, max: 1) }
        static func optional(_ name: String) -> Rule { Rule(name: name, min: 0, max: 1) }
        static func oneOrMore(_ name: String) -> Rule { Rule(name: name, min: 1, max: .max) }
        static func any(_ name: String) -> Rule { Rule(name: name, min: 0, max: .max) }
    }

    var log = ProblemLog()
    /// `--lenient`: unknown elements and attributes become warnings.
    let lenient: Bool

    /// Returns the children grouped by name, in document order. With `ordered`, children must
    /// follow the rules' order (an xs:sequence); without, they may interleave (an xs:choice).
    mutating func children(of element: XMLElement, _ rules: [Rule], ordered: Bool = true) -> [String: [XMLElement]] {
        rejectText(in: element)
        var grouped: [String: [XMLElement]] = [:]
        var lastIndex = 0
        var lastName: String?
        for child in element.elements {
            guard let index = rules.firstIndex(where: { $0.name == child.name }) else {
                unknownElement(child, inside: element, expected: rules.map(\.name))
                continue
            }
            if ordered, index < lastIndex, let lastName {
                log.report(.elementOrder, at: child.location,
                           "<\(child.name)> must come before <\(lastName)> inside <\(element.name)>")
            }
            if index >= lastIndex { lastIndex = index; lastName = child.name }
            grouped[child.name, default: []].append(child)
            if rules[index].max != .max, grouped[child.name]!.count == rules[index].max + 1 {
                log.report(.duplicateElement, at: child.location,
                           "<\(element.name)> may hold only \(rules[index].max == 1 ? "one" : String(rules[index].max)) <\(child.name)>")
            }
        }
        for rule in rules where (grouped[rule.name]?.count ?? 0) < rule.min {
            log.report(.missingElement, at: element.location,
                       "<\(element.name)> needs \(rule.max == 1 ? "a" : "at least one") <\(rule.name)> element")
        }
        return grouped
    }

    /// Text other than white space where only elements belong.
    mutating func rejectText(in element: XMLElement) {
        for (text, location) in element.significantText {
            let shown = text.trimmingXMLWhitespace.prefix(30)
            log.report(.xmlText, at: location, "text \"\(shown)\" is not allowed inside <\(element.name)>")
        }
    }

    /// An element whose content is text only (`<version>`, `<value>`, `<language>`).
    mutating func textContent(of element: XMLElement) -> String {
        for child in element.elements {
            unknownElement(child, inside: element, expected: [])
        }
        return element.text
    }

    mutating func unknownElement(_ child: XMLElement, inside parent: XMLElement, expected: [String]) {
        let hint = Self.suggestion(for: child.name, among: expected).map { "did you mean <\($0)>?" }
            ?? (expected.isEmpty ? nil : "allowed here: " + expected.map { "<\($0)>" }.joined(separator: ", "))
        log.append(Problem(.unknownElement, lenient ? .warning : .error, at: child.location,
                              "<\(child.name)> is not an element of <\(parent.name)>\(lenient ? " (ignored)" : "")",
                              hint: hint))
    }

    /// Reports unknown attributes and missing required ones. `extra` accepts further names
    /// (the root's namespace and xsi: attributes).
    mutating func attributes(of element: XMLElement, allowed: [String], required: [String] = [],
                             extra: (String) -> Bool = { _ in false }) {
        for attribute in element.attributes where !allowed.contains(attribute.name) && !extra(attribute.name) {
            let hint = Self.suggestion(for: attribute.name, among: allowed).map { "did you mean '\($0)'?" }
            log.append(Problem(.unknownAttribute, lenient ? .warning : .error, at: attribute.location,
                                  "attribute '\(attribute.name)' is not allowed on <\(element.name)>\(lenient ? " (ignored)" : "")",
                                  hint: hint))
        }
        for name in required where element.attribute(name) == nil {
            log.report(.missingAttribute, at: element.location, "<\(element.name)> needs a '\(name)' attribute")
        }
    }

    /// The closest allowed name within two edits, for "did you mean" hints (`constraints` -> `constraint`).
    static func suggestion(for name: String, among candidates: [String]) -> String? {
        candidates
            .map { ($0, editDistance(name.lowercased(), $0.lowercased())) }
            .filter { $0.1 <= 2 }
            .min { $0.1 < $1.1 }?.0
    }

    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        var previous = Array(0...b.count)
        for i in 1...max(a.count, 1) where !a.isEmpty {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...max(b.count, 1) where !b.isEmpty {
                current[j] = Swift.min(previous[j] + 1, current[j - 1] + 1,
                                       previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}

/// The closest of `candidates` to `name` within two edits, for "did you mean" hints anywhere.
public func closestName(to name: String, among candidates: [String]) -> String? {
    ContentChecker.suggestion(for: name, among: candidates)
}
