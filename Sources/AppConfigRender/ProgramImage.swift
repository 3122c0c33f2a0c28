import AppConfigCore
import AppConfigCompiler
import AppConfigPattern

/// A byte range in `ProgramImage.pool`; `count == -1` means "none" (a constant XML cannot carry).
struct PoolRange {
    var start: Int32
    var count: Int32

    static let none = PoolRange(start: 0, count: -1)
}

/// A program laid out flat for the hot loop: every table a contiguous buffer of plain values owned
/// by one arena, so a render touches no Swift array of arrays (no retain/release, no nested bounds
/// checks). Built once, read-only afterwards, shared by every render thread.
public final class ProgramImage: @unchecked Sendable {
    public let program: Program
    private let arena = BufferArena()
    let instructions: BufferView<UInt64>
    /// Each instruction's opcode, decoded once: `Instruction.opcode` is a call (its
    /// `init(rawValue:)`) per instruction, which the interpreters' loops paid on every device.
    let opcodes: BufferView<Instruction.Opcode>
    /// Every pre-encoded byte string: texts, constants (XML and binary), key lines, constant
    /// strings, value set members.
    let pool: BufferView<UInt8>
    let texts: BufferView<PoolRange>
    let constantXML: BufferView<PoolRange>
    let constantBinary: BufferView<PoolRange>
    let constantClass: BufferView<Int32>
    let keyXML: BufferView<PoolRange>
    let keyNameConstant: BufferView<Int32>
    let keyPolicy: BufferView<MissingValuePolicy>
    let keyStart: BufferView<Int32>
    let keyEnd: BufferView<Int32>
    /// For a key whose value is constant (no string to resolve, nothing to check: always present),
    /// the last key of the run of such keys it starts, one after another in the code; -1 for any
    /// other key. The VM takes a run at once: the demo's eight constant keys were 31 of its 78
    /// instructions, each dispatched per device for nothing.
    let constantRunLast: BufferView<Int32>
    /// Item addresses of all arrays, back to back; `arrayItems[arrayStart[a] ..< + count]`.
    let arrayItems: BufferView<Int32>
    let arrayStart: BufferView<Int32>
    /// Constant strings by content, filed by dedup class: a resolved string equal to one shares its
    /// class (plistlib stores equal strings once). `stringClassBytes[class]` is the string.
    let stringClasses: ByteKeyTable
    let stringClassBytes: BufferView<PoolRange>
    /// A bit per `hash % 4096` of the constant strings: a dynamic string whose bit is clear equals
    /// none of them, and `stringClasses` is not looked in (a call and a probe per string, for
    /// values that almost never equal a constant).
    let constantStringHashBits: BufferView<UInt64>
    /// A bit per length (4095 for any longer) of the constant strings: a dynamic string whose
    /// length has no bit equals none of them, and is not even hashed.
    let constantStringLengthBits: BufferView<UInt64>
    /// Value set v's members are `valueSetMembers[valueSetStart[v] ..< valueSetStart[v + 1]]`,
    /// each with its FNV-1a hash: membership compares hashes first, bytes only on a hash match.
    let valueSetStart: BufferView<Int32>
    let valueSetMembers: BufferView<PoolRange>
    let valueSetHashes: BufferView<UInt64>
    /// The patterns, unretained: the program holds them for the image's lifetime.
    let patterns: BufferView<Unmanaged<Pattern>>

    /// Stored: each render checks it, and reading it through the program cost a call per device.
    public let slotCount: Int

