import AppConfigCore
import Foundation

/// Why a device key cannot name a device, nil when it can: one of only spaces names none (and
/// would be a file of blanks), one with a line break or another control character breaks every
/// line-based listing (index, manifest, a scheduler's logs). Every row's key passes here, on the
/// one core that merges the parts: eight bytes at a time, byte by byte only to say what is wrong.
enum DeviceKeyCheck {
    static func problem(_ key: ByteView) -> String? {
        if key.count >= 8 && isUsable(key) { return nil }
        return problemByBytes(key)
    }

    /// The reason, byte by byte (the tests' reference for `problem`).
    static func problemByBytes(_ key: ByteView) -> String? {
        var blank = true
        for b in key {
            if b < 0x20 || b == 0x7F { return "holds a control character (\(b == 0x0A ? "a line feed" : b == 0x0D ? "a carriage return" : b == 0x09 ? "a tab" : String(format: "0x%02X", b)))" }
            if b != 0x20 { blank = false }
        }
        return blank ? "holds only spaces" : nil
    }

    /// No byte below 0x20 or DEL, and one that is not a space, in a key of at least eight bytes
    /// (its last eight read as a word overlapping the ones before). SWAR: `(w - 0x20..) & ~w &
    /// 0x80..` is nonzero exactly when a byte is below 0x20, the same of `w ^ 0x7F..` with 0x01
    /// when one is DEL.
    @inline(__always)
    static func isUsable(_ key: ByteView) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080, spaces: UInt64 = 0x2020_2020_2020_2020
        var control: UInt64 = 0, other: UInt64 = 0
        @inline(__always) func look(_ w: UInt64) {
            let del = w ^ (0x7F &* ones)
            control |= ((w &- spaces) & ~w | (del &- ones) & ~del) & highs
            other |= w ^ spaces
        }
        var i = 0
        while i + 8 <= key.count {
            look(key.word(at: i))
            i += 8
        }
        if i < key.count { look(key.word(at: key.count - 8)) }
        return control == 0 && other != 0
    }
}
