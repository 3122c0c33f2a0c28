import AppConfigCore
import AppConfigOutput
import AppConfigSpec
import Digest
import Foundation

/// A generation's account of itself, written last (it marks the generation complete): for every
/// device its key, its output path, the SHA-256 of its output bytes and (version 3 on) the digest of
/// its inputs (`InputDigest`: what the program read for it), and the run's program hash and input
/// fingerprints. Text, one device a line, read with no per-line allocation beyond the table.
///
/// ```
/// appconfig-manifest 4
/// program 009a58335861d554
/// spec 5123 xxh3-128:<32 hex digits>
/// ...
///
/// <sha256>\t<path>\t<device key, %-escaped>\t<input digest, 16 hex digits, or ->
/// end\t<count>\txxh3-128:<XXH3-128 of the device lines>
/// ```
///
/// Versions 2 and 3 ended with the device lines' SHA-256 (64 hex digits); 3 and 4 have input
/// digests. An unkeyed hash guards against a file cut short or damaged, not against an editor,
/// who could hash again: XXH3 does that at memory speed, where SHA-256 cost a night a pass over
/// last night's manifest and another over tonight's.
package final class Manifest: PreviousDigests, @unchecked Sendable {
    /// `program`, `delivery`, and per input (`spec`, `values`, `inventory`, `directory`) "SIZE xxh3-128:HEX".
    package let header: [(name: String, value: String)]
    /// The devices' keys, back to back; each entry's key is a range of it. (Paths are checked
    /// when read, and kept only when asked for: a device's path follows from its key, but for DDM
    /// it names the assets its set names.)
    /// `keys` and `entries` change only while one thread has the manifest (read, then
    /// `releaseKeys`); after that every core reads them per device, and the run-time exclusivity
    /// checks of a class's properties were a call per read (`digest(at:)`, `inputs(at:)`).
    @exclusivity(unchecked) private var keys: [UInt8]
    private let paths: [UInt8]
    @exclusivity(unchecked) private var entries: [Entry]
    /// Per entry its path in `paths`: empty unless paths are kept.
    private let pathRanges: [Range<Int>]
    /// Its device lines in the file it was read from (a version 4 manifest read from a file).
    private(set) var lines: ManifestLines?

    /// 48 bytes a device (a night holds last night's whole fleet of them): the key's place in
    /// `keys` in 32 bits (`parse` refuses more than 4 GiB of keys), the paths apart.
    struct Entry {
        var digest: SHA256Digest
        /// The digest of the device's inputs (`InputDigest.none`: not known).
        var inputs: UInt64
        var keyStart: UInt32, keyCount: UInt32

        init(key: Range<Int>, digest: SHA256Digest, inputs: UInt64 = InputDigest.none) {
            (self.digest, self.inputs) = (digest, inputs)
            (keyStart, keyCount) = (UInt32(key.lowerBound), UInt32(key.count))
        }

        var key: Range<Int> { Int(keyStart)..<(Int(keyStart) + Int(keyCount)) }

        /// Whether the key is kept (`releaseKeys(matchedBy:)` lets the others go).
        var hasKey: Bool { keyStart != .max }
    }

    /// Lets go of the keys of the entries `matched` names (by tonight's positions, from
    /// `entryIndices`): tonight's devices have those keys in the inventory. The others' (the
    /// devices tonight lacks, which the new manifest and `changes.jsonl` still name) are kept.
    /// Once, before anything reads a key it lets go (`withKey(at:)` refuses one).
    func releaseKeys(matchedBy matched: [Int32]) {
        var isMatched = [Bool](repeating: false, count: entries.count)
        for e in matched where e >= 0 { isMatched[Int(e)] = true }
        var kept: [UInt8] = []
        for i in entries.indices where entries[i].hasKey {
            if isMatched[i] {
                (entries[i].keyStart, entries[i].keyCount) = (.max, 0)
            } else {
                let key = entries[i].key
                entries[i].keyStart = UInt32(kept.count)
                kept += keys[key]
            }
        }
        keys = kept
    }

    package var count: Int { entries.count }

    init(header: [(String, String)], keys: [UInt8], paths: [UInt8] = [], pathRanges: [Range<Int>] = [], entries: [Entry]) {
        self.header = header
        self.keys = keys
        self.paths = paths
        self.pathRanges = pathRanges
        self.entries = entries
    }

    /// For each of `count` keys in device-key order (`key(i)`, strictly ascending, as a render's
    /// rows are), the entry with that key or -1: the two lists merged, in a part per core, each
    /// part starting where a binary search puts its first key. What a night finds last night's
    /// devices with: no table of the entries to build or keep.
    /// `prefetch(i, step)`: starts reading key `i` (step 0: where it is, 1: its bytes), called 8
    /// and 4 keys ahead: tonight's keys are scattered over the inventory.
    func entryIndices(count: Int, key: (Int) -> ByteView, prefetch: (Int, Int) -> Void = { _, _ in }) -> [Int32] {
        precondition(entries.allSatisfy(\.hasKey), "the keys are whole")
        return keys.withView { t in
            entries.withView { entries in
                func entryKey(_ e: Int) -> ByteView { t[view: entries[e].key] }
                return [Int32](unsafeUninitializedCapacity: count) { out, initialized in
                    let out = WorkerSlots(out)
                    forEachRange(count, parallelFrom: 65_536) { _, range in
                        guard let first = range.first else { return }
                        // The first entry not before the part's first key.
                        var lo = 0, hi = entries.count
                        while lo < hi {
                            let mid = (lo + hi) / 2
                            if entryKey(mid).precedes(key(first)) { lo = mid + 1 } else { hi = mid }
                        }
                        var e = lo
                        for i in range {
                            if i + 8 < range.upperBound { prefetch(i + 8, 0) }
                            if i + 4 < range.upperBound { prefetch(i + 4, 1) }
                            let k = key(i)
                            // One comparison an entry: before the key, the key, or after it.
                            var order = 1
                            while e < entries.count {
                                order = bytesCompare(entryKey(e), k)
                                if order >= 0 { break }
                                e += 1
                            }
                            out[i] = e < entries.count && order == 0 ? Int32(e) : -1
                        }
                    }
                    initialized = count
                }
            }
        }
    }

    /// Entry `i`'s key, for as long as `body` runs.
    func withKey<R>(at i: Int, _ body: (ByteView) -> R) -> R {
        precondition(entries[i].hasKey, "a key let go (releaseKeys)")
        return keys.withView { body($0[view: entries[i].key]) }
    }

    package func digest(at i: Int) -> SHA256Digest { entries[i].digest }

    func inputs(at i: Int) -> UInt64 { entries[i].inputs }

    /// The manifests this version reads: 1 (no end line), 2 (an end line), 3 (input digests), 4
    /// (the end line's check by XXH3-128); it writes the last.
    static let versionLines = (1...4).map { "appconfig-manifest \($0)" }

    /// Entry `i`'s path as written (loaded with `keepsPaths`; else empty).
    func path(at i: Int) -> ArraySlice<UInt8> { pathRanges.isEmpty ? [] : paths[pathRanges[i]] }

    // MARK: Reading

    /// Reads a manifest from a generation folder, a manifest file, or a tar written by appconfig
    /// (the manifest beside it, `FILE.manifest.tsv`, else its member).
    package static func load(_ path: String, keepsPaths: Bool = false) throws(Problem) -> Manifest {
        guard let generation = PublishedGeneration(at: path) else {
            throw Problem(InputCode.read, at: Location(file: path), "cannot read \(path): No such file or directory")
        }
        return try load(generation, keepsPaths: keepsPaths)
    }

    /// Reads the manifest of a published generation, from its file or its archive.
    package static func load(_ generation: PublishedGeneration, keepsPaths: Bool = false) throws(Problem) -> Manifest {
        switch generation.manifest {
        case .file(let file): return try parse(file: file, keepsPaths: keepsPaths)
        case .archiveMember(let archive): return try parse(try Tar.member(named: OutputNames.manifestFile, in: archive), file: archive, keepsPaths: keepsPaths)
        }
    }

    /// The header alone of a manifest file, read from its first 64 KiB: nil when it is not a
    /// manifest's.
    static func header(of file: String) -> [(name: String, value: String)]? {
        let fd = open(file, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var head = [UInt8](repeating: 0, count: 1 << 16)
        let n = Glibc.read(fd, &head, head.count)
        guard n > 0 else { return nil }
        return header(in: head[..<n])
    }

    /// The header alone of a manifest's first bytes (64 KiB hold any header): nil when they are
    /// not a manifest's, or do not hold its whole header.
    static func header(in head: ArraySlice<UInt8>) -> [(name: String, value: String)]? {
        var lines = head.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)[...]
        guard let version = lines.popFirst(), versionLines.contains(String(decoding: version, as: UTF8.self)) else { return nil }
        var header: [(String, String)] = []
        while let line = lines.popFirst() {
            if line.isEmpty { return lines.isEmpty ? nil : header }  // the blank line that ends it, read whole
            let text = String(decoding: line, as: UTF8.self)
            guard let space = text.firstIndex(of: " ") else { return nil }
            header.append((String(text[..<space]), String(text[text.index(after: space)...])))
        }
        return nil
    }

    /// Whether a manifest file is whole as a run wrote it: version 2 or later, its end line last, counting
    /// its device lines and holding their check (refused as `load` refuses it otherwise). Mapped
    /// and hashed once, without reading its entries: for a night that only needs to trust it.
    static func checkWhole(_ file: String) throws(Problem) {
        func refuse(_ why: String) -> Problem { Problem(.manifestSyntax, at: Location(file: file), why) }
        let mapping: MappedFile?
        do { mapping = try MappedFile(file, limit: Int.max) } catch { throw error.problem }
        guard let mapping else { throw refuse("the manifest is empty") }
        let b = mapping.view
        guard let v = versionLines.firstIndex(where: { b.starts(with: ($0 + "\n").utf8) }), v >= 1 else {
            throw refuse("not a version 2, 3 or 4 manifest: it has no end line to check")
        }
        // The header ends at the first blank line; the end line is the last line.
        var linesStart = 0
        for i in 1..<b.count where b[i] == 0x0A && b[i - 1] == 0x0A { linesStart = i + 1; break }
        guard linesStart > 0, b.last == 0x0A else { throw refuse("the manifest has no end line: it was cut short") }
        var endStart = b.count - 1
        while endStart > linesStart && b[endStart - 1] != 0x0A { endStart -= 1 }
        let last = b[view: endStart..<(b.count - 1)]
        guard last.starts(with: "end\t".utf8) else { throw refuse("the manifest has no end line: it was cut short") }
        guard let (count, check) = endLine(last, version: v + 1) else { throw refuse(endLineForm(version: v + 1)) }
        var lines = 0
        var at = linesStart
        while at < endStart, let nl = b.firstIndex(of: 0x0A, from: at), nl < endStart {
            lines += 1
            at = nl + 1
        }
        guard lines == count else { throw refuse("the end line counts \(count) devices, the manifest lists \(lines): it was cut short or edited") }
        guard check.matches(b[view: linesStart..<endStart]) else {
            throw refuse("the device lines do not match the end line's \(check.name): the manifest was edited or damaged")
        }
    }

    /// An end line's count and check (`end`, count, check, tab-separated; no line break), nil
    /// when the line is not one as `version` writes it (a version 4 manifest whose end line holds
    /// a SHA-256 was edited): refused with `endLineForm`.
    static func endLine(_ l: ByteView, version: Int) -> (count: Int, check: EndCheck)? {
        let fields = l.split(separator: 0x09, omittingEmptySubsequences: false)
        guard fields.count == 3, fields[0].elementsEqual("end".utf8), let count = Int(String(decoding: fields[1], as: UTF8.self)),
              let check = EndCheck(l[view: fields[2].startIndex..<fields[2].endIndex]), check.isXXH3 == (version >= 4) else { return nil }
        return (count, check)
    }

    /// Why an end line was refused.
    static func endLineForm(version: Int) -> String {
        "an end line is end, count and \(version >= 4 ? "xxh3-128:HEX" : "SHA-256"), tab-separated"
    }

    /// What an end line holds of the device lines: their SHA-256 (versions 2 and 3) or their
    /// XXH3-128 (`xxh3-128:` and 32 hex digits, version 4).
    enum EndCheck: Equatable {
        case sha256(SHA256Digest)
        case xxh3(String)

        init?(_ field: ByteView) {
            let prefix = "xxh3-128:".utf8
            if field.starts(with: prefix) {
                let hex = field.dropFirst(prefix.count)
                guard hex.count == 32, hex.allSatisfy({ hexDigitValue($0) != nil && !(0x41...0x46).contains($0) }) else { return nil }
                self = .xxh3(String(decoding: hex, as: UTF8.self))
            } else {
                guard let digest = SHA256Digest(hex: field) else { return nil }
                self = .sha256(digest)
            }
        }

        var isXXH3: Bool { if case .xxh3 = self { true } else { false } }

        var name: String {
            switch self {
            case .sha256: "SHA-256"
            case .xxh3: "XXH3-128"
            }
        }

        var text: String {
            switch self {
            case .sha256(let d): d.hex
            case .xxh3(let hex): "xxh3-128:" + hex
            }
        }

        func matches(_ lines: ByteView) -> Bool {
            let check = LinesCheck(version: isXXH3 ? 4 : 3)
            check.update(lines)
            return check.finish() == self
        }
    }

    /// A manifest file read in windows (never whole: its bytes would stand beside a night's
    /// inputs). Its first line first: a file that is no manifest (a 3 GiB archive given by
    /// mistake) is refused before it is read.
    private static func parse(file path: String, keepsPaths: Bool) throws(Problem) -> Manifest {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        var size = 0
        if fd >= 0 {
            var head = [UInt8](repeating: 0, count: 21)
            let n = Glibc.read(fd, &head, head.count)
            var info = stat()
            if fstat(fd, &info) == 0 { size = Int(info.st_size) }
            close(fd)
            let versions = versionLines.map { Array(($0 + "\n").utf8) }
            if n >= 0 && !versions.contains(where: { head[..<n].elementsEqual($0) }) {
                throw Problem(.manifestSyntax, at: Location(file: path, line: 1), "not an appconfig manifest (version 1 to 4)")
            }
        }
        var parser = ManifestParser(keepsPaths: keepsPaths, bytes: size)
        let before = FileState(path: path)
        do {
            _ = try forEachBlock(ofFile: path) { window in
                if parser.failure == nil { _ = parser.feed(ByteView(window)) }
            }
        } catch {
            throw error.problem
        }
        let manifest = try parser.finish(file: path)
        if parser.isVersion4 { manifest.lines = ManifestLines(path: path, starts: parser.lineStarts, read: before) }
        return manifest
    }

    static func parse(_ bytes: [UInt8], file: String, keepsPaths: Bool = false) throws(Problem) -> Manifest {
        var parser = ManifestParser(keepsPaths: keepsPaths, bytes: bytes.count)
        _ = bytes.withView { parser.feed($0) }
        return try parser.finish(file: file)
    }

    static func unescape(_ s: ByteView, into out: inout [UInt8]) -> Bool {
        // Most keys have no escape: appended whole.
        guard s.firstIndex(of: UInt8(ascii: "%"), from: 0) != nil else {
            out.append(s)
            return true
        }
        var i = s.startIndex
        while i < s.endIndex {
            if s[i] == UInt8(ascii: "%") {
                guard i + 2 < s.endIndex, let h = hexDigitValue(s[i + 1]), let l = hexDigitValue(s[i + 2]) else { return false }
                out.append(h << 4 | l)
                i += 3
            } else {
                out.append(s[i])
                i += 1
            }
        }
        return true
    }
}

/// Size and XXH3-128 of an input file (`SIZE xxh3-128:HEX`): what the manifest records of each
/// input. The algorithm is named, so a fingerprint made another way (SHA-256, before) never equals one.
enum Fingerprint {
    static func of(_ path: String) -> String {
        let hasher = XXH3Hasher()
        guard let size = try? forEachBlock(ofFile: path, hasher.update) else { return "-" }
        return "\(size) xxh3-128:\(hasher.finish())"
    }
}
