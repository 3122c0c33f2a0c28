import AppConfigCore
import AppConfigRender
import Digest

/// The digest of what a device's program read for it: its variant's program hash and each slot's
/// value (or that it is missing). A device renders from nothing else, so on two nights with the
/// same render settings (`renderSettings`) equal digests mean the same output: a `--changed-only`
/// night takes such a device's output digest from the previous manifest instead of rendering it.
/// Built on `wordHash`: should that change, no digest matches and every device renders once,
/// never a wrong one carried.
enum InputDigest {
    /// Not known (a manifest before version 3, a device with extensions or credentials).
    static let none: UInt64 = 0

    @inline(__always)
    static func of(programHash: UInt64, slots: BufferView<SlotValue>) -> UInt64 {
        @inline(__always) func mix(_ h: UInt64, _ w: UInt64) -> UInt64 {
            let m = (h ^ w) &* 0xBF58_476D_1CE4_E5B9
            return m ^ m >> 29
        }
        var h = mix(0x9E37_79B9_7F4A_7C15, programHash)
        for v in slots {
            h = mix(h, v.view.map { wordHash($0, foldingASCIICase: false) } ?? .max)
        }
        return h == none ? 1 : h
    }

    /// A manifest's field: 16 hex digits, or `-`; nil for anything else.
    static func parse(_ field: ByteView) -> UInt64? {
        if field.count == 1 && field.first == UInt8(ascii: "-") { return none }
        guard field.count == 16 else { return nil }
        // Eight digits at a time (`SHA256Digest.hexBytes`: every line of last night's manifest
        // has one). Lowercase, as written: an edited line is refused, not read (a digit or a
        // lowercase letter has bit 0x20, a capital does not).
        let first = field.word(at: 0), second = field.word(at: 8), lowercase: UInt64 = 0x2020_2020_2020_2020
        guard (first & second) & lowercase == lowercase, let high = SHA256Digest.hexBytes(first),
              let low = SHA256Digest.hexBytes(second) else { return nil }
        // The first pair of digits is the low byte of each: the number's most significant.
        let value = UInt64(high.byteSwapped) << 32 | UInt64(low.byteSwapped)
        return value == none ? nil : value
    }
}

extension ByteWriter {
    /// A manifest's input digest: 16 lowercase hex digits, or `-` for `InputDigest.none`.
    @inline(__always)
    mutating func write(inputDigest value: UInt64) {
        if value == InputDigest.none { write(UInt8(ascii: "-")) } else { write(hex: value, digits: 16) }
    }
}
