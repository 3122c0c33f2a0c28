import AppConfigCore
import AppConfigPattern
import AppConfigSpec

/// What to do when a variable a key needs is missing or empty for a device.
public enum MissingValuePolicy: String, SettingChoice, BitwiseCopyable {
    /// The device fails with `device.missing-variable` (the default for keys that are not nullable).
    case fail
    /// The key is left out of that device's plist (the default for `nullable="true"` keys).
    case omit
    /// The variable counts as the empty string; the key's checks still apply.
    case empty
}

/// A compiled spec + admin values: immutable, shared by every render thread.
public struct Program: Sendable {
    public var instructions: [Instruction]
    /// Scalar values and key names, pre-encoded for both formats.
    public var constants: [Constant]
    /// Literal parts of templates, as UTF-8.
    public var texts: [[UInt8]]
    /// The variables the program reads; a device row gives one value per slot.
    public var slots: [Variable]
    public var patterns: [Pattern]
    /// Allowed values of dynamic strings, as UTF-8.
    public var valueSets: [ValueSet]
    public var keys: [KeyInfo]
    /// Item addresses of each array (for the binary emitter's references).
    public var arrays: [[Int]]
    /// Dedup classes among constants (equal constants share one); dynamic strings get more per device.
    public var constantClassCount: Int
    public var dynamicStringCount: Int
    /// Pattern checks every device passes, left out of `instructions` (shown by the listing).
    public var provenChecks: [ProvenCheck] = []
    public var metadata: Metadata

    public struct Metadata: Sendable {
        public var bundleId: String
        public var version: Int
        /// FNV-1a 64 of everything the program renders from: instructions, constants, texts,
        /// slots, patterns, value sets and policies (so a cosmetic change to the spec keeps it).
        public var hash: UInt64
        public var hashHex: String {
            let h = String(hash, radix: 16)
            return String(repeating: "0", count: 16 - h.count) + h
        }
    }
}

/// A pattern check the compiler proved from a template's fixed text: `text` matches pattern
/// `pattern` wherever the variables put it. `address`: the `stringEnd` it would have followed.
public struct ProvenCheck: Sendable, Equatable {
    public var address: Int
    public var pattern: Int
    public var text: String
}

/// A scalar constant: its value, its XML element and its binary object.
public struct Constant: Sendable {
    public var value: ScalarValue
    /// `<integer>20</integer>`, no indentation; nil when XML 1.0 cannot carry the value (U+0001...).
    public var xml: [UInt8]?
    /// The bplist object (marker and payload).
    public var binary: [UInt8]
    /// Equal constants (as plistlib compares them: type and value) share a class.
    public var dedupClass: Int
}

public struct KeyInfo: Sendable {
    public var name: String
    public var type: KeyType
    /// `\t<key>NAME</key>\n`, escaped.
    public var xmlLine: [UInt8]
    /// The constant holding the name (binary dedup with equal string values).
    public var nameConstant: Int
    public var policy: MissingValuePolicy
    public var startAddress: Int
    /// The address of this key's `endKey`.
    public var endAddress: Int
}

/// A set of allowed strings (`<values>`), as UTF-8; the program image puts them in its pool with
/// their hashes, for a membership test per device without allocation.
public struct ValueSet: Sendable {
    public var values: [[UInt8]]
    /// The values as the spec writes them, for messages and the listing.
    public var display: [String]
}
