import AppConfigCompiler
import AppConfigPattern
import AppConfigSpec
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A resolved dynamic string of the current device: where its bytes are and what a scan found.
struct DynamicString {
    var start: Int32 = 0
    var count: Int32 = 0
    var utf16Count: Int32 = 0
    var isASCII = true
    /// Holds `& < > \r`: the XML emitter escapes it byte by byte; otherwise one copy.
    var needsEscape = false
    var hash: UInt64 = 0
    /// The first slot its template reads (for error messages), or -1.
    var firstSlot: Int32 = -1
}

/// Renders one device at a time: the VM (resolve and check) and the emitter of its format, with
/// every buffer owned here and reused, so that the per-device path allocates nothing once warm.
/// One per thread; the `ProgramImage` is shared.
public final class Renderer {
    public let image: ProgramImage
    public let format: OutputFormat
    private let program: Program

    /// The mutable part of a render, moved into a local for the duration of one device and passed
    /// `inout`: class properties would cost a dynamic exclusivity check on every access.
    struct State {
        /// The rendered plist; valid until the next render.
        var output: ByteBuffer
        /// Bytes of the dynamic strings of the current device.
        var text: ByteBuffer
        var presentCount = 0
        var generation: UInt32 = 0
    }

    private var saved: State
    private let strings: UnsafeMutableBufferPointer<DynamicString>
    private let presentKeys: UnsafeMutableBufferPointer<Int32>
    // Binary numbering: per instruction its object's index; per dedup class a stamp and an index.
    private let refAt: UnsafeMutableBufferPointer<Int32>
    private let classStamp: UnsafeMutableBufferPointer<UInt32>
    private let classIndex: UnsafeMutableBufferPointer<Int32>
    private let dynamicClass: UnsafeMutableBufferPointer<Int32>
    private let objectKind: UnsafeMutableBufferPointer<UInt8>
    private let objectArgument: UnsafeMutableBufferPointer<Int32>
    private let objectOffset: UnsafeMutableBufferPointer<Int>
    private let patternScratch = Pattern.Scratch()

    public init(image: ProgramImage, format: OutputFormat) {
        self.image = image
        self.format = format
        program = image.program
        let p = image.program
        func buffer<T>(_ count: Int, _ value: T) -> UnsafeMutableBufferPointer<T> {
            let b = UnsafeMutableBufferPointer<T>.allocate(capacity: max(count, 1))
            b.initialize(repeating: value)
            return b
        }
        // At most one object per instruction, plus the root.
        let maxObjects = p.instructions.count + 1
        saved = State(output: ByteBuffer(capacity: 4096), text: ByteBuffer(capacity: 1024))
        strings = buffer(p.dynamicStringCount, DynamicString())
        presentKeys = buffer(p.keys.count, 0)
        refAt = buffer(p.instructions.count, 0)
        classStamp = buffer(p.constantClassCount + p.dynamicStringCount, 0)
        classIndex = buffer(p.constantClassCount + p.dynamicStringCount, 0)
        dynamicClass = buffer(p.dynamicStringCount, 0)
        objectKind = buffer(maxObjects, 0)
        objectArgument = buffer(maxObjects, 0)
        objectOffset = buffer(maxObjects, 0)
    }

    deinit {
        saved.output.free(); saved.text.free()
        strings.deallocate(); presentKeys.deallocate(); refAt.deallocate()
        classStamp.deallocate(); classIndex.deallocate(); dynamicClass.deallocate()
        objectKind.deallocate(); objectArgument.deallocate(); objectOffset.deallocate()
    }

    /// Renders one device. The returned bytes live in this renderer's buffer and are valid until
    /// the next call; on error nothing of the device is kept. `source` names where a variable's
    /// value came from; it is called only when there is an error to report.
    /// Performance-critical: the fleet's hot loop.
    @inline(never)
    public func render(_ values: UnsafeBufferPointer<SlotValue>,
                       source: (Variable) -> String? = { _ in nil }) throws(DeviceError) -> UnsafeRawBufferPointer {
        precondition(values.count == image.slotCount, "a device row needs one value per slot")
        var state = saved
        defer { saved = state }
        var failure = resolve(values, &state)
        if failure == nil {
            state.output.count = 0
            switch format {
            case .xml: failure = emitXML(&state)
            case .binary: emitBinary(&state)
            }
        }
        if var error = failure {
            if let v = error.variable { error.source = source(v) }
            throw error
        }
        return state.output.bytes
    }

