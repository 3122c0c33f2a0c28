import AppConfigCore
import AppConfigPattern

extension SpecBuilder {
    // MARK: Constraints

    mutating func parseConstraint(_ element: XMLElement, type: KeyType) -> Constraint {
        checker.attributes(of: element, allowed: ["nullable", "min", "max", "pattern"])
        var constraint = Constraint(location: element.location)
        if let a = element.attribute("nullable") {
            switch a.value.trimmingXMLWhitespace {
            case "true": constraint.nullable = true
            case "false": constraint.nullable = false
            default: report(.constraintNullable, at: a.location, "nullable \"\(a.value)\" is neither true nor false")
            }
        }
        for name in ["min", "max"] {
            guard let a = element.attribute(name) else { continue }
            guard type != .boolean else {
                report(.constraintAttributeNotAllowed, at: a.location, "a boolean key takes no '\(name)'")
                continue
            }
            guard let bound = Self.parseBound(a.value, type: type) else {
                report(.constraintBound, at: a.location, "\(name) \"\(a.value)\" is not \(Self.boundDescription(type))")
                continue
            }
            if name == "min" { constraint.min = bound } else { constraint.max = bound }
        }
        if let lo = constraint.min, let hi = constraint.max, Self.exceeds(lo, hi) {
            report(.constraintRange, at: element.attribute("min")!.location, "min \(lo) is greater than max \(hi)")
        }
        if let a = element.attribute("pattern") {
            if type.elementType != .string {
                report(.constraintAttributeNotAllowed, at: a.location,
                       "'pattern' is allowed only on string and stringArray keys, not on \(type.rawValue)")
            } else {
                constraint.pattern = a.value
                do {
                    constraint.compiledPattern = try Pattern(a.value)
                } catch {
                    report(.constraintPattern, at: a.location,
                           "pattern does not compile: \(error.message) (at offset \(error.offset))")
                }
                if constraint.min != nil || constraint.max != nil {
                    report(.constraintPatternIgnoresBounds, at: a.location,
                           "min and max are ignored when a pattern is given (the reference says so)")
                }
            }
        }
        let children = checker.children(of: element, [.optional("values")])
        if let values = children["values"]?.first {
            if type == .boolean || type == .date {
                report(.constraintValuesNotAllowed, at: values.location, "a \(type.rawValue) key takes no <values>")
            } else {
                constraint.values = parseValues(values, type: type)
            }
        }
        return constraint
    }

    private mutating func parseValues(_ element: XMLElement, type: KeyType) -> [ScalarValue] {
        checker.attributes(of: element, allowed: [])
        let children = checker.children(of: element, [.oneOrMore("value")])
        var out: [ScalarValue] = []
        for item in children["value"] ?? [] {
            checker.attributes(of: item, allowed: [])
            let text = checker.textContent(of: item)
            guard let value = type.elementType.parse(text) else {
                report(.constraintValueType, at: item.location,
                       "value \"\(text.trimmingXMLWhitespace)\" is not \(Self.article(type.elementType))",
                       hint: Self.literalHint(type.elementType))
                continue
            }
            if out.contains(value) {
                report(.constraintValueDuplicate, at: item.location, "value \(value) is listed twice")
            } else {
                out.append(value)
            }
        }
        return out
    }

    static func parseBound(_ text: String, type: KeyType) -> Constraint.Bound? {
        let t = text.trimmingXMLWhitespace
        switch type {
        case .string, .stringArray, .integerArray, .floatArray:
            guard let n = ScalarType.parseInteger(t), n >= 0, let i = Int(exactly: n) else { return nil }
            return .count(i)
        case .integer: return ScalarType.parseInteger(t).map(Constraint.Bound.integer)
        case .float: return ScalarType.parseFloat(t).map(Constraint.Bound.float)
        case .date: return ISO8601.parse(t).map(Constraint.Bound.date)
        case .boolean: return nil
        }
    }

    static func boundDescription(_ type: KeyType) -> String {
        switch type {
        case .string: "a character count (a whole number, 0 or more)"
        case .stringArray, .integerArray, .floatArray: "an element count (a whole number, 0 or more)"
        default: article(type.elementType)
        }
    }

    static func exceeds(_ a: Constraint.Bound, _ b: Constraint.Bound) -> Bool {
        switch (a, b) {
        case (.count(let x), .count(let y)): x > y
        case (.integer(let x), .integer(let y)): x > y
        case (.float(let x), .float(let y)): x > y
        case (.date(let x), .date(let y)): x > y
        default: false
        }
    }
}
