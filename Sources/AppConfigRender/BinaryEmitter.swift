import AppConfigBytes
import AppConfigCompiler

/// Writes a resolved device as a binary plist in plistlib's layout: objects numbered depth-first
/// (root, keys, then values), equal scalars stored once, offsets and references as narrow as the
/// sizes allow. Two passes over the device's objects: number (adding up sizes), then write into one
/// reservation of the output buffer; nothing else is allocated.
final class BinaryEmitter {
    let image: ProgramImage
    /// Equal strings are stored once: the scan hashes each for the dedup.
    static let needsStringHashes = true
    // Numbering scratch, in the renderer's arena: per instruction its object's index; per dedup
    // class a stamp (the device's generation) and an index; per object its kind, argument, offset.
    private let refAt: UnsafeMutableBufferPointer<Int32>
    private let classStamp: UnsafeMutableBufferPointer<UInt32>
    private let classIndex: UnsafeMutableBufferPointer<Int32>
    private let dynamicClass: UnsafeMutableBufferPointer<Int32>
    private let objectKind: UnsafeMutableBufferPointer<UInt8>
    private let objectArgument: UnsafeMutableBufferPointer<Int32>
    private let objectOffset: UnsafeMutableBufferPointer<Int>
    /// This device's stamp: bumped per device, so no table is cleared between devices.
    private let generation: UnsafeMutablePointer<UInt32>

    private enum ObjectKind: UInt8 { case root, constant, dynamic, array }

    init(image: ProgramImage, arena: BufferArena) {
        self.image = image
        let p = image.program
        let classes = p.constantClassCount + p.dynamicStringCount
        // At most one object per instruction, plus the root.
        let maxObjects = p.instructions.count + 1
        refAt = arena.table(count: p.instructions.count, repeating: 0)
        classStamp = arena.table(count: classes, repeating: 0)
        classIndex = arena.table(count: classes, repeating: 0)
        dynamicClass = arena.table(count: p.dynamicStringCount, repeating: 0)
        objectKind = arena.table(count: maxObjects, repeating: 0)
        objectArgument = arena.table(count: maxObjects, repeating: 0)
        objectOffset = arena.table(count: maxObjects, repeating: 0)
        generation = arena.table(count: 1, repeating: UInt32(0)).baseAddress!
    }

    func emit(_ device: ResolvedDevice, into output: inout ByteBuffer) {
        generation.pointee &+= 1
        if generation.pointee == 0 {  // wrapped: stamps from 2^32 devices ago could collide
            classStamp.update(repeating: 0)
            generation.pointee = 1
        }
        let (objects, fixedBytes, references) = number(device)
        // The reference width follows the object count, the offset width the offset table's place.
        let refSize = PlistEncoding.byteWidth(for: objects)
        let offsetTableOffset = fixedBytes + references * refSize
        let offsetSize = PlistEncoding.byteWidth(for: offsetTableOffset)
        let total = offsetTableOffset + objects * offsetSize + 32
        output.append(count: total) { base in
            var p = base
            for b in "bplist00".utf8 { p.pointee = b; p += 1 }
            for o in 0..<objects {
                objectOffset[o] = p - base
                p = writeObject(o, at: p, refSize: refSize, device)
            }
            for o in 0..<objects { Self.writeWidth(objectOffset[o], offsetSize, &p) }
            // Trailer: 5 unused bytes, sort version 0, the two widths, object count, top object, table offset.
            for _ in 0..<6 { p.pointee = 0; p += 1 }
            p[0] = UInt8(offsetSize); p[1] = UInt8(refSize); p += 2
            PlistEncoding.writeBigEndian(UInt64(objects), width: 8, to: p); p += 8
            PlistEncoding.writeBigEndian(0, width: 8, to: p); p += 8
            PlistEncoding.writeBigEndian(UInt64(offsetTableOffset), width: 8, to: p); p += 8
            return p
        }
    }

