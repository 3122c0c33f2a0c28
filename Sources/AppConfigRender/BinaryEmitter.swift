import AppConfigCore
import AppConfigCompiler

/// Writes a resolved device as a binary plist in plistlib's layout: objects numbered depth-first
/// (root, keys, then values), equal scalars stored once, offsets and references as narrow as the
/// sizes allow. Two passes over the device's objects: number (adding up sizes), then write into one
/// reservation of the output buffer; nothing else is allocated.
final class BinaryEmitter {
    let image: ProgramImage
    // Numbering scratch (`RenderScratch`): per instruction its object's index; per dedup class a
    // stamp (the device's generation) and an index; per object its kind, argument, offset.
    private let refAt: WorkerSlots<Int32>
    private let classStamp: WorkerSlots<UInt32>
    private let classIndex: WorkerSlots<Int32>
    fileprivate let dynamicClass: WorkerSlots<Int32>
    fileprivate let objectKind: WorkerSlots<UInt8>
    fileprivate let objectArgument: WorkerSlots<Int32>
    fileprivate let objectOffset: WorkerSlots<Int>
    /// This device's stamp: bumped per device, so no table is cleared between devices.
    private let generation: WorkerSlots<UInt32>
    /// The layout of the common device, made from the first one met (nil until then).
    /// An emitter is one worker's: its properties read and written per device are not checked for
    /// exclusive access at run time (`@exclusivity(unchecked)`; each check cost more than the
    /// access).
    @exclusivity(unchecked) private var layout: FixedLayout?
    /// Whether the fixed layout is used (tests turn it off to compare it with the general path),
    /// and how many devices it wrote.
    @exclusivity(unchecked) var usesFixedLayout = true
    @exclusivity(unchecked) private(set) var fixedLayoutDevices = 0

    fileprivate enum ObjectKind: UInt8 { case root, constant, dynamic, array }

    init(image: ProgramImage, scratch: RenderScratch) {
        self.image = image
        refAt = scratch.refAt
        classStamp = scratch.classStamp
        classIndex = scratch.classIndex
        dynamicClass = scratch.dynamicClass
        objectKind = scratch.objectKind
        objectArgument = scratch.objectArgument
        objectOffset = scratch.objectOffset
        generation = scratch.generation
    }

    func emit(_ device: ResolvedDevice, into output: inout GrowingStorage<UInt8>) {
        if usesFixedLayout, let layout, layout.emit(device, emitter: self, into: &output) {
            fixedLayoutDevices &+= 1
            return
        }
        generation[0] &+= 1
        if generation[0] == 0 {  // wrapped: stamps from 2^32 devices ago could collide
            classStamp.fill(with: 0)
            generation[0] = 1
        }
        let (objects, fixedBytes, references, distinct) = number(device)
        if usesFixedLayout && layout == nil && distinct && device.presentKeys.count == image.program.keys.count {
            layout = FixedLayout(objects: objects, emitter: self, device: device)
        }
        // The reference width follows the object count, the offset width the offset table's place.
        let refSize = PlistEncoding.byteWidth(for: objects)
        let offsetTableOffset = fixedBytes + references * refSize
        let offsetSize = PlistEncoding.byteWidth(for: offsetTableOffset)
        let total = offsetTableOffset + objects * offsetSize + 32
        output.append(count: total) { w in
            w.write("bplist00")
            for o in 0..<objects {
                objectOffset[o] = w.count
                writeObject(o, refSize: refSize, device, &w)
            }
            for o in 0..<objects { Self.writeWidth(objectOffset[o], offsetSize, &w) }
            Self.writeTrailer(objects: objects, offsetSize: offsetSize, refSize: refSize, offsetTableOffset: offsetTableOffset, &w)
        }
    }

