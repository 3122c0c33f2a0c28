import AppConfigCore
import Dispatch
import Foundation

/// LDIF content records (RFC 2849) into a user table: `version:`, comments, folded lines, base64
/// `::` values. Change records and `:<` URL values are refused, entry by entry, with the line.
/// As the LDAP default filter `(objectClass=person)` does, only people are users: entries whose
/// objectClass is person or one of its kinds (organizationalPerson, inetOrgPerson, user), or that
/// name no objectClass at all; domains, OUs and groups are passed over.
public enum LDIFReader {
    static let personClasses: [StaticString] = ["person", "organizationalperson", "inetorgperson", "user"]
    /// Read as groups when the map reads groups. Views of an arena kept for the process.
    static let groupClasses = AttributeMap.groupClasses.map { [classNames] in classNames.view(Array($0.utf8)) }
    private static let classNames = BufferArena()

    /// A large file is read in parts (one per core), each part in windows of `window` bytes into a
    /// buffer of its own, each parsed on its own core. A window of a megabyte is still in the
    /// core's caches when it is parsed after its read; one of 8 MB was not. `parts` overrides the
    /// parts (tests).
    /// `keepingSegments`: the file's segments (`LDIFSegments`) are found and hashed as each window
    /// is read, before it is parsed (while it is in the cache), and kept with the table for the
    /// night after (`IncrementalDirectory`). A part starts at an entry's blank line, so the
    /// segment on each side of a part's start is cut there: the night after reads those again.
    public static func load(_ path: String, map: AttributeMap = AttributeMap(), parts: Int? = nil, window: Int = 1 << 20,
                            keepingSegments: Bool = false) throws(Problem) -> UserTable {
        let cores = Parallelism.threads
        let file: PartedFile
        do {
            // Read in windows, never mapped whole: a file of any size (the users' values must fit in 4 GiB).
            // Its size from the open file: a link's own size (FileManager's) read a linked export on one core.
            file = try PartedFile(path, parts: { size in parts ?? (size >= parallelThreshold ? cores : 1) }, limit: Int.max) { entryEnd(in: $0) }
        } catch {
            throw error.problem
        }
        let sizes = zip(file.bounds, file.bounds.dropFirst()).map { $1 - $0 }
        var pieces = [LDIFSegments.Piece](repeating: LDIFSegments.Piece(), count: keepingSegments ? file.partCount : 0)
        let table = try pieces.withWorkerSlots { pieces throws(Problem) in
            try read(partSizes: sizes, file: path, map: map) { part, take throws(FileReadError) in
                var offset = file.bounds[part]
                try file.readWindows(part: part, window: window, lastRecordEnd: lastEntryEnd) { window, last in
                    if keepingSegments {
                        pieces[part].scan(window.view, at: offset)
                        offset += window.count
                    }
                    return take(window, last)
                }
            }
        }
        if keepingSegments { IncrementalDirectory.attach(LDIFSegments.joined(pieces), to: table) }
        return table
    }

    /// Files at least this large are read in parts, one per core.
    static let parallelThreshold = 8 << 20

    /// Refuses (throws) what cannot be a directory export: an LDIF version other than 1, and a file
    /// without a single entry, which would otherwise fail every device with `join.user-not-found`.
    /// `parts` > 1 splits the bytes at entry boundaries and reads the parts in parallel (as `load`
    /// does for a large file): the same users, lines and problems as one reader.
    public static func read(_ bytes: [UInt8], file: String, map: AttributeMap = AttributeMap(), parts: Int = 1) throws(Problem) -> UserTable {
        try read(bytes, file: file, map: map, parts: parts, poolLimit: UserTableBuilder.poolLimit)
    }

