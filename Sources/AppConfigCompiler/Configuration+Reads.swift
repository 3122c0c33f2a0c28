import AppConfigCore
import AppConfigSpec

/// What a job's programs read of the inventory and the directory: the columns and variables the
/// loaders keep (a render keeps no more than it reads).
extension Configuration {
    /// Every inventory column a device's program may read: `$(device.<Column>)` in the spec, the
    /// values or any assignment.
    public var deviceColumns: [String] {
        var columns = base.deviceColumns
        for assignment in assignments {
            for case .value(let value) in assignment.entries.values {
                for case .template(let t) in value.items.map(\.content) {
                    for case .deviceAttribute(let c) in t.variables where !columns.contains(c) { columns.append(c) }
                }
            }
        }
        return columns
    }

    /// Every variable a device's program may read (the spec, the values, any assignment) and the
    /// assignments and exclusions match on: what the inventory and the user table keep. Nil when
    /// credentials render from variables of their own (everything is kept).
    public var variablesRead: Set<Variable>? {
        if let values, !values.credentials.isEmpty || values.assignments.contains(where: { !$0.credentials.isEmpty }) { return nil }
        var read = Set(base.slots)
        for assignment in assignments {
            for case .value(let value) in assignment.entries.values {
                for case .template(let t) in value.items.map(\.content) { read.formUnion(t.variables) }
            }
        }
        for condition in (assignments + exclusions).flatMap(\.conditions) {
            if case .variable(let v) = condition.subject { read.insert(v) }
        }
        return read
    }

    /// The inventory columns assignments and exclusions match on (`device.<Column>`).
    public var matchColumns: [String] {
        (assignments + exclusions).flatMap(\.conditions).compactMap { if case .variable(.deviceAttribute(let c)) = $0.subject { c } else { nil } }
    }
}

extension Program {
    /// The inventory columns the program reads through `$(device.<Column>)`.
    public var deviceColumns: [String] {
        slots.compactMap { if case .deviceAttribute(let c) = $0 { c } else { nil } }
    }
}
