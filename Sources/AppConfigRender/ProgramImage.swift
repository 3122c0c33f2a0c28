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
    let instructions: UnsafeMutableBufferPointer<UInt64>
    /// Every pre-encoded byte string: texts, constants (XML and binary), key lines, constant
    /// strings, value set members.
    let pool: UnsafeMutableBufferPointer<UInt8>
    let texts: UnsafeMutableBufferPointer<PoolRange>
    let constantXML: UnsafeMutableBufferPointer<PoolRange>
    let constantBinary: UnsafeMutableBufferPointer<PoolRange>
    let constantClass: UnsafeMutableBufferPointer<Int32>
    let keyXML: UnsafeMutableBufferPointer<PoolRange>
    let keyNameConstant: UnsafeMutableBufferPointer<Int32>
    let keyPolicy: UnsafeMutableBufferPointer<MissingValuePolicy>
    let keyStart: UnsafeMutableBufferPointer<Int32>
    let keyEnd: UnsafeMutableBufferPointer<Int32>
    /// Item addresses of all arrays, back to back; `arrayItems[arrayStart[a] ..< + count]`.
    let arrayItems: UnsafeMutableBufferPointer<Int32>
    let arrayStart: UnsafeMutableBufferPointer<Int32>
    /// Constant strings by content, filed by dedup class: a resolved string equal to one shares its
    /// class (plistlib stores equal strings once). `stringClassBytes[class]` is the string.
    let stringClasses: ByteKeyTable
    let stringClassBytes: UnsafeMutableBufferPointer<PoolRange>
    /// Value set v's members are `valueSetMembers[valueSetStart[v] ..< valueSetStart[v + 1]]`,
    /// each with its FNV-1a hash: membership compares hashes first, bytes only on a hash match.
    let valueSetStart: UnsafeMutableBufferPointer<Int32>
    let valueSetMembers: UnsafeMutableBufferPointer<PoolRange>
    let valueSetHashes: UnsafeMutableBufferPointer<UInt64>
    /// The patterns, unretained: the program holds them for the image's lifetime.
    let patterns: UnsafeMutableBufferPointer<Unmanaged<Pattern>>

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
        instructions = arena.table(program.instructions.map(\.rawValue))
        texts = arena.table(program.texts.map { add($0) })
        constantXML = arena.table(program.constants.map { add($0.xml) })
        constantBinary = arena.table(program.constants.map { add($0.binary) })
        constantClass = arena.table(program.constants.map { Int32($0.dedupClass) })
        keyXML = arena.table(program.keys.map { add($0.xmlLine) })
        keyNameConstant = arena.table(program.keys.map { Int32($0.nameConstant) })
        keyPolicy = arena.table(program.keys.map(\.policy))
        keyStart = arena.table(program.keys.map { Int32($0.startAddress) })
        keyEnd = arena.table(program.keys.map { Int32($0.endAddress) })
        var starts: [Int32] = []
        var items: [Int32] = []
        for a in program.arrays {
            starts.append(Int32(items.count))
            items += a.map(Int32.init)
        }
        arrayItems = arena.table(items)
        arrayStart = arena.table(starts)

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
        valueSetStart = arena.table(setStart)
        valueSetMembers = arena.table(members)
        valueSetHashes = arena.table(memberHashes)
        patterns = arena.table(program.patterns.map { Unmanaged.passUnretained($0) })
        let pool = arena.table(poolBytes)
        self.pool = pool

        stringClassBytes = arena.table(classBytes)
        var table = ByteKeyTable(capacity: program.constantClassCount)
        for (cls, range) in classBytes.enumerated() where range.count >= 0 {
            _ = table.insert(Self.bytes(range, in: pool), id: Int32(cls)) { Self.bytes(classBytes[Int($0)], in: pool) }
        }
        stringClasses = table
    }

    /// The dedup class of the constant string equal to these bytes (whose `ByteKeyTable.hash` is `hash`), or -1.
    @inline(__always)
    func constantStringClass(_ bytes: ByteView, hash: UInt64) -> Int {
        stringClasses.find(bytes, hash: hash) { self.bytes(stringClassBytes[Int($0)]) }.map(Int.init) ?? -1
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
    private static func bytes(_ r: PoolRange, in pool: UnsafeMutableBufferPointer<UInt8>) -> ByteView {
        ByteView(UnsafeBufferPointer(start: pool.baseAddress! + Int(r.start), count: Int(r.count)))
    }
}
