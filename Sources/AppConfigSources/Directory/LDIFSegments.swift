import AppConfigCore
import CByteScan
import CXXHash

/// An LDIF file's records as a night compares them with the night before's: segments that each
/// end just past a blank line (one no continued line follows), with the line each starts on and
/// the XXH3-64 of its bytes. A blank line ends an entry and leaves the reader as it was before
/// it (no entry open, nothing refused), so a segment's bytes read alone give what they gave in
/// the whole file, their lines shifted; a segment whose bytes were there last night need not be
/// read again (`IncrementalDirectory`).
public struct LDIFSegments: Sendable, Equatable {
    /// Per segment, the line it starts on (1 for the first).
    public var startLines: [UInt32] = []
    /// Per segment, the XXH3-64 of its bytes.
    public var hashes: [UInt64] = []
    /// Per segment, the byte just past it (tonight's file only: an image keeps no offsets).
    var ends: [Int] = []

    public init() {}

    init(startLines: [UInt32], hashes: [UInt64]) {
        self.startLines = startLines
        self.hashes = hashes
    }

    public var count: Int { hashes.count }

    func range(_ k: Int) -> Range<Int> { (k == 0 ? 0 : ends[k - 1])..<ends[k] }

    /// The segment that holds `line`: the last that starts on or before it.
    func segment(ofLine line: Int) -> Int {
        var (low, high) = (0, startLines.count)
        while high - low > 1 {
            let mid = (low + high) / 2
            if Int(startLines[mid]) <= line { low = mid } else { high = mid }
        }
        return low
    }

    /// The segments of `bytes` (tests, and text held whole), found and hashed in `parts` parts,
    /// one per core (the parts split where a segment ends).
    package static func scan(_ bytes: ByteView, parts: Int = Parallelism.threads) -> LDIFSegments {
        scan(bytes, parts: parts, window: .max / 4, mapping: nil)
    }

    /// The segments of the file at `path`, in windows of about `window` bytes (a few megabytes of
    /// memory per core, not the export's size), in `parts` parts on as many cores: from the file
    /// mapped, each window's pages let go once hashed, else (`mapped` false, or it cannot be
    /// mapped) read into a buffer a window at a time. Why mapped: the kernel's copy of each
    /// window into a buffer was a third of the scan (10M users, 4.2 GB: 1.0 of 2.8 CPU-s).
    package static func scan(file path: String, parts: Int = Parallelism.threads, window: Int = 4 << 20, mapped: Bool = true) throws(FileReadError) -> LDIFSegments {
        if mapped, let mapping = try MappedFile(path, limit: Int.max) {
            let segments = scan(mapping.view, parts: mapping.bytes.count >= 8 << 20 ? parts : 1, window: window, mapping: mapping)
            mapping.unmap()
            if let change = mapping.change() { throw change }
            return segments
        }
        let file = try PartedFile(path, parts: { size in size >= 8 << 20 ? parts : 1 }, limit: Int.max) { nextSegmentStart($0, from: 1) }
        var pieces = [Piece](repeating: Piece(), count: file.partCount)
        var failures = [FileReadError?](repeating: nil, count: file.partCount)
        pieces.withWorkerSlots { pieces in
            failures.withWorkerSlots { failures in
                Parallelism.concurrentPerform(iterations: file.partCount) { p in
                    var offset = file.bounds[p]
                    do throws(FileReadError) {
                        try file.readWindows(part: p, window: window, lastRecordEnd: lastSegmentStart) { window, _ in
                            pieces[p].scan(window.view, at: offset)
                            offset += window.count
                            return true
                        }
                    } catch {
                        failures[p] = error
                    }
                }
            }
        }
        if let failure = failures.lazy.compactMap({ $0 }).first { throw failure }
        return joined(pieces)
    }

