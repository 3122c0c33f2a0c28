import AppConfigCore
import AppConfigOutput
import Digest

/// Reads a manifest a line at a time, from one buffer or from a file's windows: a night reads last
/// night's manifest beside tonight's inputs, and read whole its bytes (142 MB at a million
/// devices) stood beside theirs. The end line's check is taken over the device lines as they go.
struct ManifestParser {
    private let keepsPaths: Bool
    private var header: [(String, String)] = []
    private var entries: [Manifest.Entry] = []
    private var keys: [UInt8] = []
    private var paths: [UInt8] = []
    private var pathRanges: [Range<Int>] = []
    /// Lines read; where a refusal points.
    private var line = 0
    private(set) var failure: String?
    private var version = 0
    private var inHeader = true
    private var trailer: (count: Int, check: Manifest.EndCheck)?
    /// The device lines' check, as the version has it (from version 2).
    private var linesCheck: Manifest.LinesCheck?
    /// A line begun in one window and ended in a later one.
    private var pending: [UInt8] = []
    /// Where the next line starts in the bytes fed.
    private var offset = 0
    /// A version 4 manifest's: each device line's start, then the end line's (`ManifestLines`).
    private(set) var lineStarts: [Int] = []
    var isVersion4: Bool { version == 4 }

    /// `bytes`: about how many the manifest has (room ahead for its keys and entries).
    init(keepsPaths: Bool, bytes: Int) {
        self.keepsPaths = keepsPaths
        keys.reserveCapacity(bytes / 3)
        entries.reserveCapacity(bytes / 100)
        lineStarts.reserveCapacity(bytes / 100)
    }

    /// Reads the lines `window` ends, keeping its last, unended line for the next; false once the
    /// manifest is refused (`failure`).
    mutating func feed(_ window: ByteView) -> Bool {
        var start = 0
        if !pending.isEmpty {
            guard let nl = window.firstIndex(of: 0x0A) else { pending += window; return true }
            pending += window[view: 0..<nl]
            let ended = pending
            pending.removeAll(keepingCapacity: true)
            guard ended.withView({ take($0) }) else { return false }
            start = nl + 1
        }
        while start < window.count {
            guard let nl = window.firstIndex(of: 0x0A, from: start) else { pending += window[view: start...]; return true }
            guard take(window[view: start..<nl]) else { return false }
            start = nl + 1
        }
        return true
    }

    /// One line, without its line break.
    private mutating func take(_ l: ByteView) -> Bool {
        line += 1
        let lineStart = offset
        offset += l.count + 1
        if trailer != nil { failure = "a line after the manifest's end line"; return false }
        if inHeader {
            if line == 1 {
                // Version 1 (before the end line) is read as it is; 2 and later must end with their end line.
                guard let v = Manifest.versionLines.firstIndex(where: { l.elementsEqual($0.utf8) }) else {
                    failure = "not an appconfig manifest (version 1 to 4)"; return false
                }
                version = v + 1
                if version >= 2 { linesCheck = Manifest.LinesCheck(version: version) }
                return true
            }
            if l.isEmpty { inHeader = false; return true }
            let s = String(decoding: l, as: UTF8.self)
            guard let space = s.firstIndex(of: " ") else { failure = "a header line is NAME VALUE"; return false }
            header.append((String(s[..<space]), String(s[s.index(after: space)...])))
            return true
        }
        // A device line starts with 64 hex digits: its fourth byte is never the end line's tab
        // (tested first: the generic `starts(with:)` on every line was 0.1 s of a 10M night).
        if version >= 2 && l.count >= 4 && l[3] == 0x09 && l.starts(with: "end\t".utf8) {
            guard let end = Manifest.endLine(l, version: version) else { failure = Manifest.endLineForm(version: version); return false }
            trailer = end
            if isVersion4 { lineStarts.append(lineStart) }
            return true
        }
        // SHA256 \t path \t key (version 3 on: \t input digest)
        guard l.count > 66, l[64] == 0x09, let digest = SHA256Digest(hex: l[view: 0..<64]),
              let tab = l.firstIndex(of: 0x09, from: 65) else {
            failure = "a device line is SHA256, path and key, tab-separated"; return false
        }
        var keyEnd = l.endIndex, inputs = InputDigest.none
        if version >= 3 {
            // The last tab: the input digest after it is 16 digits or `-`, so the scan is short.
            var last = l.endIndex - 1
            while last > tab && l[last] != 0x09 { last -= 1 }
            guard last > tab, let value = InputDigest.parse(l[view: (last + 1)...]) else {
                failure = "a device line is SHA256, path, key and input digest, tab-separated"; return false
            }
            (keyEnd, inputs) = (last, value)
        }
        let keyStart = keys.count
        if tab == 65 || !Manifest.unescape(l[view: (tab + 1)..<keyEnd], into: &keys) {
            failure = "a device line with an empty path or a bad %-escape in its key"; return false
        }
        if keepsPaths {
            paths.append(l[view: 65..<tab])
            pathRanges.append((paths.count - (tab - 65))..<paths.count)
        }
        if keys.count > Int(UInt32.max) { failure = "the devices' keys come to more than 4 GiB"; return false }
        entries.append(Manifest.Entry(key: keyStart..<keys.count, digest: digest, inputs: inputs))
        if isVersion4 { lineStarts.append(lineStart) }
        linesCheck?.update(l)
        linesCheck?.update(ByteView("\n"))
        return true
    }

    /// The manifest read, or its refusal (`file`: the name the problem gives).
    mutating func finish(file: String) throws(Problem) -> Manifest {
        if failure == nil && !pending.isEmpty {
            let last = pending
            pending = []
            _ = last.withView { take($0) }
        }
        if failure == nil { check() }
        if line == 0 { failure = "the manifest is empty" }
        if let failure { throw Problem(.manifestSyntax, at: Location(file: file, line: line), failure) }
        return Manifest(header: header, keys: keys, paths: paths, pathRanges: pathRanges, entries: entries)
    }

    private mutating func check() {
        if inHeader && line > 1 { failure = "the manifest ends in its header"; return }
        if version >= 2 {
            guard let trailer else { failure = "the manifest has no end line: it was cut short"; return }
            if trailer.count != entries.count {
                failure = "the end line counts \(trailer.count) devices, the manifest lists \(entries.count): it was cut short or edited"
                return
            }
            if linesCheck?.finish() != trailer.check {
                failure = "the device lines do not match the end line's \(trailer.check.name): the manifest was edited or damaged"
                return
            }
        }
        // Changes are found by merging in key order: a manifest out of order is not one appconfig wrote.
        keys.withView { t in
            for j in entries.indices.dropFirst() where !t[view: entries[j - 1].key].precedes(t[view: entries[j].key]) {
                failure = "device lines not in device-key order (or a key twice) at device \(j + 1)"
                break
            }
        }
    }
}
