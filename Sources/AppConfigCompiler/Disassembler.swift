
/// A readable listing of a program: one instruction a line, operands decoded (constants shown as
/// values, slots by variable name, patterns by source).
public enum Disassembler {
    public static func listing(_ p: Program) -> String {
        var out = "; \(p.metadata.bundleId) version \(p.metadata.version), hash \(p.metadata.hashHex)\n"
        out += "; \(p.keys.count) keys, \(p.instructions.count) instructions, \(p.constants.count) constants, "
            + "\(p.slots.count) slots, \(p.patterns.count) patterns, \(p.dynamicStringCount) dynamic strings\n"
        if !p.slots.isEmpty {
            out += "; slots: " + p.slots.enumerated().map { "s\($0.offset)=\($0.element)" }.joined(separator: " ") + "\n"
        }
        for (address, instruction) in p.instructions.enumerated() {
            out += pad(String(address), 4, zero: true) + "  " + line(instruction, p) + "\n"
            for proven in p.provenChecks where proven.address == address {
                out += "      ; checkPattern p\(proven.pattern) /\(p.patterns[proven.pattern].source)/ holds for every device: "
                    + "\(quoted(proven.text)) matches it\n"
            }
        }
        return out
    }

    static func line(_ i: Instruction, _ p: Program) -> String {
        let name = pad(mnemonic(i.opcode), 13)
        /// A text operand: its number and its text.
        func text(_ t: Int) -> String { "t\(t) " + quoted(String(decoding: p.texts[t], as: UTF8.self)) }
        switch i.opcode {
        case .key:
            let k = p.keys[i.operand]
            return name + "k\(i.operand) \(quoted(k.name)) \(k.type.rawValue) missing=\(k.policy.rawValue)"
        case .constant:
            return name + "c\(i.operand) \(p.constants[i.operand].value)"
        case .arrayBegin:
            let (count, array) = i.operands
            return name + "\(count) items (a\(array))"
        case .stringBegin:
            return name + "d\(i.operand)"
        case .literal:
            return name + text(i.operand)
        case .variable:
            return name + "s\(i.operand) $(\(p.slots[i.operand]))"
        case .variableOr:
            let (slot, fallback) = i.operands
            return name + "s\(slot) $(\(p.slots[slot])) else " + text(fallback)
        case .replace:
            let (from, to) = i.operands
            return name + text(from) + " -> " + text(to)
        case .slice:
            let (start, length) = i.operands
            return name + "\(Instruction.signed(start))" + (length == Instruction.noBound ? "..." : ", \(length)") + " characters"
        case .split:
            let (separator, index) = i.operands
            return name + text(separator) + " piece \(Instruction.signed(index))"
        case .lower, .upper, .trim, .urlencode:
            return mnemonic(i.opcode)
        case .checkLength:
            let (lo, hi) = i.operands
            return name + "\(lo)...\(hi == Instruction.noBound ? "" : String(hi)) UTF-16 units"
        case .checkPattern:
            return name + "p\(i.operand) /\(p.patterns[i.operand].source)/"
        case .checkValues:
            return name + "v\(i.operand) {" + p.valueSets[i.operand].display.map(quoted).joined(separator: ", ") + "}"
        case .endKey, .arrayEnd, .stringEnd, .halt:
            return mnemonic(i.opcode)
        }
    }

    static func mnemonic(_ op: Instruction.Opcode) -> String {
        switch op {
        case .key: "key"
        case .endKey: "endKey"
        case .constant: "const"
        case .arrayBegin: "arrayBegin"
        case .arrayEnd: "arrayEnd"
        case .stringBegin: "stringBegin"
        case .literal: "literal"
        case .variable: "variable"
        case .variableOr: "variableOr"
        case .lower: "lower"
        case .upper: "upper"
        case .trim: "trim"
        case .urlencode: "urlencode"
        case .replace: "replace"
        case .slice: "slice"
        case .split: "split"
        case .stringEnd: "stringEnd"
        case .checkLength: "checkLength"
        case .checkPattern: "checkPattern"
        case .checkValues: "checkValues"
        case .halt: "halt"
        }
    }

    static func quoted(_ s: String) -> String {
        "\"" + s.unicodeScalars.map { u -> String in
            switch u {
            case "\"": "\\\""
            case "\\": "\\\\"
            case "\n": "\\n"
            case "\r": "\\r"
            case "\t": "\\t"
            case _ where u.value < 0x20: "\\u{\(String(u.value, radix: 16))}"
            default: String(u)
            }
        }.joined() + "\""
    }

    static func pad(_ s: String, _ width: Int, zero: Bool = false) -> String {
        s.count >= width ? s : (zero ? String(repeating: "0", count: width - s.count) + s : s + String(repeating: " ", count: width - s.count))
    }
}
