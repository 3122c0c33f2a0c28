import Foundation
import AppConfigCompiler
import AppConfigCore
import AppConfigRender
import AppConfigSpec
import LibPlist

/// `--verify`: decodes a rendered plist with libplist and compares it with what the program means
/// for this device, evaluated here the slow, plain way (no emitter code shared), so that a bug in
/// the fast path shows up as a device error instead of a wrong file.
struct Verifier {
    let program: Program
    let format: OutputFormat
    /// The renderer writes the dictionary's body as a fragment (an MDM command's, `xmlNesting` > 0):
    /// it is read as the body of a plist document of its own.
    var fragment = false

    func check(_ bytes: ByteView, slots: BufferView<SlotValue>) -> Problem? {
        let expected = evaluate(slots)
        let decoded: PlistValue
        do {
            decoded = try LibPlist.decode(fragment ? Self.document(around: bytes) : Array(bytes))
        } catch {
            return Problem(.verifyMismatch, at: Location(), "libplist cannot read the rendered plist: \(error.message)")
        }
        guard decoded != expected else { return nil }
        if case .dictionary(let got) = decoded, case .dictionary(let want) = expected {
            for (k, v) in want where got.first(where: { $0.key == k })?.value != v {
                return Problem(.verifyMismatch, at: Location(key: k), "libplist reads \(String(describing: got.first { $0.key == k }?.value)), expected \(v)")
            }
        }
        return Problem(.verifyMismatch, at: Location(), "libplist reads \(decoded), expected \(expected)")
    }

    /// A dictionary's body in the plist document libplist reads.
    static func document(around body: ByteView) -> [UInt8] {
        Array(#"<?xml version="1.0" encoding="UTF-8"?><plist version="1.0"><dict>"#.utf8) + body + Array("</dict></plist>".utf8)
    }

    /// The device's dictionary: constants as they are, templates joined from the slot values, the
    /// missing-value policies applied; dates as the format and libplist 2.2 carry them.
    func evaluate(_ slots: BufferView<SlotValue>) -> PlistValue {
        var pairs: [(key: String, value: PlistValue)] = []
        keys: for key in program.keys {
            var array: [PlistValue]?
            var value: PlistValue?
            var text: [UInt8] = []
            var part = 0
            for pc in (key.startAddress + 1)..<key.endAddress {
                let instruction = program.instructions[pc]
                switch instruction.opcode {
                case .constant:
                    let v = plist(program.constants[instruction.operand].value)
                    if array != nil { array!.append(v) } else { value = v }
                case .arrayBegin: array = []
                case .arrayEnd: value = .array(array ?? []); array = nil
                case .stringBegin: text = []
                case .literal: text += program.texts[instruction.operand]
                case .variable, .variableOr:
                    part = text.count
                    let fallback = instruction.opcode == .variableOr
                    let v = slots[fallback ? instruction.operands.0 : instruction.operand]
                    if let value = v.view, !value.isEmpty {
                        text.append(value)
                    } else if fallback {
                        text += program.texts[instruction.operands.1]
                    } else if key.policy == .omit {
                        continue keys
                    }
                case .lower, .upper, .trim, .urlencode, .replace, .slice, .split:
                    text = Array(text[..<part]) + Array(filtered(String(decoding: text[part...], as: UTF8.self), instruction).utf8)
                case .stringEnd:
                    let v = PlistValue.string(String(decoding: text, as: UTF8.self))
                    if array != nil { array!.append(v) } else { value = v }
                default: break
                }
            }
            if let value { pairs.append((key.name, value)) }
        }
        return .dictionary(pairs)
    }

    /// A template filter, written a second way (Foundation's strings rather than the VM's bytes).
    /// A template filter, written a second way: the filter the instruction stands for, applied to
    /// Foundation's strings (`TemplateFilter.applied`), not to the VM's bytes.
    private func filtered(_ value: String, _ instruction: Instruction) -> String {
        func text(_ t: Int) -> String { String(decoding: program.texts[t], as: UTF8.self) }
        let (first, second) = instruction.operands
        let filter: TemplateFilter? = switch instruction.opcode {
        case .lower: .lower
        case .upper: .upper
        case .trim: .trim
        case .urlencode: .urlencode
        case .replace: .replace(text(first), text(second))
        case .slice: .substr(Instruction.signed(first), second == Instruction.noBound ? nil : second)
        case .split: .split(text(first), Instruction.signed(second))
        default: nil
        }
        return filter?.applied(to: value) ?? value
    }

    private func plist(_ v: ScalarValue) -> PlistValue {
        switch v {
        case .string(let s): return .string(s)
        case .integer(let i): return .integer(i)
        case .float(let d): return .real(d)
        case .boolean(let b): return .boolean(b)
        case .date(let d):
            let seconds = d.secondsSince2001
            if format == .xml { return .date(seconds.rounded(.down)) }
            // libplist 2.2 hands out whole seconds toward zero and a microsecond part without sign.
            let whole = seconds.rounded(.towardZero)
            return .date(whole + ((seconds - whole).magnitude * 1_000_000).rounded() / 1_000_000)
        }
    }
}
