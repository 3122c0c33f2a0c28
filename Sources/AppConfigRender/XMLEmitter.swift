import AppConfigCore
import AppConfigCompiler

/// Writes a resolved device as an XML plist in plistlib's layout: the header, `<dict>`, a
/// tab-indented `<key>` line and value per present key, the footer. As a fragment (`nesting` > 0)
/// it writes only the key lines and values, `nesting` tabs deeper: the body of a dictionary nested
/// in a larger plist (an MDM command's `Configuration`), with no decode and re-encode.
final class XMLEmitter {
    let image: ProgramImage
    /// Extra tabs before every line; 0 writes a whole document.
    let nesting: Int

    /// Each key's lines laid out once: runs of fixed bytes (the key line, constants, array and
    /// string tags, tabs), each followed by a dynamic string or nothing. A device's plist is, per
    /// present key, its runs copied and its strings escaped between them: the instructions that
    /// build strings are not walked again per device (`Render.oneDevice.xml` measures it).
    private let arena = BufferArena()
    private let runBytes: ByteView
    /// Per segment: its fixed bytes (a range of `runBytes`) and what follows them: a dynamic
    /// string (>= 0), nothing (`Self.nothing`), or a constant XML cannot carry (`Self.forbidden`,
    /// an error when the key is present).
    private let segmentRun: BufferView<PoolRange>
    private let segmentThen: BufferView<Int32>
    /// Key k's segments: `keySegments[k] ..< keySegments[k + 1]`.
    private let keySegments: BufferView<Int32>
    private static let nothing: Int32 = -1
    private static let forbidden: Int32 = -2

    init(image: ProgramImage, nesting: Int = 0) {
        self.image = image
        self.nesting = nesting
        var bytes: [UInt8] = [], runs: [PoolRange] = [], then: [Int32] = [], starts: [Int32] = [0]
        var runStart = 0
        func end(then next: Int32) {
            runs.append(PoolRange(start: Int32(runStart), count: Int32(bytes.count - runStart)))
            then.append(next)
            runStart = bytes.count
        }
        func tabs(_ n: Int) { bytes += repeatElement(0x09, count: n) }
        let (code, opcodes) = (image.instructions, image.opcodes)
        for key in 0..<image.program.keys.count {
            tabs(nesting)
            bytes += image.bytes(image.keyXML[key])
            var pc = Int(image.keyStart[key]) + 1
            var depth = 1 + nesting
            var emptyArray = false
            walk: while true {
                let instruction = Instruction(rawValue: code[pc])
                switch opcodes[pc] {
                case .constant:
                    let range = image.constantXML[instruction.operand]
                    if range.count < 0 {
                        end(then: Self.forbidden)
                    } else {
                        tabs(depth)
                        bytes += image.bytes(range)
                        bytes.append(0x0A)
                    }
                case .arrayBegin:
                    emptyArray = instruction.operands.0 == 0
                    tabs(nesting)
                    bytes += (emptyArray ? "\t<array/>\n" : "\t<array>\n").utf8
                    depth = 2 + nesting
                case .arrayEnd:
                    if !emptyArray {
                        tabs(nesting)
                        bytes += "\t</array>\n".utf8
                    }
                    depth = 1 + nesting
                case .stringBegin:
                    tabs(depth)
                    bytes += "<string>".utf8
                    end(then: Int32(instruction.operand))
                    bytes += "</string>\n".utf8
                case .endKey:
                    break walk
                default:
                    break
                }
                pc += 1
            }
            end(then: Self.nothing)
            starts.append(Int32(runs.count))
        }
        runBytes = arena.view(bytes)
        segmentRun = arena.view(runs)
        segmentThen = arena.view(then)
        keySegments = arena.view(starts)
    }

    /// Nil when written; an error when a value holds a character XML 1.0 cannot carry.
    func emit(_ device: ResolvedDevice, into output: inout GrowingStorage<UInt8>) -> Problem? {
        if nesting == 0 { output.append(PlistEncoding.xmlHeader) }
        for k in device.presentKeys {
            let key = Int(k)
            for s in Int(keySegments[key])..<Int(keySegments[key + 1]) {
                let run = segmentRun[s]
                output.append(runBytes[view: Int(run.start)..<Int(run.start + run.count)])
                let d = Int(segmentThen[s])
                if d >= 0 {
                    if device.strings[d].hasXMLForbidden {
                        return Problem(check: .xmlCharacter, program: image.program, string: device.strings[d], text: device.text,
                                       key: key, "holds a character XML 1.0 cannot carry")
                    }
                    let bytes = device.bytes(of: d)
                    if device.strings[d].needsEscape {
                        XMLEscaping.forEachEscaped(bytes) { output.append($0) }
                    } else {
                        output.append(bytes)
                    }
                } else if d == Int(Self.forbidden) {
                    return Problem(.xmlCharacter, at: Location(key: image.program.keys[key].name),
                                   "the value holds a character XML 1.0 cannot carry")
                }
            }
        }
        if nesting == 0 { output.append(PlistEncoding.xmlFooter) }
        return nil
    }
}
