/// One instruction: an opcode in the top byte and a 56-bit payload (one operand, or two of 28 bits).
///
/// A program is one block per present key, in the plist's key order (code-point order of keyNames):
/// `key`, the value's instructions, `endKey`; then `halt`. The VM runs it once per device to resolve
/// and check the dynamic strings; the emitters walk the same instructions to write XML or binary.
public struct Instruction: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt64

    public init(rawValue: UInt64) { self.rawValue = rawValue }

    public enum Opcode: UInt8, Sendable, CaseIterable, BitwiseCopyable {
        /// `key k`: begins the entry of `keys[k]`. Its missing-value policy governs the block, and
        /// `keys[k].endAddress` is where an omitted key resumes.
        case key = 1
        /// `endKey`: ends the current key's entry.
        case endKey
        /// `const c`: a scalar value, pre-encoded in `constants[c]` for both formats.
        case constant
        /// `arrayBegin n, a`: an array of n items; `arrays[a]` lists the items' addresses.
        case arrayBegin
        /// `arrayEnd`: closes the array.
        case arrayEnd
        /// `stringBegin d`: starts dynamic string d (a template), built from the parts that follow.
        case stringBegin
        /// `literal t`: appends `texts[t]` (UTF-8) to the string being built.
        case literal
        /// `variable s`: appends the device's value of `slots[s]`; missing or empty -> the key's policy.
        case variable
        /// `stringEnd`: the string is complete: scanned (UTF-8, UTF-16 length, XML-safety) and hashed.
        case stringEnd
        /// `checkLength lo, hi`: the string's UTF-16 length is within [lo, hi] (`noBound` = none).
        case checkLength
        /// `checkPattern p`: `patterns[p]` finds a match in the string (unanchored).
        case checkPattern
        /// `checkValues v`: the string is one of `valueSets[v]`.
        case checkValues
        /// `halt`: the end of the program.
        case halt
        /// `variableOr s, t`: as `variable s`, but a missing or empty value is `texts[t]` (the
        /// `default:` filter) instead of the key's missing-value policy.
        case variableOr
        /// `lower`: the value of the variable just appended, to lower case (ASCII in place; other
        /// letters by Unicode's mapping). The filters below act on that value likewise.
        case lower
        /// `upper`: to upper case.
        case upper
        /// `trim`: spaces, tabs and line breaks removed from both ends.
        case trim
        /// `urlencode`: percent-encoded per RFC 3986 (all but `A-Z a-z 0-9 - . _ ~`).
        case urlencode
        /// `replace t, u`: every occurrence of `texts[t]` replaced by `texts[u]`, left to right.
        case replace
        /// `slice s, n`: the characters from `s` (biased: `Instruction.signed`), `n` of them
        /// (`noBound`: to the end). `substr` and `last`.
        case slice
        /// `split t, i`: the piece `i` (biased) of the value cut at each `texts[t]`.
        case split
    }

    /// A signed number in a 28-bit operand: biased by 2^27.
    public static func biased(_ n: Int) -> Int { n + (1 << 27) }
    /// The number a biased operand holds.
    public static func signed(_ operand: Int) -> Int { operand - (1 << 27) }

    /// A check bound meaning "no bound" in the 28-bit fields of `checkLength`.
    public static let noBound = (1 << 28) - 1

    public var opcode: Opcode { Opcode(rawValue: UInt8(truncatingIfNeeded: rawValue >> 56))! }

    /// The single operand.
    public var operand: Int { Int(rawValue & 0x00FF_FFFF_FFFF_FFFF) }

    /// The two 28-bit operands.
    public var operands: (Int, Int) { (Int((rawValue >> 28) & 0xFFF_FFFF), Int(rawValue & 0xFFF_FFFF)) }

    public init(_ opcode: Opcode, _ operand: Int = 0) {
        precondition(operand >= 0 && operand < 1 << 56, "operand out of range")
        rawValue = UInt64(opcode.rawValue) << 56 | UInt64(operand)
    }

    public init(_ opcode: Opcode, _ first: Int, _ second: Int) {
        precondition(first >= 0 && first < 1 << 28 && second >= 0 && second < 1 << 28, "operands out of range")
        rawValue = UInt64(opcode.rawValue) << 56 | UInt64(first) << 28 | UInt64(second)
    }
}