    public init(_ program: Program) {
        self.program = program
        slotCount = program.slots.count
        var poolBytes: [UInt8] = []
        func add(_ bytes: [UInt8]?) -> PoolRange {
            guard let bytes else { return .none }
            defer { poolBytes += bytes }
            return PoolRange(start: Int32(poolBytes.count), count: Int32(bytes.count))
        }
        instructions = arena.view(program.instructions.map(\.rawValue))
        opcodes = arena.view(program.instructions.map(\.opcode))
        texts = arena.view(program.texts.map { add($0) })
        constantXML = arena.view(program.constants.map { add($0.xml) })
        constantBinary = arena.view(program.constants.map { add($0.binary) })
        constantClass = arena.view(program.constants.map { Int32($0.dedupClass) })
        keyXML = arena.view(program.keys.map { add($0.xmlLine) })
        keyNameConstant = arena.view(program.keys.map { Int32($0.nameConstant) })
        keyPolicy = arena.view(program.keys.map(\.policy))
        keyStart = arena.view(program.keys.map { Int32($0.startAddress) })
        keyEnd = arena.view(program.keys.map { Int32($0.endAddress) })
        constantRunLast = arena.view(Self.constantRuns(program))
        var starts: [Int32] = []
        var items: [Int32] = []
        for a in program.arrays {
            starts.append(Int32(items.count))
            items += a.map(Int32.init)
        }
        arrayItems = arena.view(items)
        arrayStart = arena.view(starts)

        var classBytes = [PoolRange](repeating: .none, count: program.constantClassCount)
        for c in program.constants {
            guard case .string(let text) = c.value, classBytes[c.dedupClass].count < 0 else { continue }
            classBytes[c.dedupClass] = add(Array(text.utf8))
        }

        var setStart: [Int32] = [0]
        var members: [PoolRange] = []
        var memberHashes: [UInt64] = []
        for set in program.valueSets {
            for v in set.values {
                members.append(add(v))
                memberHashes.append(v.withView { ByteKeyTable.hash($0, foldingASCIICase: false) })
            }
            setStart.append(Int32(members.count))
        }
        valueSetStart = arena.view(setStart)
        valueSetMembers = arena.view(members)
        valueSetHashes = arena.view(memberHashes)
        patterns = arena.view(program.patterns.map { Unmanaged.passUnretained($0) })
        let pool = arena.view(poolBytes)
        self.pool = pool

        stringClassBytes = arena.view(classBytes)
        var table = ByteKeyTable(capacity: program.constantClassCount)
        var hashBits = [UInt64](repeating: 0, count: 4096 / 64), lengthBits = hashBits
        for (cls, range) in classBytes.enumerated() where range.count >= 0 {
            let bytes = Self.bytes(range, in: pool)
            let hash = table.hash(bytes)
            _ = table.insert(bytes, hash: hash, id: Int32(cls)) { Self.bytes(classBytes[Int($0)], in: pool) }
            let bit = Int(truncatingIfNeeded: hash & 4095)
            hashBits[bit >> 6] |= 1 << UInt64(bit & 63)
            let length = min(bytes.count, 4095)
            lengthBits[length >> 6] |= 1 << UInt64(length & 63)
        }
        stringClasses = table
        constantStringHashBits = arena.view(hashBits)
        constantStringLengthBits = arena.view(lengthBits)
    }

    /// `constantRunLast`: from the last key back, each constant key's run ends where the next
    /// key's does when that key is constant and follows it at once, else with itself.
    private static func constantRuns(_ program: Program) -> [Int32] {
        let keys = program.keys
        var last = [Int32](repeating: -1, count: keys.count)
        for k in keys.indices.reversed() {
            let body = program.instructions[(keys[k].startAddress + 1)..<keys[k].endAddress]
            guard body.allSatisfy({ [.constant, .arrayBegin, .arrayEnd].contains($0.opcode) }) else { continue }
            let next = k + 1
            last[k] = next < keys.count && last[next] >= 0 && keys[next].startAddress == keys[k].endAddress + 1 ? last[next] : Int32(k)
        }
        return last
    }

    /// Whether a constant string may have `length` bytes (false: none has).
    @inline(__always)
    func mayBeConstantString(length: Int) -> Bool {
        let bit = min(length, 4095)
        return constantStringLengthBits[bit >> 6] & (1 << UInt64(bit & 63)) != 0
    }

    /// The dedup class of the constant string equal to these bytes (whose `ByteKeyTable.hash` is `hash`), or -1.
    @inline(__always)
    func constantStringClass(_ bytes: ByteView, hash: UInt64) -> Int {
        let bit = Int(truncatingIfNeeded: hash & 4095)
        guard constantStringHashBits[bit >> 6] & (1 << UInt64(bit & 63)) != 0 else { return -1 }
        return stringClasses.find(bytes, hash: hash) { self.bytes(stringClassBytes[Int($0)]) }.map(Int.init) ?? -1
    }

    /// Whether value set `v` holds these bytes (whose `ByteKeyTable.hash` is `hash`).
    @inline(__always)
    func valueSet(_ v: Int, contains bytes: ByteView, hash: UInt64) -> Bool {
        for m in Int(valueSetStart[v])..<Int(valueSetStart[v + 1]) where valueSetHashes[m] == hash {
            if self.bytes(valueSetMembers[m]).equals(bytes) { return true }
        }
        return false
    }

    @inline(__always)
    func bytes(_ r: PoolRange) -> ByteView { Self.bytes(r, in: pool) }

    @inline(__always)
    private static func bytes(_ r: PoolRange, in pool: ByteView) -> ByteView {
        pool[view: Int(r.start)..<Int(r.start + r.count)]
    }
}
