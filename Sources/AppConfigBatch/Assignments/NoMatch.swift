import AppConfigCore
import AppConfigSources
import AppConfigSpec

/// An assignment (or exclusion) that matches no device is most often a typo (`"ou": "Slaes"`):
/// said with the values the fleet has for what it tests, and the closest one.
enum NoMatch {
    /// How many distinct values a message lists.
    static let shown = 8

    static func problem(_ assignment: Assignment, isExclusion: Bool, fleet: Fleet) -> Problem {
        let what = isExclusion ? "\(assignment.name) leaves out" : "assignment \"\(assignment.name)\" matches"
        var notes: [String] = []
        for condition in assignment.conditions {
            guard case .variable(let v) = condition.subject, condition.test == .equals || condition.test == .contains,
                  let seen = distinctValues(of: v, in: fleet, lists: condition.test == .contains) else { continue }
            let missing = condition.values.filter { wanted in !seen.contains { $0.lowercased() == wanted.lowercased() } }
            guard !missing.isEmpty else { continue }
            var note = "\(v) " + missing.map { "\"\($0)\"" }.joined(separator: ", ") + " is not among the values seen ("
                + seen.sorted().prefix(shown).joined(separator: ", ") + (seen.count > shown ? ", ... \(seen.count) in all" : "") + ")"
            let suggestions = missing.compactMap { closestName(to: $0, among: Array(seen)) }
            if !suggestions.isEmpty { note += "; did you mean " + suggestions.map { "\"\($0)\"" }.joined(separator: ", ") + "?" }
            notes.append(note)
        }
        var problem = Problem(JobCode.assignmentNoMatch, at: assignment.location,
                              "\(what) no device" + (notes.isEmpty ? "" : ": " + notes.joined(separator: "; ")))
        problem.severity = .warning
        return problem
    }

    /// The distinct values a variable takes in the fleet (items of a list column for `contains`),
    /// nil when it has none to show; at most 10,000 are collected.
    static func distinctValues(of variable: Variable, in fleet: Fleet, lists: Bool) -> Set<String>? {
        guard let plan = try? fleet.plan(for: [variable]) else { return nil }
        var seen = Set<String>()
        // The inventory's lists as its console writes them; the directory's are values of their own.
        let bracketed = fleet.inventory.preset.listsInBrackets && fleet.directoryVariable(variable) == nil
        for row in 0..<fleet.deviceCount where seen.count < 10_000 {
            fleet.forEachValue(row: row, plan: plan) { _, bytes in
                guard let bytes, !bytes.isEmpty else { return }
                let value = String(decoding: bytes, as: UTF8.self)
                if lists { seen.formUnion(Assignment.Condition.listItems(value, bracketed: bracketed).filter { !$0.isEmpty }) } else { seen.insert(value) }
            }
        }
        return seen.isEmpty ? nil : seen
    }
}
