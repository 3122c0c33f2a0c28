import AppConfigBytes
import AppConfigCompiler
import AppConfigSources
import AppConfigSpec
import Dispatch

/// Which assignments match each device, and one program per distinct set of them (a variant),
/// compiled once on first sight. The render loop only picks a device's variant: its program
/// image and slot plan are ready, so rendering stays as it is without assignments.
public struct DeviceAssignments: Sendable {
    /// The assignments' names, in file order (bit i of a set is assignment i).
    public let names: [String]
    /// Per variant: the set of assignments (bits) and its program. Variant 0 is the set of none,
    /// the base program, whether a device has it or not.
    public let sets: [UInt64]
    public let programs: [Program]
    /// Per inventory row, its variant.
    let variantOfRow: [UInt16]
    /// Per variant, what ends its devices' lines of `index.jsonl`: `,"assignments":[...]` (nothing
    /// without assignments), made once.
    let indexFields: [[UInt8]]

    /// The variant of a job without assignments: every row renders the base program.
    init(base: Program) {
        self.init(names: [], sets: [0], programs: [base], variantOfRow: [])
    }

    @inline(__always)
    func variant(ofRow row: Int) -> Int { variantOfRow.isEmpty ? 0 : Int(variantOfRow[row]) }

    /// The assignments (indices, in file order) in a set.
    static func members(of set: UInt64, among count: Int) -> [Int] {
        (0..<count).filter { set & (1 << UInt64($0)) != 0 }
    }

    /// The names of the assignments that applied to a row, in file order.
    public func applied(toRow row: Int) -> [String] {
        let set = sets[variant(ofRow: row)]
        return Self.members(of: set, among: names.count).map { names[$0] }
    }

    /// Matches every device of the fleet against the configuration's assignments, then compiles
    /// each distinct set. A match on an inventory column the inventory lacks, or on groups without
    /// a directory, is an error (nothing could match); a group the directory does not hold is a
    /// warning. Throws a `Problem` for the sources, a `ProblemList` for a variant that does not compile.
    public static func resolve(_ configuration: Configuration, fleet: Fleet, warning: (Problem) -> Void) throws -> DeviceAssignments {
        let assignments = configuration.assignments
        guard !assignments.isEmpty else { return DeviceAssignments(base: configuration.base) }
        let matcher = try Matcher(assignments, fleet: fleet, warning: warning)
        // Each row's set, rows split across the cores; then each distinct set numbered in row order.
        var setOfRow = [UInt64](repeating: 0, count: fleet.deviceCount)
        let chunk = 65_536
        setOfRow.withUnsafeMutableBufferPointer { buffer in
            let sets = WorkerSlots(buffer)
            DispatchQueue.concurrentPerform(iterations: (fleet.deviceCount + chunk - 1) / chunk) { c in
                var scratch = [UnsafeBufferPointer<UInt8>?](repeating: nil, count: matcher.plan.variables.count)
                for row in (c * chunk)..<min((c + 1) * chunk, fleet.deviceCount) {
                    sets.buffer[row] = matcher.set(ofRow: row, values: &scratch)
                }
            }
        }
        var variantOf: [UInt64: UInt16] = [0: 0]
        var sets: [UInt64] = [0]
        var variantOfRow = [UInt16](repeating: 0, count: fleet.deviceCount)
        for (row, set) in setOfRow.enumerated() {
            if let v = variantOf[set] {
                variantOfRow[row] = v
            } else {
                guard sets.count <= Int(UInt16.max) else {
                    throw Problem(JobCode.assignmentMatch, "the devices match more than \(UInt16.max) distinct sets of assignments")
                }
                let v = UInt16(sets.count)
                variantOf[set] = v
                sets.append(set)
                variantOfRow[row] = v
            }
        }
        var programs = [configuration.base]
        for set in sets.dropFirst() {
            programs.append(try configuration.program(for: members(of: set, among: assignments.count)))
        }
        return DeviceAssignments(names: assignments.map(\.name), sets: sets, programs: programs, variantOfRow: variantOfRow)
    }