    /// The segments of `bytes` in `parts` parts, each a window at a time: cut where the last
    /// segment in it starts (grown while none does) and hashed. From a file's `mapping`, each
    /// window's pages are let go once hashed (the file's cached pages stay; mapped whole and
    /// kept, they counted as the process's memory, the file's size), and the next window is asked
    /// for meanwhile: read from the disk while this one is hashed.
    private static func scan(_ bytes: ByteView, parts: Int, window: Int, mapping: MappedFile?) -> LDIFSegments {
        let n = bytes.count
        guard n > 0 else { return LDIFSegments() }
        var splits = [0]
        for p in 1..<max(1, parts) {
            if let start = nextSegmentStart(bytes, from: max(splits.last! + 1, n * p / parts)) { splits.append(start) }
        }
        splits.append(n)
        var pieces = [Piece](repeating: Piece(), count: splits.count - 1)
        pieces.withWorkerSlots { pieces in
            Parallelism.concurrentPerform(iterations: splits.count - 1) { p in
                var at = splits[p]
                let end = splits[p + 1]
                pieces[p].reserve(bytes: end - at)
                var size = max(window, 1)
                while at < end {
                    var cut = end
                    if at + size < end {
                        guard let last = lastSegmentStart(bytes[view: at..<(at + size)]) else { size *= 2; continue }
                        cut = at + last
                    }
                    mapping?.willNeed(cut..<min(end, cut + size))
                    pieces[p].scan(bytes[view: at..<cut], at: at)
                    mapping?.release(at..<cut)
                    at = cut
                }
            }
        }
        return joined(pieces)
    }

    /// One part's segments: their ends (in the file), their newlines and their hashes.
    struct Piece {
        var ends: [Int] = []
        var lines: [UInt32] = []
        var hashes: [UInt64] = []

        /// Room for the segments of `bytes` bytes, at one segment a 128 (an entry is a few hundred):
        /// grown by doubling, the lists were copied a dozen times (10M users: 0.4 CPU-s). Room
        /// never written takes no memory.
        mutating func reserve(bytes: Int) {
            let room = bytes / 128 + 16
            ends.reserveCapacity(room)
            lines.reserveCapacity(room)
            hashes.reserveCapacity(room)
        }

        /// The segments of `bytes`, which start one (at `offset` in the file) and end where one
        /// ends (the file's end, a part's or a window's, each cut where a segment starts).
        mutating func scan(_ bytes: ByteView, at offset: Int) {
            let n = bytes.count
            let cap = 4096
            var found = [Int](repeating: 0, count: cap), newlines = [UInt32](repeating: 0, count: cap + 1)
            var at = 0
            bytes.withUnsafeBufferPointer { b in
                while at < n {
                    var stop = 0
                    let count = found.withUnsafeMutableBufferPointer { e in
                        newlines.withUnsafeMutableBufferPointer { l in appconfig_ldif_segments(b.baseAddress, n, at, e.baseAddress, l.baseAddress, cap, &stop) }
                    }
                    for k in 0..<count {
                        let start = k == 0 ? at : found[k - 1]
                        ends.append(offset + found[k])
                        lines.append(newlines[k])
                        hashes.append(XXH3_64bits(b.baseAddress! + start, found[k] - start))
                    }
                    let done = count > 0 ? found[count - 1] : at
                    if stop >= n {
                        // The rest, after the last blank line: a segment of its own.
                        if done < n {
                            ends.append(offset + n)
                            lines.append(count < cap ? newlines[count] : 0)
                            hashes.append(XXH3_64bits(b.baseAddress! + done, n - done))
                        }
                        break
                    }
                    at = stop
                }
            }
        }
    }

    static func joined(_ pieces: [Piece]) -> LDIFSegments {
        let joined = RecordMatch.joined(pieces.map { ($0.ends, $0.lines, $0.hashes) }, firstLine: 1)
        var out = LDIFSegments(startLines: joined.startLines, hashes: joined.hashes)
        out.ends = joined.ends
        return out
    }

    /// The last segment start in `b` (nil when none): where a window of a file read in parts is cut.
    static func lastSegmentStart(_ b: ByteView) -> Int? {
        var i = b.count - 1
        while i >= 2 {
            if startsSegment(b, at: i) { return i }
            i -= 1
        }
        return nil
    }

    /// The first segment start after `from`, nil when none.
    static func nextSegmentStart(_ b: ByteView, from: Int) -> Int? {
        var i = max(from, 2)
        while i < b.count {
            if startsSegment(b, at: i) { return i }
            i += 1
        }
        return nil
    }

    /// Whether a segment starts at `i`: a blank line's newline (LF or CRLF, after a newline) ends
    /// just before it, and it is not a space (which would continue that line). The bytes before
    /// `i` are needed to tell (`appconfig_ldif_segments` knows a segment's start besides).
    @inline(__always)
    static func startsSegment(_ b: ByteView, at i: Int) -> Bool {
        b[i - 1] == 0x0A && b[i] != 0x20 && (b[i - 2] == 0x0A || (b[i - 2] == 0x0D && i >= 3 && b[i - 3] == 0x0A))
    }
}
