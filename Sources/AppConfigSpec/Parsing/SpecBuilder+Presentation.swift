import AppConfigCore

/// The `<presentation>` part of a spec: field groups, fields, options, localized texts, checked
/// against the keys they present.
extension SpecBuilder {
    mutating func parsePresentation(_ element: XMLElement, keys: [Key]) -> Presentation {
        checker.attributes(of: element, allowed: ["defaultLocale"], required: ["defaultLocale"])
        let defaultLocale = element.attribute("defaultLocale")?.value.trimmingXMLWhitespace ?? ""
        if let a = element.attribute("defaultLocale") { checkLanguageCode(defaultLocale, at: a.location) }
        _ = checker.children(of: element, [.any("field"), .any("fieldGroup")], ordered: false)
        var context = PresentationContext(keys: keys, defaultLocale: defaultLocale)
        var items: [Presentation.Item] = []
        for child in element.elements {
            if child.name == "field" {
                items.append(.field(parseField(child, context: &context)))
            } else if child.name == "fieldGroup" {
                items.append(.group(parseFieldGroup(child, context: &context)))
            }
        }
        return Presentation(defaultLocale: defaultLocale, items: items, location: element.location)
    }

    struct PresentationContext {
        var keys: [Key]
        var defaultLocale: String
        var fieldsSeen = FirstOfEachName()
    }

    mutating func parseFieldGroup(_ element: XMLElement, context: inout PresentationContext) -> FieldGroup {
        checker.attributes(of: element, allowed: [])
        let children = checker.children(of: element, [.one("name"), .oneOrMore("field")])
        let name = children["name"]?.first.map { parseLocalized($0, context: context) } ?? LocalizedText(entries: [])
        let fields = (children["field"] ?? []).map { parseField($0, context: &context) }
        return FieldGroup(name: name, fields: fields, location: element.location)
    }

    mutating func parseField(_ element: XMLElement, context: inout PresentationContext) -> Field {
        checker.attributes(of: element, allowed: ["keyName", "type"], required: ["keyName", "type"])
        let children = checker.children(of: element, [.optional("label"), .optional("description"), .optional("options")])
        let keyName = element.attribute("keyName")?.value ?? ""
        var type: FieldType?
        if let a = element.attribute("type") {
            type = FieldType(rawValue: a.value.trimmingXMLWhitespace)
            if type == nil {
                report(.fieldType, at: a.location, "field type \"\(a.value)\" is not one of "
                       + FieldType.allCases.map(\.rawValue).joined(separator: ", "))
            }
        }
        let key = context.keys.first { $0.name == keyName }
        if element.attribute("keyName") != nil {
            let first = context.fieldsSeen.earlier(keyName, at: element.location)
            if key == nil {
                let hint = ContentChecker.suggestion(for: keyName, among: context.keys.map(\.name)).map { "did you mean \"\($0)\"?" }
                report(.fieldUnknownKey, at: element.attribute("keyName")!.location,
                       "field names key \"\(keyName)\", which the dict does not define", hint: hint)
            } else if let first {
                report(.fieldDuplicate, at: element.location,
                       "key \"\(keyName)\" already has a field at line \(first.line)")
            }
        }
        if let key, let type {
            checkFieldType(type, key: key, at: element.location)
        }
        var field = Field(keyName: keyName, type: type, options: [], location: element.location)
        field.label = children["label"]?.first.map { parseLocalized($0, context: context) }
        field.description = children["description"]?.first.map { parseLocalized($0, context: context) }
        if let options = children["options"]?.first {
            field.options = parseOptions(options, key: key, context: context)
        }
        return field
    }

    mutating func checkFieldType(_ type: FieldType, key: Key, at location: Location) {
        let suits: Bool
        switch type {
        case .checkbox: suits = key.type == .boolean
        case .datetime: suits = key.type == .date
        case .list, .multiselect: suits = key.type.isArray
        case .hidden, .input, .select: suits = true
        }
        if !suits {
            report(.fieldTypeMismatch, at: location,
                   "a \(type.rawValue) field does not suit \(key.type.rawValue) key \"\(key.name)\"")
        }
        if type == .hidden && key.defaultValue == nil {
            report(.hiddenWithoutDefault, at: location,
                   "hidden field for \"\(key.name)\", whose key has no default: the admin cannot set it",
                   hint: "give the key a <defaultValue>")
        }
    }

