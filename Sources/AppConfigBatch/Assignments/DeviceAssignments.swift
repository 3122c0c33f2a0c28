import AppConfigBytes
import AppConfigPattern
import AppConfigCompiler
import AppConfigSources
import AppConfigSpec
import CByteScan
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
    /// The rows the values file's `exclude` leaves out, in row order: not rendered, not failed.
    public private(set) var excludedRows: [Int32] = []
    /// Per variant, what ends its devices' lines of `index.jsonl`: `,"assignments":[...]` (nothing
    /// without assignments), made once, all in one buffer (`withIndexFields`).
    private let indexFieldBytes: [UInt8]
    private let indexFieldRanges: [Range<Int>]

    /// The variant of a job without assignments: every row renders the base program.
    init(base: Program) {
        self.init(names: [], sets: [0], programs: [base], variantOfRow: [])
    }

    @inline(__always)
    func variant(ofRow row: Int) -> Int { variantOfRow.isEmpty ? 0 : Int(variantOfRow[row]) }

    /// The variants of `rows`, in their order (empty without assignments). Gathered once in a tight
    /// loop on every core: looked up in the render loop, each row's variant was a cache miss on its
    /// critical path (rows in key order are scattered: 0.1 s of 1M devices, perf).
    func variants(ofRows rows: [Int32]) -> [UInt16] {
        guard !variantOfRow.isEmpty else { return [] }
        return [UInt16](unsafeUninitializedCapacity: rows.count) { out, count in
            forEachRange(rows.count, parallelFrom: 65_536) { _, range in
                for i in range { out[i] = variantOfRow[Int(rows[i])] }
            }
            count = rows.count
        }
    }

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
        let exclusions = configuration.exclusions
        guard !assignments.isEmpty || !exclusions.isEmpty else { return DeviceAssignments(base: configuration.base) }
        // The exclusions are matched as assignments past the real ones: a device with any of
        // their bits is left out.
        let matcher = try Matcher(assignments + exclusions, fleet: fleet, warning: warning)
        let realBits: UInt64 = assignments.count == 64 ? .max : (1 << UInt64(assignments.count)) - 1
        // Each row's set, rows split across the cores; then each distinct set numbered in row order.
        var setOfRow = [UInt64](repeating: 0, count: fleet.deviceCount)
        let chunk = 65_536
        setOfRow.withUnsafeMutableBufferPointer { buffer in
            let sets = WorkerSlots(buffer)
            DispatchQueue.concurrentPerform(iterations: (fleet.deviceCount + chunk - 1) / chunk) { c in
                var scratch = [UnsafeBufferPointer<UInt8>?](repeating: nil, count: matcher.plan.variables.count)
                let patternScratch = Pattern.Scratch()  // one match data per worker, for `matches`
                scratch.withUnsafeMutableBufferPointer { scratch in
                    let rows = (c * chunk)..<min((c + 1) * chunk, fleet.deviceCount)
                    for row in rows {
                        if row + 16 < rows.upperBound { matcher.prefetchPasses(ofRow: row + 16) }
                        sets.buffer[row] = matcher.set(ofRow: row, values: scratch, patternScratch: patternScratch)
                    }
                }
            }
        }
        var variants = VariantNumbers()
        var variantOfRow = [UInt16](repeating: 0, count: fleet.deviceCount)
        var excluded: [Int32] = []
        var matched = [Int](repeating: 0, count: assignments.count + exclusions.count)
        for (row, full) in setOfRow.enumerated() {
            var bits = full
            while bits != 0 { matched[bits.trailingZeroBitCount] += 1; bits &= bits - 1 }
            if full & ~realBits != 0 { excluded.append(Int32(row)) }
            let set = full & realBits
            guard let v = variants.number(of: set) else {
                throw Problem(JobCode.assignmentMatch, "the devices match more than \(UInt16.max) distinct sets of assignments")
            }
            variantOfRow[row] = v
        }
        for (i, a) in (assignments + exclusions).enumerated() where matched[i] == 0 {
            warning(NoMatch.problem(a, isExclusion: i >= assignments.count, fleet: fleet))
        }
        let sets = variants.sets
        var programs = [configuration.base]
        for set in sets.dropFirst() {
            programs.append(try configuration.program(for: members(of: set, among: assignments.count)))
        }
        var resolved = DeviceAssignments(names: assignments.map(\.name), sets: sets, programs: programs, variantOfRow: variantOfRow)
        resolved.excludedRows = excluded
        return resolved
    }

    private init(names: [String], sets: [UInt64], programs: [Program], variantOfRow: [UInt16]) {
        self.names = names
        self.sets = sets
        self.programs = programs
        self.variantOfRow = variantOfRow
        var bytes: [UInt8] = []
        var ranges: [Range<Int>] = []
        for set in sets {
            let start = bytes.count
            if !names.isEmpty {
                JSONText.append(#","assignments":["#, to: &bytes)
                for (n, i) in Self.members(of: set, among: names.count).enumerated() {
                    if n > 0 { bytes.append(UInt8(ascii: ",")) }
                    JSONText.appendString(names[i], to: &bytes)
                }
                bytes.append(UInt8(ascii: "]"))
            }
            ranges.append(start..<bytes.count)
        }
        indexFieldBytes = bytes
        indexFieldRanges = ranges
    }

    /// Each variant's `index.jsonl` fields, as views that hold no reference: every device's line
    /// takes them, on every core (an array per variant was retained and released per device by
    /// both cores, which contended for its count).
    struct IndexFields: @unchecked Sendable {  // read-only views, valid in `withIndexFields`
        fileprivate let bytes: UnsafeBufferPointer<UInt8>
        fileprivate let ranges: UnsafeBufferPointer<Range<Int>>

        @inline(__always)
        subscript(variant: Int) -> UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(rebasing: bytes[ranges[variant]]) }

        /// The longest variant's fields.
        var maxCount: Int { ranges.lazy.map(\.count).max() ?? 0 }
    }

    func withIndexFields<R, E: Error>(_ body: (IndexFields) throws(E) -> R) throws(E) -> R {
        let result: Result<R, E> = indexFieldBytes.withUnsafeBufferPointer { bytes in
            indexFieldRanges.withUnsafeBufferPointer { ranges in
                do throws(E) { return .success(try body(IndexFields(bytes: bytes, ranges: ranges))) } catch { return .failure(error) }
            }
        }
        return try result.get()
    }

    /// Devices per assignment, from the devices' variants (`BatchResult.variants`: read in order,
    /// not looked up by row, which in key order was a cache miss per device).
    func counts(variants: [UInt16]) -> [String: Int] {
        var perVariant = [Int](repeating: 0, count: sets.count)
        for v in variants { perVariant[Int(v)] += 1 }
        var counts = Dictionary(uniqueKeysWithValues: names.map { ($0, 0) })
        for (v, n) in perVariant.enumerated() where n > 0 {
            for i in Self.members(of: sets[v], among: names.count) { counts[names[i], default: 0] += n }
        }
        return counts
    }
}

