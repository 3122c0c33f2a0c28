import AppConfigCore
import AppConfigPattern
import AppConfigCompiler
import AppConfigSources
import AppConfigSpec
import CByteScan
import Dispatch

/// Numbers sets of assignments in the order they are first met (the empty set is 0): open
/// addressing on a multiplicative hash, the last set remembered. A `Dictionary` per row (SipHash)
/// was most of the numbering's time.
struct VariantNumbers {
    private(set) var sets: [UInt64] = [0]
    private var slots = [Int32](repeating: -1, count: 1024)  // indices into sets; -1: empty
    private var last: (set: UInt64, number: UInt16) = (0, 0)

    init() { place(0) }

    /// The set's number, nil when there would be more than `UInt16.max` + 1.
    mutating func number(of set: UInt64) -> UInt16? {
        if set == last.set { return last.number }
        var i = slot(of: set)
        while slots[i] >= 0 {
            if sets[Int(slots[i])] == set {
                last = (set, UInt16(slots[i]))
                return last.number
            }
            i = (i + 1) & (slots.count - 1)
        }
        guard sets.count <= Int(UInt16.max) else { return nil }
        sets.append(set)
        if sets.count * 2 > slots.count {
            slots = [Int32](repeating: -1, count: slots.count * 2)
            for n in sets.indices { place(n) }
        } else {
            slots[i] = Int32(sets.count - 1)
        }
        last = (set, UInt16(sets.count - 1))
        return last.number
    }

    private func slot(of set: UInt64) -> Int { Int(truncatingIfNeeded: (set &* 0x9E37_79B9_7F4A_7C15) >> 40) & (slots.count - 1) }

    private mutating func place(_ n: Int) {
        var i = slot(of: sets[n])
        while slots[i] >= 0 { i = (i + 1) & (slots.count - 1) }
        slots[i] = Int32(n)
    }
}

/// Conditions on values ("this variable equals one of these values", ASCII case-insensitively;
/// or none of them, a list column holding one, a regular expression matching), kept flat in
/// buffers of their own. Tested for every user or device on every core: through arrays, each test
/// retained and released shared buffers, and the cores contended for their counts.
final class ValueTests: @unchecked Sendable {
    private let arena = BufferArena()
    /// Per test: the assignment it belongs to (its bit) and the variable it reads (an index the
    /// caller gives meaning to); its candidates are `firstCandidate[t]..<firstCandidate[t + 1]`.
    private let assignment: BufferView<UInt64>
    private let variable: BufferView<Int>
    private let firstCandidate: BufferView<Int>
    /// Per test: its kind (`Assignment.Condition.Test`, by position in `allCases`).
    private let kind: BufferView<UInt8>
    /// Candidate c's bytes are `pool[candidateStart[c]..<candidateStart[c + 1]]`.
    private let candidateStart: BufferView<Int>
    private let pool: BufferView<UInt8>
    /// Per test, its compiled expressions (`matches` only; empty otherwise).
    private let patterns: [[Pattern]]

    typealias Test = (assignment: Int, variable: Int, condition: Assignment.Condition)
    /// Lists are written in brackets (`[a,b]`, Jamf School's export): taken off before cutting.
    private let bracketedLists: Bool

    init(_ tests: [Test], bracketedLists: Bool = false) {
        self.bracketedLists = bracketedLists
        var firstCandidate = [0], candidateStart = [0], pool: [UInt8] = []
        for test in tests {
            for value in test.condition.values {
                pool += value.utf8
                candidateStart.append(pool.count)
            }
            firstCandidate.append(candidateStart.count - 1)
        }
        assignment = arena.view(tests.map { 1 << UInt64($0.assignment) })
        variable = arena.view(tests.map(\.variable))
        kind = arena.view(tests.map { UInt8(Assignment.Condition.Test.allCases.firstIndex(of: $0.condition.test)!) })
        self.firstCandidate = arena.view(firstCandidate)
        self.candidateStart = arena.view(candidateStart)
        self.pool = arena.view(pool)
        patterns = tests.map(\.condition.patterns)
    }

    var isEmpty: Bool { variable.isEmpty }

    static let equals = UInt8(Assignment.Condition.Test.allCases.firstIndex(of: .equals)!)
    static let not = UInt8(Assignment.Condition.Test.allCases.firstIndex(of: .not)!)
    static let contains = UInt8(Assignment.Condition.Test.allCases.firstIndex(of: .contains)!)

    @inline(__always)
    private func equalsCandidate(_ t: Int, _ value: ByteView) -> Bool {
        for c in firstCandidate[t]..<firstCandidate[t + 1]
        where pool[view: candidateStart[c]..<candidateStart[c + 1]].equals(value, foldingASCIICase: true) {
            return true
        }
        return false
    }

