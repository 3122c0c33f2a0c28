import AppConfigBytes
import AppConfigSpec

/// Where a device's plist goes: `<folder>/<name>.plist`, the folder one of 4096 chosen by a hash of
/// the device key (no folder holds millions of files), the name the key made safe for any file
/// system: bytes outside `A-Z a-z 0-9 . _ -` become `%XX`, as does a leading `.`, so `/`, `..`,
/// control characters and newlines cannot appear and the mapping stays one to one. A key longer
/// than 90 bytes once encoded is cut and given a hash suffix.
public enum OutputNames {
    public static let folderCount = 4096
    static let maxNameLength = 90

    /// FNV-1a 64 of the device key: stable across runs, machines and shard counts.
    public static func hash(_ key: UnsafeBufferPointer<UInt8>) -> UInt64 { fnv1a(key) }

    /// A folder's lower-case hex digit.
    @inline(__always) private static func hexDigit(_ d: UInt8) -> UInt8 { d < 10 ? 0x30 + d : 0x57 + d }

    @inline(__always) private static func isSafe(_ b: UInt8) -> Bool {
        (b >= 0x30 && b <= 0x39) || (b | 0x20 >= 0x61 && b | 0x20 <= 0x7A) || b == UInt8(ascii: "_") || b == UInt8(ascii: "-") || b == UInt8(ascii: ".")
    }

    /// Runs of safe bytes are appended whole (`appendEscapingRuns`): every device's name is made
    /// two or three times per run (its tar member, its index and manifest lines).
    static func appendSafeName(_ key: UnsafeBufferPointer<UInt8>, hash h: UInt64, to out: inout [UInt8]) {
        let start = out.count
        appendEscapingRuns(key, to: &out, where: { b, i in !isSafe(b) || (i == 0 && b == UInt8(ascii: ".")) }, escape: appendPercentEscaped)
        if out.count - start > maxNameLength {
            let suffix = Array(String(h, radix: 16).utf8)
            out.removeSubrange((start + maxNameLength - 1 - suffix.count)...)
            out.append(UInt8(ascii: "~"))
            out += suffix
        }
    }

    /// Appends `folder/name.plist` for a key: the path of its plist in the output folder or the tar
    /// (`extension` gives another ending: a DDM device's declaration set is `.json`).
    public static func appendRelativePath(_ key: UnsafeBufferPointer<UInt8>, extension ending: StaticString = ".plist", to out: inout [UInt8]) {
        let h = hash(key)
        let folder = Int(h % UInt64(folderCount))
        out.append(hexDigit(UInt8(folder >> 8)))
        out.append(hexDigit(UInt8((folder >> 4) & 0xF)))
        out.append(hexDigit(UInt8(folder & 0xF)))
        out.append(UInt8(ascii: "/"))
        appendSafeName(key, hash: h, to: &out)
        out.append(contentsOf: UnsafeBufferPointer(start: ending.utf8Start, count: ending.utf8CodeUnitCount))
    }

    /// The path of a device's plist relative to the output folder (or inside the tar).
    public static func relativePath(_ key: UnsafeBufferPointer<UInt8>, extension ending: StaticString = ".plist") -> String {
        var out: [UInt8] = []
        appendRelativePath(key, extension: ending, to: &out)
        return String(decoding: out, as: UTF8.self)
    }
}
