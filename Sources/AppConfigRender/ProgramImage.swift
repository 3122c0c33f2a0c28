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
        self.pool = buffer(pool)
    }

    deinit {
        instructions.deallocate(); pool.deallocate(); texts.deallocate()
        constantXML.deallocate(); constantBinary.deallocate(); constantClass.deallocate()
        keyXML.deallocate(); keyNameConstant.deallocate(); keyPolicy.deallocate()
        keyStart.deallocate(); keyEnd.deallocate(); arrayItems.deallocate(); arrayStart.deallocate()
    }

    @inline(__always)
    func bytes(_ r: PoolRange) -> UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(start: pool.baseAddress! + Int(r.start), count: Int(r.count))
    }
}