    mutating func parseOptions(_ element: XMLElement, key: Key?, context: PresentationContext) -> [FieldOption] {
        checker.attributes(of: element, allowed: [])
        let children = checker.children(of: element, [.oneOrMore("option")])
        var out: [FieldOption] = []
        for item in children["option"] ?? [] {
            checker.attributes(of: item, allowed: ["value", "selected"], required: ["value"])
            var selected = false
            if let a = item.attribute("selected") {
                switch a.value.trimmingXMLWhitespace {
                case "true": selected = true
                case "false": selected = false
                default: report(.optionSelected, at: a.location, "selected \"\(a.value)\" is neither true nor false")
                }
            }
            let value = item.attribute("value")?.value ?? ""
            if let key, let a = item.attribute("value") {
                checkOptionValue(value, key: key, at: a.location)
            }
            let text = parseLocalized(item, context: context)
            out.append(FieldOption(value: value, selected: selected, text: text, location: item.location))
        }
        return out
    }

    /// An option's value must be one of the key's constraint values (compared as the key's type,
    /// so that option "15" matches integer value 15 and option "1.50" float value 1.5).
    mutating func checkOptionValue(_ value: String, key: Key, at location: Location) {
        guard let allowed = key.constraint?.values else {
            report(.optionValue, at: location,
                   "option \"\(value)\" for key \"\(key.name)\", which has no <values> to choose from")
            return
        }
        let typed = key.type.elementType.parse(value)
        if typed == nil || !allowed.contains(typed!) {
            report(.optionValue, at: location,
                   "option \"\(value)\" is not one of the values of \"\(key.name)\": "
                   + allowed.map(\.description).joined(separator: ", "))
        }
    }

    /// label, description, name and option: one or more `language` elements.
    mutating func parseLocalized(_ element: XMLElement, context: PresentationContext) -> LocalizedText {
        if element.name != "option" { checker.attributes(of: element, allowed: []) }
        let children = checker.children(of: element, [.oneOrMore("language")])
        var entries: [LocalizedText.Entry] = []
        for language in children["language"] ?? [] {
            checker.attributes(of: language, allowed: ["value"], required: ["value"])
            let text = checker.textContent(of: language)
            guard let code = language.attribute("value") else { continue }
            checkLanguageCode(code.value, at: code.location)
            entries.append(.init(language: code.value.trimmingXMLWhitespace, text: text))
        }
        let text = LocalizedText(entries: entries)
        let wanted = LocalizedText.normalize(context.defaultLocale)
        if !entries.isEmpty, !context.defaultLocale.isEmpty,
           !entries.contains(where: { LocalizedText.normalize($0.language) == wanted }) {
            report(.languageNoDefaultLocale, at: element.location,
                   "<\(element.name)> has no <language value=\"\(context.defaultLocale)\">, the presentation's defaultLocale",
                   hint: "the reference asks for a language element that exactly matches defaultLocale")
        }
        return text
    }

    /// `xx` or `xx-YY` (xs:language); `en_US` is accepted with a warning (the reference's examples use it).
    mutating func checkLanguageCode(_ code: String, at location: Location) {
        let parts = code.trimmingXMLWhitespace.split(separator: "-", omittingEmptySubsequences: false)
            .flatMap { $0.split(separator: "_", omittingEmptySubsequences: false) }
        let wellFormed = !parts.isEmpty && parts.allSatisfy { (1...8).contains($0.count) && $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) } }
            && parts[0].allSatisfy(\.isLetter)
        if !wellFormed {
            report(.languageCode, at: location, "\"\(code)\" is not a language code such as en or en-US")
        } else if code.contains("_") {
            report(.languageCode, at: location, "\"\(code)\" separates language and region with '_'; the schema's form is \"\(code.replacingUnderscores)\"")
        }
    }
}
