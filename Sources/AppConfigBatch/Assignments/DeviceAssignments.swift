import AppConfigCore
import AppConfigOutput
import AppConfigPattern
import AppConfigCompiler
import AppConfigSources
import AppConfigSpec
import CByteScan
import Dispatch

/// Which assignments match each device, and one program per distinct set of them (a variant),
/// compiled once on first sight. The render loop only picks a device's variant: its program
/// image and slot plan are ready, so rendering stays as it is without assignments.
package struct DeviceAssignments: Sendable {
    /// The assignments' names, in file order (bit i of a set is assignment i).
    package let names: [String]
    /// Per variant: the set of assignments (bits) and its program. Variant 0 is the set of none,
    /// the base program, whether a device has it or not.
    package let sets: [UInt64]
    package let programs: [Program]
    /// Per inventory row, its variant.
    let variantOfRow: [UInt16]
    /// The rows the values file's `exclude` leaves out, in row order: not rendered, not failed.
    package private(set) var excludedRows: [Int32] = []
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
    /// critical path (rows in key order are scattered).
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
    package func applied(toRow row: Int) -> [String] {
        let set = sets[variant(ofRow: row)]
        return Self.members(of: set, among: names.count).map { names[$0] }
    }

    /// Matches every device of the fleet against the configuration's assignments, then compiles
    /// each distinct set. A match on an inventory column the inventory lacks, or on groups without
    /// a directory, is an error (nothing could match); a group the directory does not hold is a
    /// warning. Throws a `Problem` for the sources, a `ProblemList` for a variant that does not compile.
    package static func resolve(_ configuration: Configuration, fleet: Fleet, warning: (Problem) -> Void) throws -> DeviceAssignments {
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
        setOfRow.withWorkerSlots { sets in
            Parallelism.concurrentPerform(iterations: (fleet.deviceCount + chunk - 1) / chunk) { c in
                var scratch = [ByteView?](repeating: nil, count: matcher.plan.variables.count)
                let patternScratch = Pattern.Scratch()  // one match data per worker, for `matches`
                scratch.withWorkerSlots { scratch in
                    let rows = (c * chunk)..<min((c + 1) * chunk, fleet.deviceCount)
                    for row in rows {
                        if row + 16 < rows.upperBound { matcher.prefetchPasses(ofRow: row + 16) }
                        sets[row] = matcher.set(ofRow: row, values: scratch, patternScratch: patternScratch)
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
        fileprivate let bytes: ByteView
        fileprivate let ranges: BufferView<Range<Int>>

        @inline(__always)
        subscript(variant: Int) -> ByteView { bytes[view: ranges[variant]] }

        /// The longest variant's fields.
        var maxCount: Int { ranges.lazy.map(\.count).max() ?? 0 }
    }

    func withIndexFields<R, E: Error>(_ body: (IndexFields) throws(E) -> R) throws(E) -> R {
        try indexFieldBytes.withView { bytes throws(E) in
            try indexFieldRanges.withView { ranges throws(E) in try body(IndexFields(bytes: bytes, ranges: ranges)) }
        }
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
