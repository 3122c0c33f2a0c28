import AppConfigCore
import AppConfigSpec

/// The byte-level rules of the two plist formats, as Python's plistlib writes them (the layout the
/// output contract promises). Used at compile time for constants and by the emitters per device.
public enum PlistEncoding {
    /// Static strings: the emitters copy them per device with no reference counting.
    public static let xmlHeader: StaticString = """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0">
        <dict>

        """
    public static let xmlFooter: StaticString = "</dict>\n</plist>\n"

    // MARK: Binary

    /// An object's marker with its count: `token|count` below 15, else `token|0xF` and an integer.
    public static func sizeHeaderLength(_ count: Int) -> Int {
        if count < 15 { return 1 }
        if count < 1 << 8 { return 3 }
        if count < 1 << 16 { return 4 }
        if count < 1 << 32 { return 6 }
        return 10
    }

    /// plistlib's `_count_to_size`: the width of references and offsets.
    @inlinable public static func byteWidth(for count: Int) -> Int {
        if count < 1 << 8 { return 1 }
        if count < 1 << 16 { return 2 }
        if count < 1 << 32 { return 4 }
        return 8
    }

    static func bigEndian(_ value: UInt64, width: Int) -> [UInt8] {
        [UInt8](room: 8) { $0.write(bigEndian: value, width: width) }
    }

    /// The bplist object of a scalar: smallest integer width (negatives as 8 bytes), 8-byte reals,
    /// dates as float64 seconds since 2001, ASCII strings as 0x5X, others UTF-16BE as 0x6X.
    public static func binaryObject(_ value: ScalarValue) -> [UInt8] {
        switch value {
        case .boolean(let b): return [b ? 0x09 : 0x08]
        case .integer(let i):
            if i < 0 { return [0x13] + bigEndian(UInt64(bitPattern: i), width: 8) }
            if i < 1 << 8 { return [0x10] + bigEndian(UInt64(i), width: 1) }
            if i < 1 << 16 { return [0x11] + bigEndian(UInt64(i), width: 2) }
            if i < 1 << 32 { return [0x12] + bigEndian(UInt64(i), width: 4) }
            return [0x13] + bigEndian(UInt64(i), width: 8)
        case .float(let d): return [0x23] + bigEndian(d.bitPattern, width: 8)
        case .date(let d): return [0x33] + bigEndian(d.secondsSince2001.bitPattern, width: 8)
        case .string(let s):
            let utf8 = Array(s.utf8)
            if utf8.allSatisfy({ $0 < 0x80 }) {
                return [UInt8](room: 10) { $0.writeSizeHeader(token: 0x50, count: utf8.count) } + utf8
            }
            let units = Array(s.utf16)
            return [UInt8](room: 10) { $0.writeSizeHeader(token: 0x60, count: units.count) } + units.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
        }
    }

    // MARK: XML

    /// The XML element of a scalar, without indentation; nil when a string holds a character XML 1.0
    /// cannot carry.
    public static func xmlElement(_ value: ScalarValue) -> [UInt8]? {
        switch value {
        case .boolean(let b): return Array((b ? "<true/>" : "<false/>").utf8)
        case .integer(let i): return Array("<integer>\(i)</integer>".utf8)
        case .float(let d): return Array("<real>\(pythonRepr(d))</real>".utf8)
        case .date(let d): return Array("<date>\(ISO8601.format(d))</date>".utf8)
        case .string(let s):
            guard let escaped = xmlEscaped(Array(s.utf8)) else { return nil }
            return Array("<string>".utf8) + escaped + Array("</string>".utf8)
        }
    }

    /// The text escaped as `XMLEscaping` does, or nil when XML 1.0 cannot carry it.
    public static func xmlEscaped(_ utf8: [UInt8]) -> [UInt8]? {
        utf8.withView { text -> [UInt8]? in
            guard XMLEscaping.isCarriable(text) else { return nil }
            var out: [UInt8] = []
            out.reserveCapacity(text.count)
            XMLEscaping.forEachEscaped(text) { out.append($0) }
            return out
        }
    }

    /// Python's `repr(float)`: the shortest digits that read back to the same double (Swift's
    /// `description` finds the same digits), laid out as Python does: positional when the decimal
    /// exponent is in [-4, 16), with `.0` on whole numbers; otherwise `d.ddde+XX`.
    public static func pythonRepr(_ d: Double) -> String {
        if d.isNaN { return "nan" }
        if d.isInfinite { return d < 0 ? "-inf" : "inf" }
        if d == 0 { return d.sign == .minus ? "-0.0" : "0.0" }
        let text = Swift.abs(d).description
        var mantissa = Substring(text)
        var exponent = 0
        if let e = text.firstIndex(where: { $0 == "e" || $0 == "E" }) {
            mantissa = text[..<e]
            exponent = Int(text[text.index(after: e)...])!
        }
        let parts = mantissa.split(separator: ".", omittingEmptySubsequences: false)
        let integerPart = parts[0]
        let fraction = parts.count > 1 ? parts[1] : ""
        var digits = Array(integerPart + fraction)
        var point = integerPart.count + exponent  // value = 0.d1d2... x 10^point
        while digits.first == "0" { digits.removeFirst(); point -= 1 }
        while digits.last == "0" { digits.removeLast() }
        let sign = d < 0 ? "-" : ""
        let n = digits.count
        if point > -4 && point <= 16 {
            if point <= 0 { return sign + "0." + String(repeating: "0", count: -point) + String(digits) }
            if point >= n { return sign + String(digits) + String(repeating: "0", count: point - n) + ".0" }
            return sign + String(digits[0..<point]) + "." + String(digits[point...])
        }
        let e = point - 1
        let mant = n == 1 ? String(digits) : String(digits[0]) + "." + String(digits[1...])
        let expDigits = String(Swift.abs(e))
        return sign + mant + "e" + (e < 0 ? "-" : "+") + (expDigits.count < 2 ? "0" : "") + expDigits
    }
}

extension ByteWriter {
    /// An object's marker with its count (`PlistEncoding.sizeHeaderLength` bytes).
    @inlinable @inline(__always)
    public mutating func writeSizeHeader(token: UInt8, count: Int) {
        if count < 15 { return write(token | UInt8(count)) }
        write(token | 0x0F)
        let width = PlistEncoding.byteWidth(for: count)
        write(0x10 | UInt8(width.trailingZeroBitCount))
        write(bigEndian: UInt64(count), width: width)
    }
}