    /// `read`, with the users' values held to `poolLimit` bytes (tests: the 4 GiB refusal, small)
    /// and the parts joined `movedPiece` bytes at a time (tests: many pieces).
    /// `versionAllowed`: a `version:` line may stand before the first entry (false for segments
    /// of a file read apart, `IncrementalDirectory`); `requireEntries`: a text without an entry is
    /// refused (`directory.empty`).
    static func read(_ bytes: [UInt8], file: String, map: AttributeMap, parts: Int, poolLimit: Int,
                     movedPiece: Int = UserTableBuilder.movedPiece, versionAllowed: Bool = true, requireEntries: Bool = true) throws(Problem) -> UserTable {
        let bounds = partBounds(size: bytes.count, parts: parts) { from in
            bytes.withView { entryEnd(in: $0[view: from...]) }.map { from + $0 }
        }
        var arrays = zip(bounds, bounds.dropFirst()).map { Array(bytes[$0..<$1]) }
        let sizes = arrays.map(\.count)
        return try arrays.withWorkerSlots { parts throws(Problem) in
            try read(partSizes: sizes, file: file, map: map, poolLimit: poolLimit, movedPiece: movedPiece, versionAllowed: versionAllowed,
                     requireEntries: requireEntries) { part, take in
                _ = parts[part].withWorkerSlots { take($0, true) }
            }
        }
    }

    /// Where the last entry that ends in `bytes` ends: just past a blank line's newline, where
    /// the next line is there to see and does not continue it (a window is cut there).
    static func lastEntryEnd(in bytes: ByteView) -> Int? {
        var j = bytes.count - 2
        while j >= 1 {
            if bytes[j] == 0x0A && bytes[j + 1] != 0x20 && (bytes[j - 1] == 0x0A || (j >= 2 && bytes[j - 1] == 0x0D && bytes[j - 2] == 0x0A)) {
                return j + 1
            }
            j -= 1
        }
        return nil
    }

    /// Where the first entry that ends in `bytes` ends: just past the newline before a blank line
    /// that no continued line (one starting with a space) follows, after a `dn:` line (so the part
    /// before holds an entry, and a `version:` line can only be in the first).
    static func entryEnd(in bytes: ByteView) -> Int? {
        var i = 0
        var sawDN = false
        while i + 1 < bytes.count {
            if bytes[i] == 0x0A {
                let next = bytes[i + 1]
                // The blank line's end; a line after it that starts with a space would continue it.
                let after = next == 0x0A ? i + 2 : next == 0x0D && i + 2 < bytes.count && bytes[i + 2] == 0x0A ? i + 3 : nil
                if sawDN, let after, after < bytes.count, bytes[after] != 0x20 { return i + 1 }
                if next | 0x20 == UInt8(ascii: "d") && i + 3 < bytes.count && bytes[i + 2] | 0x20 == UInt8(ascii: "n") && bytes[i + 3] == UInt8(ascii: ":") {
                    sawDN = true
                }
            }
            i += 1
        }
        return nil
    }