    /// Numbers the objects (the keys, then each value depth-first), adding up their sizes as it
    /// goes: bytes known now, plus references whose width is known only from the final count.
    private func number(_ device: ResolvedDevice) -> (objects: Int, fixedBytes: Int, references: Int) {
        let stamp = generation.pointee
        let presentCount = device.presentKeys.count
        var objects = 1
        objectKind[0] = ObjectKind.root.rawValue
        // The root: its header, two references per key.
        var fixedBytes = 8 + PlistEncoding.sizeHeaderLength(presentCount)
        var references = 2 * presentCount

        @inline(__always) func assign(_ cls: Int, _ kind: ObjectKind, _ argument: Int) -> Int32 {
            if classStamp[cls] == stamp { return classIndex[cls] }
            classStamp[cls] = stamp
            classIndex[cls] = Int32(objects)
            objectKind[objects] = kind.rawValue
            objectArgument[objects] = Int32(argument)
            if kind == .constant {
                fixedBytes += Int(image.constantBinary[argument].count)
            } else {
                let s = device.strings[argument]
                let units = s.isASCII ? Int(s.count) : Int(s.utf16Count)
                fixedBytes += PlistEncoding.sizeHeaderLength(units) + (s.isASCII ? units : 2 * units)
            }
            objects += 1
            return Int32(objects - 1)
        }

        for k in device.presentKeys {
            let key = Int(k)
            let c = Int(image.keyNameConstant[key])
            refAt[Int(image.keyStart[key])] = assign(Int(image.constantClass[c]), .constant, c)
        }
        let code = image.instructions
        var assignedDynamic = 0
        for k in device.presentKeys {
            let key = Int(k)
            var pc = Int(image.keyStart[key]) + 1
            let end = Int(image.keyEnd[key])
            while pc < end {
                let instruction = Instruction(rawValue: code[pc])
                switch instruction.opcode {
                case .constant:
                    let c = instruction.operand
                    refAt[pc] = assign(Int(image.constantClass[c]), .constant, c)
                case .arrayBegin:
                    objectKind[objects] = ObjectKind.array.rawValue
                    objectArgument[objects] = Int32(pc)
                    refAt[pc] = Int32(objects)
                    objects += 1
                    let n = instruction.operands.0
                    fixedBytes += PlistEncoding.sizeHeaderLength(n)
                    references += n
                case .stringBegin:
                    let d = instruction.operand
                    let cls = dedupClass(ofDynamic: d, assignedBefore: assignedDynamic, device)
                    dynamicClass[assignedDynamic] = Int32(d)
                    assignedDynamic += 1
                    refAt[pc] = assign(cls, .dynamic, d)
                default:
                    break
                }
                pc += 1
            }
        }
        return (objects, fixedBytes, references)
    }

    /// A dynamic string's dedup class: a constant string's when equal to one, an earlier dynamic
    /// string's of this device when equal to it, else its own.
    private func dedupClass(ofDynamic d: Int, assignedBefore: Int, _ device: ResolvedDevice) -> Int {
        let bytes = device.bytes(of: d)
        let hash = device.strings[d].hash
        let constant = image.constantStringClass(bytes, hash: hash)
        if constant >= 0 { return constant }
        for i in 0..<assignedBefore {
            let other = Int(dynamicClass[i])
            if device.strings[other].hash == hash && bytesEqual(device.bytes(of: other), bytes) {
                return image.program.constantClassCount + other
            }
        }
        return image.program.constantClassCount + d
    }

    private func writeObject(_ o: Int, at start: UnsafeMutablePointer<UInt8>, refSize: Int,
                             _ device: ResolvedDevice) -> UnsafeMutablePointer<UInt8> {
        var p = start
        let argument = Int(objectArgument[o])
        switch objectKind[o] {
        case ObjectKind.constant.rawValue:
            // Constants are a few bytes: a loop beats a call to memcpy.
            let range = image.constantBinary[argument]
            let source = image.pool.baseAddress! + Int(range.start)
            for i in 0..<Int(range.count) { p[i] = source[i] }
            p += Int(range.count)
        case ObjectKind.dynamic.rawValue:
            let s = device.strings[argument]
            let bytes = device.bytes(of: argument)
            if s.isASCII {
                p += PlistEncoding.writeSizeHeader(token: 0x50, count: bytes.count, to: p)
                if let b = bytes.baseAddress { p.update(from: b, count: bytes.count) }
                p += bytes.count
            } else {
                p += PlistEncoding.writeSizeHeader(token: 0x60, count: Int(s.utf16Count), to: p)
                p = UTF16.writeBigEndian(bytes, to: p)
            }
        case ObjectKind.array.rawValue:
            let (n, array) = Instruction(rawValue: image.instructions[argument]).operands
            p += PlistEncoding.writeSizeHeader(token: 0xA0, count: n, to: p)
            let first = Int(image.arrayStart[array])
            for i in 0..<n {
                Self.writeWidth(Int(refAt[Int(image.arrayItems[first + i])]), refSize, &p)
            }
        default:  // root
            p += PlistEncoding.writeSizeHeader(token: 0xD0, count: device.presentKeys.count, to: p)
            for k in device.presentKeys {
                Self.writeWidth(Int(refAt[Int(image.keyStart[Int(k)])]), refSize, &p)
            }
            for k in device.presentKeys {
                Self.writeWidth(Int(refAt[Int(image.keyStart[Int(k)]) + 1]), refSize, &p)
            }
        }
        return p
    }

    /// A reference or offset of 1, 2, 4 or 8 bytes, big-endian; the narrow cases first.
    @inline(__always)
    private static func writeWidth(_ value: Int, _ width: Int, _ p: inout UnsafeMutablePointer<UInt8>) {
        switch width {
        case 1: p[0] = UInt8(truncatingIfNeeded: value)
        case 2: p[0] = UInt8(truncatingIfNeeded: value >> 8); p[1] = UInt8(truncatingIfNeeded: value)
        default: PlistEncoding.writeBigEndian(UInt64(value), width: width, to: p)
        }
        p += width
    }
}