    // MARK: The VM: resolve variables, build dynamic strings, run the checks

    private func resolve(_ values: UnsafeBufferPointer<SlotValue>, _ state: inout State) -> DeviceError? {
        state.text.count = 0
        state.presentCount = 0
        let code = image.instructions
        var pc = 0
        var key = 0
        var current = 0
        while true {
            let instruction = Instruction(rawValue: code[pc])
            switch instruction.opcode {
            case .key:
                key = instruction.operand
            case .endKey:
                presentKeys[state.presentCount] = Int32(key)
                state.presentCount += 1
            case .stringBegin:
                current = instruction.operand
                strings[current] = DynamicString(start: Int32(state.text.count))
            case .literal:
                state.text.append(image.bytes(image.texts[instruction.operand]))
            case .variable:
                let slot = instruction.operand
                if strings[current].firstSlot < 0 { strings[current].firstSlot = Int32(slot) }
                let value = values[slot]
                if value.count > 0, let start = value.start {
                    state.text.append(UnsafeBufferPointer(start: start, count: value.count))
                } else {
                    switch image.keyPolicy[key] {
                    case .fail:
                        return DeviceError(code: .missingVariable, key: program.keys[key].name, variable: program.slots[slot],
                                           message: "$(\(program.slots[slot])) is \(value.count == 0 ? "empty" : "missing") for this device")
                    case .omit:
                        pc = Int(image.keyEnd[key]) + 1
                        continue
                    case .empty:
                        break
                    }
                }
            case .stringEnd:
                if let error = scan(current, key: key, state.text) { return error }
            case .checkLength:
                let (lo, hi) = instruction.operands
                let n = Int(strings[current].utf16Count)
                if n < lo || (hi != Instruction.noBound && n > hi) {
                    let bound = n < lo ? "fewer than min \(lo)" : "more than max \(hi)"
                    return checkError(.length, current, key, state.text, "has \(n) characters (UTF-16 units), \(bound)")
                }
            case .checkPattern:
                let pattern = image.patterns[instruction.operand]
                let result = pattern._withUnsafeGuaranteedRef {
                    $0.search(stringBytes(current, state.text), scratch: patternScratch, validatedUTF8: true)
                }
                switch result {
                case .match: break
                case .noMatch:
                    return checkError(.pattern, current, key, state.text, "does not match pattern \(pattern.takeUnretainedValue().source)")
                case .failed(let why):
                    return checkError(.patternLimit, current, key, state.text, "could not be checked against \(pattern.takeUnretainedValue().source): \(why)")
                }
            case .checkValues:
                let set = program.valueSets[instruction.operand]
                if !set.contains(stringBytes(current, state.text)) {
                    return checkError(.valueNotAllowed, current, key, state.text, "is not one of " + set.display.map { "\"\($0)\"" }.joined(separator: ", "))
                }
            case .halt:
                return nil
            case .constant, .arrayBegin, .arrayEnd:
                break
            }
            pc += 1
        }
    }