/// Numbers sets of assignments in the order they are first met (the empty set is 0): open
/// addressing on a multiplicative hash, the last set remembered. A `Dictionary` per row (SipHash)
/// was most of the numbering's 70 ms at 1M devices, on one core.
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
/// retained and released shared buffers, and the cores contending for their counts made the
/// users' pass 0.15 s at 900k users.
final class ValueTests: @unchecked Sendable {
    private let arena = BufferArena()
    /// Per test: the assignment it belongs to (its bit) and the variable it reads (an index the
    /// caller gives meaning to); its candidates are `firstCandidate[t]..<firstCandidate[t + 1]`.
    private let assignment: UnsafeMutableBufferPointer<UInt64>
    private let variable: UnsafeMutableBufferPointer<Int>
    private let firstCandidate: UnsafeMutableBufferPointer<Int>
    /// Per test: its kind (`Assignment.Condition.Test`, by position in `allCases`).
    private let kind: UnsafeMutableBufferPointer<UInt8>
    /// Candidate c's bytes are `pool[candidateStart[c]..<candidateStart[c + 1]]`.
    private let candidateStart: UnsafeMutableBufferPointer<Int>
    private let pool: UnsafeMutableBufferPointer<UInt8>
    /// Per test, its compiled expressions (`matches` only; empty otherwise).
    private let patterns: [[Pattern]]

    typealias Test = (assignment: Int, variable: Int, condition: Assignment.Condition)

    init(_ tests: [Test]) {
        var firstCandidate = [0], candidateStart = [0], pool: [UInt8] = []
        for test in tests {
            for value in test.condition.values {
                pool += value.utf8
                candidateStart.append(pool.count)
            }
            firstCandidate.append(candidateStart.count - 1)
        }
        assignment = arena.table(tests.map { 1 << UInt64($0.assignment) })
        variable = arena.table(tests.map(\.variable))
        kind = arena.table(tests.map { UInt8(Assignment.Condition.Test.allCases.firstIndex(of: $0.condition.test)!) })
        self.firstCandidate = arena.table(firstCandidate)
        self.candidateStart = arena.table(candidateStart)
        self.pool = arena.table(pool)
        patterns = tests.map(\.condition.patterns)
    }

    var isEmpty: Bool { variable.isEmpty }

    static let equals = UInt8(Assignment.Condition.Test.allCases.firstIndex(of: .equals)!)
    static let not = UInt8(Assignment.Condition.Test.allCases.firstIndex(of: .not)!)
    static let contains = UInt8(Assignment.Condition.Test.allCases.firstIndex(of: .contains)!)

