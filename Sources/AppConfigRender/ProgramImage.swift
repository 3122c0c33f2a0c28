import AppConfigCompiler
import AppConfigPattern
import AppConfigSpec

/// A byte range in `ProgramImage.pool`; `count == -1` means "none" (a constant XML cannot carry).
struct PoolRange {
    var start: Int32
    var count: Int32
}

/// A program laid out flat for the hot loop: every table a contiguous buffer of plain values, so a
/// render touches no Swift array of arrays (no retain/release, no nested bounds checks). Built once,
/// read-only afterwards, shared by every render thread.
public final class ProgramImage: @unchecked Sendable {
    public let program: Program
    let instructions: UnsafeMutableBufferPointer<UInt64>
    /// Every pre-encoded byte string: texts, constants (XML and binary), key lines, value sets.
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
    /// Constant strings by content (open addressing on FNV-1a): the dedup class of a resolved
    /// string equal to one. Empty slots have class -1.
    let stringClassHash: UnsafeMutableBufferPointer<UInt64>
    let stringClassId: UnsafeMutableBufferPointer<Int32>
    let stringClassBytes: UnsafeMutableBufferPointer<PoolRange>
    let stringClassMask: Int
    /// The patterns, unretained: the program holds them for the image's lifetime.
    let patterns: UnsafeMutableBufferPointer<Unmanaged<Pattern>>

    public var slotCount: Int { program.slots.count }

    public init(_ program: Program) {
        self.program = program
        var pool: [UInt8] = []
        func add(_ bytes: [UInt8]?) -> PoolRange {
            guard let bytes else { return PoolRange(start: 0, count: -1) }
            defer { pool += bytes }
            return PoolRange(start: Int32(pool.count), count: Int32(bytes.count))
        }
        func buffer<T>(_ values: [T]) -> UnsafeMutableBufferPointer<T> {
            let b = UnsafeMutableBufferPointer<T>.allocate(capacity: max(values.count, 1))
            _ = b.initialize(from: values)
            return b
        }
        instructions = buffer(program.instructions.map(\.rawValue))
        texts = buffer(program.texts.map { add($0) })
        constantXML = buffer(program.constants.map { add($0.xml) })
        constantBinary = buffer(program.constants.map { add($0.binary) })
        constantClass = buffer(program.constants.map { Int32($0.dedupClass) })
        keyXML = buffer(program.keys.map { add($0.xmlLine) })
        keyNameConstant = buffer(program.keys.map { Int32($0.nameConstant) })
        keyPolicy = buffer(program.keys.map(\.policy))
        keyStart = buffer(program.keys.map { Int32($0.startAddress) })
        keyEnd = buffer(program.keys.map { Int32($0.endAddress) })
        var starts: [Int32] = []
        var items: [Int32] = []
        for a in program.arrays {
            starts.append(Int32(items.count))
            items += a.map(Int32.init)
        }
        arrayItems = buffer(items)
        arrayStart = buffer(starts)

        var size = 8
        while size < program.constants.count * 2 { size <<= 1 }
        var hashes = [UInt64](repeating: 0, count: size)
        var ids = [Int32](repeating: -1, count: size)
        var ranges = [PoolRange](repeating: PoolRange(start: 0, count: 0), count: size)
        var seenClasses = Set<Int>()
        for c in program.constants {
            guard case .string(let text) = c.value, seenClasses.insert(c.dedupClass).inserted else { continue }
            let bytes = Array(text.utf8)
            let hash = bytes.withUnsafeBufferPointer { fnv1a($0) }
            var i = Int(truncatingIfNeeded: hash) & (size - 1)
            while ids[i] >= 0 { i = (i + 1) & (size - 1) }
            hashes[i] = hash
            ids[i] = Int32(c.dedupClass)
            ranges[i] = add(bytes)
        }
        stringClassHash = buffer(hashes)
        stringClassId = buffer(ids)
        stringClassBytes = buffer(ranges)
        stringClassMask = size - 1
        patterns = buffer(program.patterns.map { Unmanaged.passUnretained($0) })
        self.pool = buffer(pool)
    }

    /// The dedup class of the constant string equal to these bytes, or -1.
    @inline(__always)
    func constantStringClass(_ bytes: UnsafeBufferPointer<UInt8>, hash: UInt64) -> Int {
        var i = Int(truncatingIfNeeded: hash) & stringClassMask
        while stringClassId[i] >= 0 {
            if stringClassHash[i] == hash && bytesEqual(self.bytes(stringClassBytes[i]), bytes) { return Int(stringClassId[i]) }
            i = (i + 1) & stringClassMask
        }
        return -1
    }

    deinit {
        instructions.deallocate(); pool.deallocate(); texts.deallocate()
        constantXML.deallocate(); constantBinary.deallocate(); constantClass.deallocate()
        keyXML.deallocate(); keyNameConstant.deallocate(); keyPolicy.deallocate()
        keyStart.deallocate(); keyEnd.deallocate(); arrayItems.deallocate(); arrayStart.deallocate()
        stringClassHash.deallocate(); stringClassId.deallocate(); stringClassBytes.deallocate(); patterns.deallocate()
    }

    @inline(__always)
    func bytes(_ r: PoolRange) -> UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(start: pool.baseAddress! + Int(r.start), count: Int(r.count))
    }
}