    /// Whether test t holds for a value (nil: missing, which only `not` accepts).
    @inline(__always)
    func holds(_ t: Int, _ value: ByteView?, scratch: Pattern.Scratch) -> Bool {
        let kind = kind[t]
        guard let value else { return kind == Self.not }
        if kind == Self.equals { return equalsCandidate(t, value) }
        if kind == Self.not { return !equalsCandidate(t, value) }
        if kind == Self.contains { return listHolds(t, value) }
        // `matches`: the caller's match data (one per worker: made per value, it was an
        // allocation per device and test).
        return patterns[t].contains { $0.search(value, scratch: scratch) == .match }
    }

    /// `contains`: one of the value's items (cut at `,` `;` CR LF, trimmed of spaces and tabs)
    /// equals a candidate.
    private func listHolds(_ t: Int, _ value: ByteView) -> Bool {
        func separator(_ b: UInt8) -> Bool { b == UInt8(ascii: ",") || b == UInt8(ascii: ";") || b == 0x0A || b == 0x0D }
        var value = value
        if bracketedLists && value.count >= 2 && value[0] == UInt8(ascii: "[") && value[value.count - 1] == UInt8(ascii: "]") {
            value = value[view: 1..<(value.count - 1)]
        }
        var start = 0
        while start <= value.count {
            var end = start
            while end < value.count && !separator(value[end]) { end += 1 }
            var lo = start, hi = end
            while lo < hi && (value[lo] == 0x20 || value[lo] == 0x09) { lo += 1 }
            while hi > lo && (value[hi - 1] == 0x20 || value[hi - 1] == 0x09) { hi -= 1 }
            if hi > lo && equalsCandidate(t, value[view: lo..<hi]) { return true }
            start = end + 1
        }
        return false
    }

    /// `set` without the assignments of the tests that fail; `value(v)` reads variable v (nil:
    /// missing). Tests of assignments already out of `set` are skipped.
    @inline(__always)
    func filter(_ set: UInt64, scratch: Pattern.Scratch, value: (Int) -> ByteView?) -> UInt64 {
        var set = set
        for t in 0..<variable.count where set & assignment[t] != 0 && !holds(t, value(variable[t]), scratch: scratch) { set &= ~assignment[t] }
        return set
    }
}

/// Evaluates the assignments' matches for one row: values compared with the device's bytes
/// (ASCII case-insensitively), groups through the user's membership bits, resolved once per run.
/// What depends only on the user (groups, variables read from the directory) is decided once per
/// user, in the users' order: per row, one lookup of the user's passes and the row's own columns
/// (looked up per row, the user's values were cache misses that cost most of the matching).
struct Matcher: @unchecked Sendable {
    /// The variables read per row (from the inventory).
    let plan: Fleet.SlotPlan
    let fleet: Fleet
    /// Conditions on the row's own values (variable: an index into `plan`).
    let rowTests: ValueTests
    /// Per user, the assignments whose conditions on the user all hold (bit i: assignment i).
    let userPasses: [UInt64]
    /// The assignments with no condition on the user: those a device without a user may match.
    let withoutUser: UInt64