    @inline(__always)
    private func equalsCandidate(_ t: Int, _ value: UnsafeBufferPointer<UInt8>) -> Bool {
        for c in firstCandidate[t]..<firstCandidate[t + 1]
        where bytesEqual(UnsafeBufferPointer(rebasing: pool[candidateStart[c]..<candidateStart[c + 1]]), value, foldingASCIICase: true) {
            return true
        }
        return false
    }

    /// Whether test t holds for a value (nil: missing, which only `not` accepts).
    @inline(__always)
    func holds(_ t: Int, _ value: UnsafeBufferPointer<UInt8>?, scratch: Pattern.Scratch) -> Bool {
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
    private func listHolds(_ t: Int, _ value: UnsafeBufferPointer<UInt8>) -> Bool {
        func separator(_ b: UInt8) -> Bool { b == UInt8(ascii: ",") || b == UInt8(ascii: ";") || b == 0x0A || b == 0x0D }
        var start = 0
        while start <= value.count {
            var end = start
            while end < value.count && !separator(value[end]) { end += 1 }
            var lo = start, hi = end
            while lo < hi && (value[lo] == 0x20 || value[lo] == 0x09) { lo += 1 }
            while hi > lo && (value[hi - 1] == 0x20 || value[hi - 1] == 0x09) { hi -= 1 }
            if hi > lo && equalsCandidate(t, UnsafeBufferPointer(rebasing: value[lo..<hi])) { return true }
            start = end + 1
        }
        return false
    }

    /// `set` without the assignments of the tests that fail; `value(v)` reads variable v (nil:
    /// missing). Tests of assignments already out of `set` are skipped.
    @inline(__always)
    func filter(_ set: UInt64, scratch: Pattern.Scratch, value: (Int) -> UnsafeBufferPointer<UInt8>?) -> UInt64 {
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
private struct Matcher: @unchecked Sendable {
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
                        userTests.append((i, UserTable.variableIndex[u]!, condition))
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
        self.rowTests = ValueTests(rowTests)
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
                        warning(Problem(SourceCode.groupUnknown, at: condition.location,
                                        "assignment \"\(assignment.name)\": the directory (\(users.source)) holds no group \"\(name)\"; no device matches through it"))
                    }
                }
            }
            memberships = groups?.memberships(of: groupNames, userCount: users.count) ?? []
        }
        // The users in one range per core. The values tested are fetched into the cache 16 users
        // ahead: each user's value is a line of its own in the table's pool (read without it, the
        // first byte of each was a cache miss: two thirds of the pass, perf).
        let userTested = ValueTests(userTests)
        let testedVariables = Array(Set(userTests.map(\.variable)))
        let all: UInt64 = assignments.count == 64 ? .max : (1 << UInt64(assignments.count)) - 1
        userPasses = [UInt64](unsafeUninitializedCapacity: users.count) { out, count in
            forEachRange(users.count, parallelFrom: 65_536) { _, range in
                let patternScratch = Pattern.Scratch()
                for u in range {
                    if u + 16 < range.upperBound { for v in testedVariables { users.prefetchValue(user: u + 16, index: v) } }
                    var passes = all
                    let groups = memberships.isEmpty ? 0 : memberships[u]
                    for test in groupTests where (groups & test.groups == 0) != test.negated { passes &= ~test.assignment }
                    out[u] = userTested.filter(passes, scratch: patternScratch) { users.value(user: u, index: $0) }
                }
            }
            count = users.count
        }
    }

    /// Starts reading the passes of a row's user into the cache: rows are matched in inventory
    /// order, their users in no order, and each user's passes were a cache miss (perf: the rows'
    /// matching 481 -> 409 samples in four runs).
    @inline(__always)
    func prefetchPasses(ofRow row: Int) {
        guard let user = fleet.user(ofRow: row) else { return }
        userPasses.withUnsafeBufferPointer { appconfig_prefetch($0.baseAddress! + user) }
    }

    /// The set of assignments a row matches. `values`: room for the row's variables, reused.
    /// Row by row: down one column at a time (each test a pass over a block of rows), it did
    /// half the instructions and took twice as long at 1M devices, waiting for each row's
    /// bytes once per test instead of once.
    @inline(__always)
    func set(ofRow row: Int, values: UnsafeMutableBufferPointer<UnsafeBufferPointer<UInt8>?>, patternScratch: Pattern.Scratch) -> UInt64 {
        let set = fleet.user(ofRow: row).map { userPasses[$0] } ?? withoutUser
        guard set != 0, !rowTests.isEmpty else { return set }
        fleet.forEachValue(row: row, plan: plan) { slot, bytes in values[slot] = bytes }
        return rowTests.filter(set, scratch: patternScratch) { values[$0] }
    }
}