    /// Numbers the objects (the keys, then each value depth-first), adding up their sizes as it
    /// goes: bytes known now, plus references whose width is known only from the final count.
    private func number(_ device: ResolvedDevice) -> (objects: Int, fixedBytes: Int, references: Int, distinct: Bool) {
        let stamp = generation[0]
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
                fixedBytes += Self.objectSize(of: device.strings[argument])
            }
            objects += 1
            return Int32(objects - 1)
        }

        for k in device.presentKeys {
            let key = Int(k)
            let c = Int(image.keyNameConstant[key])
            refAt[Int(image.keyStart[key])] = assign(Int(image.constantClass[c]), .constant, c)
        }
        let (code, opcodes) = (image.instructions, image.opcodes)
        var assignedDynamic = 0
        var distinct = true
        for k in device.presentKeys {
            let key = Int(k)
            var pc = Int(image.keyStart[key]) + 1
            let end = Int(image.keyEnd[key])
            while pc < end {
                let instruction = Instruction(rawValue: code[pc])
                switch opcodes[pc] {
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
                    if cls != image.program.constantClassCount + d { distinct = false }
                    dynamicClass[assignedDynamic] = Int32(d)
                    assignedDynamic += 1
                    refAt[pc] = assign(cls, .dynamic, d)
                default:
                    break
                }
                pc += 1
            }
        }
        return (objects, fixedBytes, references, distinct)
    }

    /// A dynamic string's dedup class: a constant string's when equal to one, an earlier dynamic
    /// string's of this device when equal to it, else its own. Hashed only when a constant string
    /// has its length, compared only with strings of its length: hashing every string of every
    /// device was a call and a multiply chain each, for strings that almost never equal another.
    fileprivate func dedupClass(ofDynamic d: Int, assignedBefore: Int, _ device: ResolvedDevice) -> Int {
        let bytes = device.bytes(of: d)
        if image.mayBeConstantString(length: bytes.count) {
            let constant = image.constantStringClass(bytes, hash: ByteKeyTable.hash(bytes, foldingASCIICase: false))
            if constant >= 0 { return constant }
        }
        for i in 0..<assignedBefore {
            let other = Int(dynamicClass[i])
            if device.bytes(of: other).equals(bytes) {  // lengths first
                return image.program.constantClassCount + other
            }
        }
        return image.program.constantClassCount + d
    }

    fileprivate func writeObject(_ o: Int, refSize: Int, _ device: ResolvedDevice, _ w: inout ByteWriter) {
        let argument = Int(objectArgument[o])
        switch objectKind[o] {
        case ObjectKind.constant.rawValue:
            let range = image.constantBinary[argument]
            w.write(image.bytes(range))
        case ObjectKind.dynamic.rawValue:
            Self.writeString(argument, of: device, &w)
        case ObjectKind.array.rawValue:
            let (n, array) = Instruction(rawValue: image.instructions[argument]).operands
            w.writeSizeHeader(token: 0xA0, count: n)
            let first = Int(image.arrayStart[array])
            for i in 0..<n {
                Self.writeWidth(Int(refAt[Int(image.arrayItems[first + i])]), refSize, &w)
            }
        default:  // root
            w.writeSizeHeader(token: 0xD0, count: device.presentKeys.count)
            for k in device.presentKeys {
                Self.writeWidth(Int(refAt[Int(image.keyStart[Int(k)])]), refSize, &w)
            }
            for k in device.presentKeys {
                Self.writeWidth(Int(refAt[Int(image.keyStart[Int(k)]) + 1]), refSize, &w)
            }
        }
    }

    /// The size of a dynamic string's object: its header, then ASCII bytes or UTF-16 units.
    @inline(__always)
    fileprivate static func objectSize(of s: DynamicString) -> Int {
        let units = s.isASCII ? Int(s.count) : Int(s.utf16Count)
        return PlistEncoding.sizeHeaderLength(units) + (s.isASCII ? units : 2 * units)
    }

    /// Dynamic string `d`'s object.
    @inline(__always)
    fileprivate static func writeString(_ d: Int, of device: ResolvedDevice, _ w: inout ByteWriter) {
        let s = device.strings[d]
        let bytes = device.bytes(of: d)
        if s.isASCII {
            w.writeSizeHeader(token: 0x50, count: bytes.count)
            w.write(bytes)
        } else {
            w.writeSizeHeader(token: 0x60, count: Int(s.utf16Count))
            w.writeUTF16BigEndian(bytes)
        }
    }

    /// Trailer: 5 unused bytes, sort version 0, the two widths, object count, top object, table offset.
    @inline(__always)
    fileprivate static func writeTrailer(objects: Int, offsetSize: Int, refSize: Int, offsetTableOffset: Int, _ w: inout ByteWriter) {
        w.write(bigEndian: 0, width: 6)
        w.write(UInt8(offsetSize))
        w.write(UInt8(refSize))
        w.write(bigEndian: UInt64(objects), width: 8)
        w.write(bigEndian: 0, width: 8)
        w.write(bigEndian: UInt64(offsetTableOffset), width: 8)
    }

    /// A reference or offset of 1, 2, 4 or 8 bytes, big-endian; the narrow cases first.
    @inline(__always)
    fileprivate static func writeWidth(_ value: Int, _ width: Int, _ w: inout ByteWriter) {
        switch width {
        case 1: w.write(UInt8(truncatingIfNeeded: value))
        case 2: w.write(UInt8(truncatingIfNeeded: value >> 8)); w.write(UInt8(truncatingIfNeeded: value))
        default: w.write(bigEndian: UInt64(value), width: width)
        }
    }
}

