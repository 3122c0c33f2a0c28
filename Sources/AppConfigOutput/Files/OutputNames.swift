import AppConfigCore

/// Where a device's plist goes: `<folder>/<name>.plist`, the folder one of 4096 chosen by a hash of
/// the device key (no folder holds millions of files), the name the key made safe for any file
/// system: bytes outside `A-Z a-z 0-9 . _ -` become `%XX`, as does a leading `.`, so `/`, `..`,
/// control characters and newlines cannot appear and the mapping stays one to one. A key longer
/// than 90 bytes once encoded is cut and given a hash suffix.
public enum OutputNames {
    /// The closing file that marks a generation complete (written last), and that a later run
    /// reads to compare with.
    public static let manifestFile = "manifest.tsv"
    package static let folderCount = 4096
    package static let maxNameLength = 90

    /// FNV-1a 64 of the device key: stable across runs, machines and shard counts.
    package static func hash(_ key: ByteView) -> UInt64 { fnv1a(key) }

    @inline(__always) private static func isSafe(_ b: UInt8) -> Bool {
        (b >= 0x30 && b <= 0x39) || (b | 0x20 >= 0x61 && b | 0x20 <= 0x7A) || b == UInt8(ascii: "_") || b == UInt8(ascii: "-") || b == UInt8(ascii: ".")
    }

    /// Runs of safe bytes are appended whole (`appendEscapingRuns`): every device's name is made
    /// two or three times per run (its tar member, its index and manifest lines).
    package static func appendSafeName(_ key: ByteView, hash h: UInt64, to out: inout [UInt8]) {
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
    /// (`extension` gives another ending: a DDM device's declaration set is `.json`). A key that
    /// needs no escape (most: serial numbers, UDIDs) has its path made on the stack and appended at
    /// once (appended piece by piece, a path cost hundreds of instructions).
    package static func appendRelativePath(_ key: ByteView, extension ending: StaticString = ".plist", to out: inout [UInt8]) {
        appendRelativePath(key, name: PathName(key: key), extension: ending, to: &out)
    }

    /// `appendRelativePath` with the key's `PathName` made already.
    @inline(__always)
    package static func appendRelativePath(_ key: ByteView, name: PathName, extension ending: StaticString, to out: inout [UInt8]) {
        guard name.isOwn else {
            appendEscapedRelativePath(key, hash: hash(key), extension: ending, to: &out)
            return
        }
        out.append(room: 4 + maxNameLength + ending.utf8CodeUnitCount) { $0.writeSafeRelativePath(key, folder: name.folder, extension: ending) }
    }

    /// What a device's path holds besides its key and ending: its folder, and whether the key is
    /// its own name (`isOwnName`). Made once a device, when it is rendered, and kept with its
    /// digest (`DigestSlots`): its tar member, index line and manifest line each made it again (the
    /// key's FNV hash, a multiply per byte, and its bytes checked).
    public struct PathName: Equatable, Sendable {
        public let folder: UInt16
        public let isOwn: Bool

        @inline(__always)
        public init(key: ByteView) {
            folder = UInt16(truncatingIfNeeded: OutputNames.hash(key) % UInt64(folderCount))
            isOwn = isOwnName(key)
        }

        /// Two bytes: the folder, 0x4000 for an own name, 0x8000 always (so that 0 is none).
        package var bits: UInt16 { 0x8000 | (isOwn ? 0x4000 : 0) | folder }

        package init?(bits: UInt16) {
            guard bits & 0x8000 != 0 else { return nil }
            folder = bits & 0x0FFF
            isOwn = bits & 0x4000 != 0
        }
    }

    /// Whether a key is its own name (`writeSafeRelativePath` takes it): no escape, not too long.
    /// Such a key needs no escape in JSON or in the manifest either.
    @inline(__always)
    package static func isOwnName(_ key: ByteView) -> Bool { key.count <= maxNameLength && isSafeName(key) }

    /// `appendRelativePath` through the escaping path, for any key (the tests' reference too).
    package static func appendEscapedRelativePath(_ key: ByteView, hash h: UInt64, extension ending: StaticString, to out: inout [UInt8]) {
        out.append(room: 4) { $0.writeFolder(UInt16(truncatingIfNeeded: h % UInt64(folderCount))) }
        appendSafeName(key, hash: h, to: &out)
        out.append(ending)
    }

    /// Whether a key is its own safe name: every byte `isSafe`, the first not `.`. Eight bytes at a
    /// time (the last eight overlapping when the count is not a multiple of eight): each byte's
    /// classes as SWAR range tests (`ByteRangeMarks`).
    package static func isSafeName(_ key: ByteView) -> Bool {
        guard key.count > 0 else { return true }
        if key[0] == UInt8(ascii: ".") { return false }
        guard key.count >= 8 else { return key.allSatisfy(isSafe) }
        @inline(__always) func safe(_ w: UInt64) -> Bool {
            let high: UInt64 = 0x8080_8080_8080_8080
            let classes = safeLetters.marks(w) | safeDigits.marks(w) | safeDashAndDot.marks(w) | safeUnderscore.marks(w)
            return w & high == 0 && classes == high
        }
        var i = 0
        while i + 8 <= key.count {
            guard safe(key.word(at: i)) else { return false }
            i += 8
        }
        return i == key.count || safe(key.word(at: key.count - 8))
    }

    private static let safeLetters = ByteRangeMarks(0x61, 0x7A, foldingCase: true)
    private static let safeDigits = ByteRangeMarks(0x30, 0x39)
    private static let safeDashAndDot = ByteRangeMarks(0x2D, 0x2E)
    private static let safeUnderscore = ByteRangeMarks(0x5F, 0x5F)

    /// The path of a device's plist relative to the output folder (or inside the tar).
    package static func relativePath(_ key: ByteView, extension ending: StaticString = ".plist") -> String {
        var out: [UInt8] = []
        appendRelativePath(key, extension: ending, to: &out)
        return String(decoding: out, as: UTF8.self)
    }
}

extension ByteWriter {
    /// `folder/key.ext` for a key that `OutputNames.isOwnName` (at most `4 + maxNameLength + ext` bytes).
    @inline(__always)
    package mutating func writeSafeRelativePath(_ key: ByteView, folder: UInt16, extension ending: StaticString) {
        writeFolder(folder)
        write(key)
        write(ending)
    }

    /// The four bytes `fff/` of a key's folder.
    @inline(__always)
    package mutating func writeFolder(_ folder: UInt16) {
        write(hex: UInt64(folder), digits: 3)
        write(UInt8(ascii: "/"))
    }
}