    private init(names: [String], sets: [UInt64], programs: [Program], variantOfRow: [UInt16]) {
        self.names = names
        self.sets = sets
        self.programs = programs
        self.variantOfRow = variantOfRow
        indexFields = names.isEmpty ? [[]] : sets.map { set in
            var fields: [UInt8] = []
            JSONText.append(#","assignments":["#, to: &fields)
            for (n, i) in Self.members(of: set, among: names.count).enumerated() {
                if n > 0 { fields.append(UInt8(ascii: ",")) }
                JSONText.appendString(names[i], to: &fields)
            }
            fields.append(UInt8(ascii: "]"))
            return fields
        }
    }

    /// The `index.jsonl` fields of a row's device.
    @inline(__always)
    func indexFields(ofRow row: Int) -> [UInt8] { indexFields[variant(ofRow: row)] }

    /// Devices per assignment (the shard's rows).
    func counts(rows: [Int32]) -> [String: Int] {
        var perVariant = [Int](repeating: 0, count: sets.count)
        for row in rows { perVariant[variant(ofRow: Int(row))] += 1 }
        var counts = Dictionary(uniqueKeysWithValues: names.map { ($0, 0) })
        for (v, n) in perVariant.enumerated() where n > 0 {
            for i in Self.members(of: sets[v], among: names.count) { counts[names[i], default: 0] += n }
        }
        return counts
    }
}

/// Evaluates the assignments' matches for one row: values compared with the device's bytes
/// (ASCII case-insensitively), groups through the user's membership bits, resolved once per run.
private struct Matcher: @unchecked Sendable {
    struct Test {
        /// An index into `plan` (a variable), or -1 for a group test.
        var slot: Int
        var values: [[UInt8]]
        /// For a group test: the bits of the groups named.
        var groupBits: UInt64
    }

    let plan: Fleet.SlotPlan
    let fleet: Fleet
    /// Per assignment, every test must pass.
    let tests: [[Test]]
    /// Per user, the named groups it is in (bit i: `groupNames[i]`).
    let userGroups: [UInt64]

    init(_ assignments: [Assignment], fleet: Fleet, warning: (Problem) -> Void) throws(Problem) {
        var variables: [Variable] = []
        var groupNames: [String] = []
        for assignment in assignments {
            for condition in assignment.conditions {
                switch condition.subject {
                case .variable(let v):
                    if case .deviceAttribute(let column) = v, fleet.inventory.slot(ofColumn: column) == nil {
                        throw Problem(SourceCode.csvUnknownColumn, at: condition.location,
                                      "assignment \"\(assignment.name)\" matches on device.\(column), but \(fleet.inventory.file) has no column \"\(column)\"")
                    }
                    if !variables.contains(v) { variables.append(v) }
                case .group:
                    guard fleet.users != nil else {
                        throw Problem(JobCode.assignmentMatch, at: condition.location,
                                      "assignment \"\(assignment.name)\" matches on groups, which come from a directory: give --directory")
                    }
                    for name in condition.values where !groupNames.contains(where: { $0.lowercased() == name.lowercased() }) {
                        guard groupNames.count < 64 else {
                            throw Problem(JobCode.assignmentMatch, at: condition.location, "the assignments name more than 64 groups")
                        }
                        groupNames.append(name)
                    }
                }
            }
        }
        plan = try fleet.plan(for: variables)
        self.fleet = fleet
        if let users = fleet.users, !groupNames.isEmpty {
            let groups = users.groups
            var warned: Set<String> = []
            for assignment in assignments {
                for condition in assignment.conditions where condition.subject == .group {
                    for name in condition.values where groups?.groups(named: name).isEmpty ?? true && warned.insert(name.lowercased()).inserted {
                        warning(Problem(SourceCode.groupUnknown, at: condition.location,
                                        "assignment \"\(assignment.name)\": the directory (\(users.source)) holds no group \"\(name)\"; no device matches through it"))
                    }
                }
            }
            userGroups = groups?.memberships(of: groupNames, userCount: users.count) ?? []
        } else {
            userGroups = []
        }
        tests = assignments.map { assignment in
            assignment.conditions.map { condition in
                switch condition.subject {
                case .variable(let v):
                    Test(slot: variables.firstIndex(of: v)!, values: condition.values.map { Array($0.utf8) }, groupBits: 0)
                case .group:
                    Test(slot: -1, values: [], groupBits: condition.values.reduce(0) { bits, name in
                        bits | 1 << UInt64(groupNames.firstIndex { $0.lowercased() == name.lowercased() }!)
                    })
                }
            }
        }
    }

    /// The set of assignments a row matches. `values`: room for the row's variables, reused.
    func set(ofRow row: Int, values: inout [UnsafeBufferPointer<UInt8>?]) -> UInt64 {
        fleet.forEachValue(row: row, plan: plan) { slot, bytes in values[slot] = bytes }
        let groups = fleet.user(ofRow: row).map { userGroups.isEmpty ? 0 : userGroups[$0] } ?? 0
        var set: UInt64 = 0
        for (i, tests) in tests.enumerated() {
            let matches = tests.allSatisfy { test in
                if test.slot < 0 { return groups & test.groupBits != 0 }
                guard let value = values[test.slot] else { return false }
                return test.values.contains { v in v.withUnsafeBufferPointer { bytesEqual($0, value, foldingASCIICase: true) } }
            }
            if matches { set |= 1 << UInt64(i) }
        }
        return set
    }
}