/// The binary layout of the common device, made once per renderer: every key present, every
/// dynamic string its own object (equal to no constant and to no other string of the device). Its
/// objects, their numbering and references are then the same for every such device; only the
/// dynamic strings' bytes and with them the offsets differ. A device is written as the fixed bytes
/// between its strings, its strings, and the offsets shifted by the strings' sizes: no numbering
/// pass and no per-object dispatch (numbering and writing were most of a device's time). A device that is not common goes the general way; tests compare both.
private final class FixedLayout {
    let objects: Int
    let refSize: Int
    /// The keys, in the order the common device has them.
    let keys: [Int32]
    /// The dynamic strings in object order.
    let strings: [Int32]
    /// The fixed bytes (after `bplist00`): segment `i` (`segmentStart[i]..<segmentStart[i + 1]`)
    /// comes before dynamic string `i`, the last after the last string. One array: a class and
    /// flat arrays, as a struct of arrays of arrays was copied per device (a retain per array).
    let segmentBytes: [UInt8]
    let segmentStart: [Int]
    /// Per object, its offset were every dynamic string empty, and how many strings precede it.
    let fixedOffset: [Int]
    let stringsBefore: [Int32]
    /// `bplist00`, the fixed objects and every reference: the size before the strings.
    let fixedBytes: Int

    /// From the device just numbered by the general path (the emitter's tables describe it).
    init(objects: Int, emitter e: BinaryEmitter, device: ResolvedDevice) {
        self.objects = objects
        let refSize = PlistEncoding.byteWidth(for: objects)
        self.refSize = refSize
        keys = Array(device.presentKeys)
        var strings: [Int32] = [], segmentStart = [0], fixedOffset: [Int] = [], stringsBefore: [Int32] = []
        var segmentBytes: [UInt8] = []
        var offset = 8
        for o in 0..<objects {
            fixedOffset.append(offset)
            stringsBefore.append(Int32(strings.count))
            if e.objectKind[o] == BinaryEmitter.ObjectKind.dynamic.rawValue {
                strings.append(e.objectArgument[o])
                segmentStart.append(segmentBytes.count)
                continue
            }
            // A fixed object's bytes, as the general path writes them.
            let size: Int
            if e.objectKind[o] == BinaryEmitter.ObjectKind.constant.rawValue {
                size = Int(e.image.constantBinary[Int(e.objectArgument[o])].count)
            } else {
                size = 16 + (device.presentKeys.count * 2 + objects) * refSize  // a bound: header plus references
            }
            let before = segmentBytes.count
            segmentBytes.append(room: size) { w in e.writeObject(o, refSize: refSize, device, &w) }
            offset += segmentBytes.count - before
        }
        segmentStart.append(segmentBytes.count)
        self.strings = strings
        self.segmentBytes = segmentBytes
        self.segmentStart = segmentStart
        self.fixedOffset = fixedOffset
        self.stringsBefore = stringsBefore
        fixedBytes = offset
    }

    /// Writes `device` when it is common (true); false leaves it to the general path.
    func emit(_ device: ResolvedDevice, emitter: BinaryEmitter, into output: inout GrowingStorage<UInt8>) -> Bool {
        guard device.presentKeys.count == keys.count else { return false }
        for i in 0..<keys.count where keys[i] != device.presentKeys[i] { return false }
        // Every string its own object, as numbering would find: equal to no constant, to no string
        // before it. `objectOffset[i]`: the bytes of the strings before string `i`, for the offsets.
        let shift = emitter.objectOffset
        var stringBytes = 0
        for (i, d) in strings.enumerated() {
            let d = Int(d)
            if emitter.dedupClass(ofDynamic: d, assignedBefore: i, device) != emitter.image.program.constantClassCount + d { return false }
            emitter.dynamicClass[i] = Int32(d)
            shift[i] = stringBytes
            stringBytes += BinaryEmitter.objectSize(of: device.strings[d])
        }
        shift[strings.count] = stringBytes
        let offsetTableOffset = fixedBytes + stringBytes
        let offsetSize = PlistEncoding.byteWidth(for: offsetTableOffset)
        let total = offsetTableOffset + objects * offsetSize + 32
        output.append(count: total) { w in
            w.write("bplist00")
            segmentBytes.withView { segments in
                // `w` passed, not captured: a captured variable is checked for exclusive access at
                // run time at each use.
                func copySegment(_ i: Int, _ w: inout ByteWriter) {
                    w.write(segments[view: segmentStart[i]..<segmentStart[i + 1]])
                }
                for (i, d) in strings.enumerated() {
                    copySegment(i, &w)
                    BinaryEmitter.writeString(Int(d), of: device, &w)
                }
                copySegment(strings.count, &w)
            }
            // The offsets: each object's fixed offset, shifted by the strings before it.
            for o in 0..<objects { BinaryEmitter.writeWidth(fixedOffset[o] + shift[Int(stringsBefore[o])], offsetSize, &w) }
            BinaryEmitter.writeTrailer(objects: objects, offsetSize: offsetSize, refSize: refSize, offsetTableOffset: offsetTableOffset, &w)
        }
        return true
    }
}
