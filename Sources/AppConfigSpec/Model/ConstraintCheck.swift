import AppConfigPattern

extension Constraint {
    /// Why these literal values break the constraint, one reason each; empty when they keep it.
    /// The reference's meaning: for arrays `min`/`max` count elements; for strings they count
    /// characters (UTF-16 code units, what the app sees as NSString length); with a `pattern`,
    /// `min`/`max` are ignored for strings and string arrays; `pattern` is an unanchored search.
    public func violations(of values: [ScalarValue], keyType: KeyType) -> [String] {
        var reasons: [String] = []
        if keyType.isArray, let reason = countViolation(values.count) { reasons.append(reason) }
        for value in values {
            if let reason = violation(of: value, keyType: keyType) { reasons.append(reason) }
        }
        return reasons
    }

    /// An array's element count against `min`/`max` (ignored when a pattern is given).
    public func countViolation(_ count: Int) -> String? {
        guard pattern == nil else { return nil }
        if case .count(let lo)? = min, count < lo { return "\(count) elements, fewer than min \(lo)" }
        if case .count(let hi)? = max, count > hi { return "\(count) elements, more than max \(hi)" }
        return nil
    }

    /// The reason one element breaks the constraint (for arrays, the per-element rules only).
    public func violation(of value: ScalarValue, keyType: KeyType) -> String? {
        if let values, !values.contains(value) {
            return "\(value) is not one of " + values.map(\.description).joined(separator: ", ")
        }
        switch value {
        case .string(let s):
            if let compiledPattern {
                switch compiledPattern.search(s) {
                case .match: return nil
                case .noMatch: return "\(value) does not match pattern \(compiledPattern.source)"
                case .failed(let why): return "pattern \(compiledPattern.source) could not be checked against \(value): \(why)"
                }
            }
            guard !keyType.isArray else { return nil }
            let length = s.utf16.count
            if case .count(let lo)? = min, length < lo { return "\(value) has \(length) characters, fewer than min \(lo)" }
            if case .count(let hi)? = max, length > hi { return "\(value) has \(length) characters, more than max \(hi)" }
        case .integer(let i):
            if case .integer(let lo)? = min, i < lo { return "\(i) is less than min \(lo)" }
            if case .integer(let hi)? = max, i > hi { return "\(i) is greater than max \(hi)" }
        case .float(let d):
            if case .float(let lo)? = min, d < lo { return "\(d) is less than min \(lo)" }
            if case .float(let hi)? = max, d > hi { return "\(d) is greater than max \(hi)" }
        case .date(let d):
            if case .date(let lo)? = min, d < lo { return "\(d) is before min \(lo)" }
            if case .date(let hi)? = max, d > hi { return "\(d) is after max \(hi)" }
        case .boolean:
            break
        }
        return nil
    }
}