    init(_ assignments: [Assignment], fleet: Fleet, warning: (Problem) -> Void) throws(Problem) {
        var rowVariables: [Variable] = []
        var userVariables: [UserVariable] = []
        var groupNames: [String] = []
        func groupBit(_ name: String) -> Int? { groupNames.firstIndex { $0.lowercased() == name.lowercased() } }
        for assignment in assignments {
            for condition in assignment.conditions {
                switch condition.subject {
                case .variable(let v):
                    if case .deviceAttribute(let column) = v, fleet.inventory.slot(ofColumn: column) == nil {
                        throw Problem(SourceCode.csvUnknownColumn, at: condition.location,
                                      "assignment \"\(assignment.name)\" matches on device.\(column), but \(fleet.inventory.file) has no column \"\(column)\"")
                    }
                    if let u = fleet.directoryVariable(v) {
                        if !userVariables.contains(u) { userVariables.append(u) }
                    } else if !rowVariables.contains(v) {
                        rowVariables.append(v)
                    }
                case .group:
                    guard fleet.users != nil else {
                        throw Problem(JobCode.assignmentMatch, at: condition.location,
                                      "assignment \"\(assignment.name)\" matches on groups, which come from a directory: give --directory")
                    }
                    for name in condition.values where groupBit(name) == nil {
                        guard groupNames.count < 64 else {
                            throw Problem(JobCode.assignmentMatch, at: condition.location, "the assignments name more than 64 groups")
                        }
                        groupNames.append(name)
                    }
                }
            }
        }
        plan = try fleet.plan(for: rowVariables)
        self.fleet = fleet
        // The tests on the row, on the user's variables (variable: an index into the user table),
        // and per assignment the groups it needs the user in (a mask per group condition: any of them).
        var rowTests: [ValueTests.Test] = [], userTests = rowTests
        var groupTests: [(assignment: UInt64, groups: UInt64, negated: Bool)] = []
        var withoutUser: UInt64 = 0
        for (i, assignment) in assignments.enumerated() {
            var onUser = false
            for condition in assignment.conditions {
                switch condition.subject {
                case .variable(let v):
                    if let u = fleet.directoryVariable(v) {
                        userTests.append((i, fleet.users!.columns.column(of: u)!, condition))
                        onUser = true
                    } else {
                        rowTests.append((i, rowVariables.firstIndex(of: v)!, condition))
                    }
                case .group:
                    groupTests.append((1 << UInt64(i), condition.values.reduce(0) { bits, name in bits | 1 << UInt64(groupBit(name)!) },
                                       condition.test == .not))
                    onUser = true
                }
            }
            if !onUser { withoutUser |= 1 << UInt64(i) }
        }
        self.rowTests = ValueTests(rowTests, bracketedLists: fleet.inventory.preset.listsInBrackets)
        self.withoutUser = withoutUser
        guard let users = fleet.users else {
            userPasses = []
            return
        }
        var memberships: [UInt64] = []
        if !groupNames.isEmpty {
            let groups = users.groups
            var warned: Set<String> = []
            for assignment in assignments {
                for condition in assignment.conditions where condition.subject == .group {
                    for name in condition.values where groups?.groups(named: name).isEmpty ?? true && warned.insert(name.lowercased()).inserted {
                        // The nearest group name (canonical DNs are lower case: the suggestion is too).
                        let nearest = groups.flatMap { closestName(to: name.lowercased(), among: $0.groupNames) }
                        warning(Problem(SourceCode.groupUnknown, at: condition.location,
                                        "assignment \"\(assignment.name)\": the directory (\(users.source)) holds no group \"\(name)\"; no device matches through it"
                                        + (nearest.map { "; did you mean \"\($0)\"?" } ?? "")))
                    }
                }
            }
            memberships = groups?.memberships(of: groupNames, userCount: users.slots) ?? []
        }
        // The users in one range per core. The values tested are fetched into the cache 16 users
        // ahead: each user's value is a line of its own in the table's pool (read without it, the
        // first byte of each was a cache miss: two thirds of the pass, perf).
        let userTested = ValueTests(userTests)
        let testedVariables = Array(Set(userTests.map(\.variable)))
        let all: UInt64 = assignments.count == 64 ? .max : (1 << UInt64(assignments.count)) - 1
        // By id (`UserTable.slots`): the ids of users gone since last night (a night that read the
        // directory's changes only) are tested too, never looked up.
        userPasses = [UInt64](unsafeUninitializedCapacity: users.slots) { out, count in
            forEachRange(users.slots, parallelFrom: 65_536) { _, range in
                let patternScratch = Pattern.Scratch()
                for u in range {
                    if u + 16 < range.upperBound { for v in testedVariables { users.prefetchValue(user: u + 16, index: v) } }
                    var passes = all
                    let groups = memberships.isEmpty ? 0 : memberships[u]
                    for test in groupTests where (groups & test.groups == 0) != test.negated { passes &= ~test.assignment }
                    out[u] = userTested.filter(passes, scratch: patternScratch) { users.value(user: u, index: $0) }
                }
            }
            count = users.slots
        }
    }

    /// Starts reading the passes of a row's user into the cache: rows are matched in inventory
    /// order, their users in no order, and each user's passes were a cache miss.
    @inline(__always)
    func prefetchPasses(ofRow row: Int) {
        guard let user = fleet.user(ofRow: row) else { return }
        userPasses.prefetch(at: user)
    }

    /// The set of assignments a row matches. `values`: room for the row's variables, reused.
    /// Row by row: down one column at a time (each test a pass over a block of rows), it did
    /// fewer instructions and took longer, waiting for each row's bytes once per test.
    @inline(__always)
    func set(ofRow row: Int, values: WorkerSlots<ByteView?>, patternScratch: Pattern.Scratch) -> UInt64 {
        let set = fleet.user(ofRow: row).map { userPasses[$0] } ?? withoutUser
        guard set != 0, !rowTests.isEmpty else { return set }
        fleet.forEachValue(row: row, plan: plan) { slot, bytes in values[slot] = bytes }
        return rowTests.filter(set, scratch: patternScratch) { values[$0] }
    }
}