    /// The parts of one file, in order: each read by its own collector on its own core, then
    /// joined in file order with the duplicate-DN check across parts. `feed(part, take)` hands
    /// `take` the part's bytes, in windows that end where an entry does (the last may end anywhere);
    /// `take` reads them in place and returns false when the reading must stop.
    static func read(partSizes: [Int], file: String, map: AttributeMap, poolLimit: Int = UserTableBuilder.poolLimit,
                     movedPiece: Int = UserTableBuilder.movedPiece, versionAllowed: Bool = true, requireEntries: Bool = true,
                     feed: (Int, (MutableByteView, Bool) -> Bool) throws(FileReadError) -> Void) throws(Problem) -> UserTable {
        let partCount = partSizes.count
        var collectors = (0..<partCount).map { i in
            var c = EntryCollector(file: file, map: map)
            c.first = i == 0 && versionAllowed  // a `version:` line stands only before the first entry
            // The users' values are under half an export's bytes: the pool is not copied as it
            // grows, nor when the other parts' users join the first's (untouched room costs no memory).
            c.builder.reserve(poolBytes: (i == 0 ? partSizes.reduce(0, +) : partSizes[i]) / 2)
            return c
        }
        var lineCounts = [Int](repeating: 0, count: partCount)
        var failures = [FileReadError?](repeating: nil, count: partCount)
        // Called for each part on its own core; each touches only its part's slots.
        nonisolated(unsafe) let feed = feed
        collectors.withWorkerSlots { collectors in
            lineCounts.withWorkerSlots { counts in
                failures.withWorkerSlots { failures in
                    Parallelism.concurrentPerform(iterations: partCount) { i in
                        var physicalLines = 0
                        var atStart = true
                        do throws(FileReadError) {
                            // Folded lines and base64 values are undone in place (both only shrink),
                            // so every line and value is a range of the window: no copy, no allocation.
                            try feed(i) { window, last in
                                let bom = i == 0 && atStart && window.view.starts(with: [0xEF, 0xBB, 0xBF])  // a UTF-8 byte order mark
                                let first = atStart
                                atStart = false
                                let more = collectors[i].read(window, lines: &physicalLines, skipping: bom ? 3 : 0, last: last)
                                // The part's users, told from its first window: the DN index sized once.
                                if first && !last && window.count > 0 {
                                    let users = collectors[i].builder.count * partSizes[i] / window.count
                                    collectors[i].builder.reserveUsers(users + users / 8)
                                }
                                return more
                            }
                        } catch {
                            failures[i] = error
                        }
                        counts[i] = physicalLines
                    }
                }
            }
        }
        if let failure = failures.lazy.compactMap({ $0 }).first { throw failure.problem }
        var lineOffset = 0
        for i in 0..<partCount {
            if var problem = collectors[i].fatal {
                problem.location.line += lineOffset
                throw problem
            }
            lineOffset += lineCounts[i]
        }
        try collectors[0].builder.checkPool(adding: collectors.dropFirst().map(\.builder.poolBytes).reduce(0, +), limit: poolLimit)
        let repeated = repeatedUsers(collectors)
        var builder = collectors[0].builder
        // The part's own reference goes, so that appending to the builder does not copy its arrays (lines, problems, DN index).
        collectors[0].builder = UserTableBuilder(source: file, map: map)
        var entries = collectors[0].entries
        if partCount > 1 {
            lineOffset = lineCounts[0]
            for i in 1..<partCount {
                builder.append(collectors[i].builder, lineOffset: lineOffset, repeated: repeated[i], piece: movedPiece)
                collectors[i].builder = UserTableBuilder(source: file, map: map)
                entries += collectors[i].entries
                lineOffset += lineCounts[i]
            }
        }
        guard entries > 0 || !builder.problems.isEmpty || !requireEntries else {
            throw Problem(.directoryEmpty, at: Location(file: file), "\(file) holds no directory entries")
        }
        let table = builder.finish()
        table.entries = entries
        return table
    }
}

extension LDIFReader {
    /// Per part, per user: whether an earlier part has a user with its DN (`ldif.duplicate-dn`, as
    /// one reader would find). Each part checked its own users as it read them; a later part's are
    /// looked up in the earlier parts' indexes, read-only, on every core.
    static func repeatedUsers(_ collectors: [EntryCollector]) -> [[Bool]] {
        var repeated = collectors.map { [Bool](repeating: false, count: $0.builder.count) }
        guard collectors.count > 1 else { return repeated }
        let cores = Parallelism.threads
        let tasks = (1..<collectors.count).flatMap { part in (0..<cores).map { (part, $0) } }
        collectors.withView { parts in
            repeated.withWorkerSlots { flags in
                Parallelism.concurrentPerform(iterations: tasks.count) { t in
                    let (part, share) = tasks[t]
                    // Taken once per task: read through the buffer per user, each was a copy.
                    let mine = parts[part].builder
                    let earlier = (0..<part).map { parts[$0].builder.dnLookup }
                    flags[part].withWorkerSlots { flags in
                        // In blocks: the block's hashes made and their slots fetched into the
                        // cache, then looked up (one at a time, each look-up was a cache miss).
                        let users = (mine.count * share / cores)..<(mine.count * (share + 1) / cores)
                        withTemporarySlots(count: 32, repeating: UInt64(0)) { hashes in
                            for block in stride(from: users.lowerBound, to: users.upperBound, by: hashes.count) {
                                let end = min(block + hashes.count, users.upperBound)
                                for u in block..<end {
                                    hashes[u - block] = UserTableBuilder.hashDN(mine.dn(ofUser: u))
                                    for index in earlier { index.prefetch(hash: hashes[u - block]) }
                                }
                                for u in block..<end {
                                    let (dn, hash) = (mine.dn(ofUser: u), hashes[u - block])
                                    flags[u] = earlier.contains { $0.contains(dn, hash: hash) }
                                }
                            }
                        }
                    }
                }
            }
        }
        return repeated
    }
}
