import AppConfigBytes
import AppConfigCompiler
import AppConfigSpec

/// Writes a resolved device as an XML plist in plistlib's layout: the header, `<dict>`, a
/// tab-indented `<key>` line and value per present key, the footer. As a fragment (`nesting` > 0)
/// it writes only the key lines and values, `nesting` tabs deeper: the body of a dictionary nested
/// in a larger plist (an MDM command's `Configuration`), with no decode and re-encode.
final class XMLEmitter {
    let image: ProgramImage
    /// Extra tabs before every line; 0 writes a whole document.
    let nesting: Int
    /// XML shares no strings: the scan need not hash them.
    static let needsStringHashes = false

    init(image: ProgramImage, nesting: Int = 0) {
        self.image = image
        self.nesting = nesting
    }

    // Static strings, not arrays: no reference counting per use in the hot loop.
    private static let arrayOpen: StaticString = "\t<array>\n"
    private static let arrayClose: StaticString = "\t</array>\n"
    private static let arrayEmpty: StaticString = "\t<array/>\n"
    private static let stringOpen: StaticString = "<string>"
    private static let stringClose: StaticString = "</string>\n"

    /// Nil when written; an error when a value holds a character XML 1.0 cannot carry.
    func emit(_ device: ResolvedDevice, into output: inout ByteBuffer) -> Problem? {
        if nesting == 0 { output.append(ascii: PlistEncoding.xmlHeader) }
        let code = image.instructions
        for k in device.presentKeys {
            let key = Int(k)
            if nesting > 0 { output.appendTabs(nesting) }
            output.append(image.bytes(image.keyXML[key]))
            var pc = Int(image.keyStart[key]) + 1
            var depth = 1 + nesting
            var emptyArray = false
            walk: while true {
                let instruction = Instruction(rawValue: code[pc])
                switch instruction.opcode {
                case .constant:
                    let range = image.constantXML[instruction.operand]
                    if range.count < 0 {
                        return Problem(.xmlCharacter, at: Location(key: image.program.keys[key].name),
                                       "the value holds a character XML 1.0 cannot carry")
                    }
                    output.appendTabs(depth)
                    output.append(image.bytes(range))
                    output.append(0x0A)
                case .arrayBegin:
                    emptyArray = instruction.operands.0 == 0
                    if nesting > 0 { output.appendTabs(nesting) }
                    output.append(ascii: emptyArray ? Self.arrayEmpty : Self.arrayOpen)
                    depth = 2 + nesting
                case .arrayEnd:
                    if !emptyArray {
                        if nesting > 0 { output.appendTabs(nesting) }
                        output.append(ascii: Self.arrayClose)
                    }
                    depth = 1 + nesting
                case .stringBegin:
                    let d = instruction.operand
                    if device.strings[d].hasXMLForbidden {
                        return Problem(check: .xmlCharacter, program: image.program, string: device.strings[d], text: device.text,
                                           key: key, "holds a character XML 1.0 cannot carry")
                    }
                    output.appendTabs(depth)
                    output.append(ascii: Self.stringOpen)
                    let bytes = device.bytes(of: d)
                    if device.strings[d].needsEscape {
                        Self.appendEscaped(bytes, to: &output)
                    } else {
                        output.append(bytes)
                    }
                    output.append(ascii: Self.stringClose)
                case .endKey:
                    break walk
                default:
                    break
                }
                pc += 1
            }
        }
        if nesting == 0 { output.append(ascii: PlistEncoding.xmlFooter) }
        return nil
    }

    private static func appendEscaped(_ bytes: UnsafeBufferPointer<UInt8>, to output: inout ByteBuffer) {
        XMLEscaping.forEachEscaped(bytes) { output.append($0) }
    }
}