    @inline(__always)
    private func stringBytes(_ d: Int, _ text: ByteBuffer) -> UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(start: text.base + Int(strings[d].start), count: Int(strings[d].count))
    }

    private func checkError(_ code: DeviceError.Code, _ d: Int, _ key: Int, _ text: ByteBuffer, _ what: String) -> DeviceError {
        let value = String(decoding: stringBytes(d, text), as: UTF8.self)
        let slot = Int(strings[d].firstSlot)
        return DeviceError(code: code, key: program.keys[key].name, variable: slot >= 0 ? program.slots[slot] : nil,
                           value: value, message: "\"\(value)\" \(what)")
    }

    /// What a byte needs beyond being copied: 0 plain ASCII; 1 XML escape (`& < > \r`); 2 a control
    /// XML 1.0 forbids; 3 the lead or continuation byte of a multi-byte character.
    private static let byteClass: [UInt8] = (0...255).map { b -> UInt8 in
        switch b {
        case 0x26, 0x3C, 0x3E, 0x0D: 1
        case 0x09, 0x0A: 0
        case 0..<0x20: 2
        case 0x80...: 3
        default: 0
        }
    }

    /// One pass over a finished string: valid UTF-8, its UTF-16 length, ASCII or not, whether XML
    /// needs escapes or cannot carry it; and, for binary, its hash for the writer's dedup.
    private func scan(_ d: Int, key: Int, _ text: ByteBuffer) -> DeviceError? {
        let start = Int(strings[d].start)
        let n = text.count - start
        let p = text.base + start
        var i = 0
        var utf16 = 0
        var ascii = true, escape = false, invalid = false
        // FNV-1a fused into the scan; it must equal fnv1a(), with which the image hashes constant strings.
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        let hashing = format == .binary
        Self.byteClass.withUnsafeBufferPointer { classes in
            while i < n {
                let b = p[i]
                if hashing { hash = (hash ^ UInt64(b)) &* 0x0000_0100_0000_01B3 }
                switch classes[Int(b)] {
                case 0: utf16 += 1; i += 1; continue
                case 1: escape = true; utf16 += 1; i += 1; continue
                case 2: invalid = true; utf16 += 1; i += 1; continue
                default: break
                }
                // A multi-byte character: decode and validate it, hashing its continuation bytes.
                ascii = false
                guard let (scalar, length) = decodeUTF8(p, i, n) else { i = -1; return }
                if hashing { for k in 1..<length { hash = (hash ^ UInt64(p[i + k])) &* 0x0000_0100_0000_01B3 } }
                if scalar == 0xFFFE || scalar == 0xFFFF { invalid = true }
                utf16 += length == 4 ? 2 : 1
                i += length
            }
        }
        if i < 0 { return utf8Error(d, key: key) }
        strings[d].count = Int32(n)
        strings[d].utf16Count = Int32(utf16)
        strings[d].isASCII = ascii
        strings[d].needsEscape = escape
        strings[d].hash = hash
        if format == .xml && invalid {
            return checkError(.xmlCharacter, d, key, text, "holds a character XML 1.0 cannot carry")
        }
        return nil
    }

    private func utf8Error(_ d: Int, key: Int) -> DeviceError {
        let slot = Int(strings[d].firstSlot)
        return DeviceError(code: .invalidUTF8, key: program.keys[key].name, variable: slot >= 0 ? program.slots[slot] : nil,
                           message: "the value is not valid UTF-8")
    }

    // MARK: XML emitter

    private static let arrayOpen = Array("\t<array>\n".utf8)
    private static let arrayClose = Array("\t</array>\n".utf8)
    private static let arrayEmpty = Array("\t<array/>\n".utf8)
    private static let stringOpen = Array("<string>".utf8)
    private static let stringClose = Array("</string>\n".utf8)

    /// plistlib's layout: the header, `<dict>`, a tab-indented `<key>` line and value per key.
    private func emitXML(_ state: inout State) -> DeviceError? {
        state.output.append(PlistEncoding.xmlHeader)
        let code = image.instructions
        for k in 0..<state.presentCount {
            let key = Int(presentKeys[k])
            state.output.append(image.bytes(image.keyXML[key]))
            var pc = Int(image.keyStart[key]) + 1
            var depth = 1
            var emptyArray = false
            walk: while true {
                let instruction = Instruction(rawValue: code[pc])
                switch instruction.opcode {
                case .constant:
                    let range = image.constantXML[instruction.operand]
                    if range.count < 0 {
                        return DeviceError(code: .xmlCharacter, key: program.keys[key].name,
                                           message: "the value holds a character XML 1.0 cannot carry")
                    }
                    state.output.appendTabs(depth)
                    state.output.append(image.bytes(range))
                    state.output.append(0x0A)
                case .arrayBegin:
                    emptyArray = instruction.operands.0 == 0
                    state.output.append(emptyArray ? Self.arrayEmpty : Self.arrayOpen)
                    depth = 2
                case .arrayEnd:
                    if !emptyArray { state.output.append(Self.arrayClose) }
                    depth = 1
                case .stringBegin:
                    state.output.appendTabs(depth)
                    state.output.append(Self.stringOpen)
                    appendEscaped(instruction.operand, &state)
                    state.output.append(Self.stringClose)
                case .endKey:
                    break walk
                default:
                    break
                }
                pc += 1
            }
        }
        state.output.append(PlistEncoding.xmlFooter)
        return nil
    }

    private func appendEscaped(_ d: Int, _ state: inout State) {
        let bytes = stringBytes(d, state.text)
        guard strings[d].needsEscape else { state.output.append(bytes); return }
        for b in bytes {
            switch b {
            case 0x26: state.output.append(ascii: "&amp;")
            case 0x3C: state.output.append(ascii: "&lt;")
            case 0x3E: state.output.append(ascii: "&gt;")
            case 0x0D: state.output.append(ascii: "&#13;")
            default: state.output.append(b)
            }
        }
    }

    // MARK: Binary emitter

    private enum ObjectKind: UInt8 { case root, constant, dynamic, array }

    /// plistlib's layout: objects numbered depth-first (root, keys, then values), equal scalars
    /// stored once, offsets and references as narrow as the sizes allow. Two passes over this
    /// device's objects: number (adding up sizes), then write; one reservation, no other allocation.
    private func emitBinary(_ state: inout State) {
        state.generation &+= 1
        if state.generation == 0 {  // wrapped: stamps from 2^32 devices ago could collide
            classStamp.update(repeating: 0)
            state.generation = 1
        }
        let generation = state.generation
        let presentCount = state.presentCount
        let text = state.text
        var objects = 1
        objectKind[0] = ObjectKind.root.rawValue

        // Sizes add up as numbering goes: bytes known now, plus references whose width (from the
        // object count) is known only at the end. The root: its header, two references per key.
        var fixedBytes = 8 + PlistEncoding.sizeHeaderLength(presentCount)
        var references = 2 * presentCount

        @inline(__always) func assign(_ cls: Int, _ kind: ObjectKind, _ argument: Int) -> Int32 {
            if classStamp[cls] == generation { return classIndex[cls] }
            classStamp[cls] = generation
            classIndex[cls] = Int32(objects)
            objectKind[objects] = kind.rawValue
            objectArgument[objects] = Int32(argument)
            if kind == .constant {
                fixedBytes += Int(image.constantBinary[argument].count)
            } else {
                let s = strings[argument]
                let units = s.isASCII ? Int(s.count) : Int(s.utf16Count)
                fixedBytes += PlistEncoding.sizeHeaderLength(units) + (s.isASCII ? units : 2 * units)
            }
            objects += 1
            return Int32(objects - 1)
        }

        // 1. Number: the keys, then each value depth-first.
        for k in 0..<presentCount {
            let key = Int(presentKeys[k])
            let c = Int(image.keyNameConstant[key])
            refAt[Int(image.keyStart[key])] = assign(Int(image.constantClass[c]), .constant, c)
        }
        let code = image.instructions
        var assignedDynamic = 0
        for k in 0..<presentCount {
            let key = Int(presentKeys[k])
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
                    let cls = dedupClass(ofDynamic: d, assignedBefore: assignedDynamic, text)
                    dynamicClass[assignedDynamic] = Int32(d)
                    assignedDynamic += 1
                    refAt[pc] = assign(cls, .dynamic, d)
                default:
                    break
                }
                pc += 1
            }
        }

        // 2. Size: the reference width follows the object count, the offset width the offset table's place.
        let refSize = PlistEncoding.byteWidth(for: objects)
        let offsetTableOffset = fixedBytes + references * refSize
        let offsetSize = PlistEncoding.byteWidth(for: offsetTableOffset)
        let total = offsetTableOffset + objects * offsetSize + 32

        // 3. Write.
        state.output.reserve(total)
        let base = state.output.base
        var p = base
        for b in "bplist00".utf8 { p.pointee = b; p += 1 }
        for o in 0..<objects {
            objectOffset[o] = p - base
            p = writeObject(o, at: p, refSize: refSize, presentCount: presentCount, text)
        }
        for o in 0..<objects {
            Self.writeWidth(objectOffset[o], offsetSize, &p)
        }
        // Trailer: 5 unused bytes, sort version 0, the two widths, object count, top object, table offset.
        for _ in 0..<6 { p.pointee = 0; p += 1 }
        p[0] = UInt8(offsetSize); p[1] = UInt8(refSize); p += 2
        PlistEncoding.writeBigEndian(UInt64(objects), width: 8, to: p); p += 8
        PlistEncoding.writeBigEndian(0, width: 8, to: p); p += 8
        PlistEncoding.writeBigEndian(UInt64(offsetTableOffset), width: 8, to: p); p += 8
        assert(p - base == total, "size pass and write pass disagree")
        state.output.count = total
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

    /// A dynamic string's dedup class: a constant string's when equal to one, an earlier dynamic
    /// string's of this device when equal to it, else its own.
    private func dedupClass(ofDynamic d: Int, assignedBefore: Int, _ text: ByteBuffer) -> Int {
        let bytes = stringBytes(d, text)
        let hash = strings[d].hash
        let constant = image.constantStringClass(bytes, hash: hash)
        if constant >= 0 { return constant }
        for i in 0..<assignedBefore {
            let other = Int(dynamicClass[i])
            if strings[other].hash == hash && bytesEqual(stringBytes(other, text), bytes) {
                return program.constantClassCount + other
            }
        }
        return program.constantClassCount + d
    }

    private func writeObject(_ o: Int, at start: UnsafeMutablePointer<UInt8>, refSize: Int, presentCount: Int,
                             _ text: ByteBuffer) -> UnsafeMutablePointer<UInt8> {
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
            let s = strings[argument]
            let bytes = stringBytes(argument, text)
            if s.isASCII {
                p += PlistEncoding.writeSizeHeader(token: 0x50, count: bytes.count, to: p)
                if let b = bytes.baseAddress { p.update(from: b, count: bytes.count) }
                p += bytes.count
            } else {
                p += PlistEncoding.writeSizeHeader(token: 0x60, count: Int(s.utf16Count), to: p)
                p = writeUTF16BigEndian(bytes, to: p)
            }
        case ObjectKind.array.rawValue:
            let (n, array) = Instruction(rawValue: image.instructions[argument]).operands
            p += PlistEncoding.writeSizeHeader(token: 0xA0, count: n, to: p)
            let first = Int(image.arrayStart[array])
            for i in 0..<n {
                Self.writeWidth(Int(refAt[Int(image.arrayItems[first + i])]), refSize, &p)
            }
        default:  // root
            p += PlistEncoding.writeSizeHeader(token: 0xD0, count: presentCount, to: p)
            for k in 0..<presentCount {
                Self.writeWidth(Int(refAt[Int(image.keyStart[Int(presentKeys[k])])]), refSize, &p)
            }
            for k in 0..<presentCount {
                Self.writeWidth(Int(refAt[Int(image.keyStart[Int(presentKeys[k])]) + 1]), refSize, &p)
            }
        }
        return p
    }

    /// Transcodes validated UTF-8 to UTF-16 big-endian (surrogate pairs above U+FFFF).
    private func writeUTF16BigEndian(_ bytes: UnsafeBufferPointer<UInt8>, to start: UnsafeMutablePointer<UInt8>) -> UnsafeMutablePointer<UInt8> {
        var p = start
        var i = 0
        let n = bytes.count
        @inline(__always) func put(_ unit: UInt32) {
            p[0] = UInt8(truncatingIfNeeded: unit >> 8)
            p[1] = UInt8(truncatingIfNeeded: unit)
            p += 2
        }
        while i < n {
            let b = UInt32(bytes[i])
            if b < 0x80 {
                put(b); i += 1
            } else if b < 0xE0 {
                put((b & 0x1F) << 6 | UInt32(bytes[i + 1] & 0x3F)); i += 2
            } else if b < 0xF0 {
                put((b & 0x0F) << 12 | UInt32(bytes[i + 1] & 0x3F) << 6 | UInt32(bytes[i + 2] & 0x3F)); i += 3
            } else {
                let scalar = (b & 0x07) << 18 | UInt32(bytes[i + 1] & 0x3F) << 12 | UInt32(bytes[i + 2] & 0x3F) << 6 | UInt32(bytes[i + 3] & 0x3F)
                let v = scalar - 0x10000
                put(0xD800 | (v >> 10)); put(0xDC00 | (v & 0x3FF)); i += 4
            }
        }
        return p
    }
}
