import AppConfigCore

/// Tonight's user table from last night's image and tonight's LDIF file, reading only the
/// segments (`LDIFSegments`) whose bytes last night's file did not have. Why: a directory export
/// changes every night (people join, move, are renamed), and read whole it was most of a night
/// whose export changed by 1% (1M users: 0.56-0.68 s of a 1.2-1.4 s night).
///
/// A segment with last night's bytes gives what it gave then: its user (its values last night's,
/// where the image holds them), its problems, its lines shifted by where it now starts. The
/// others are read together as one small file, in file order, and their lines mapped back. What
/// a whole read decides across entries is decided again: the join index and its duplicate keys
/// (the table is built anew), and a DN given twice among the segments read. The result is nil,
/// and the file is read whole, wherever an incremental read could differ from a whole one: last
/// night's read found a DN given twice, or a segment read tonight has the DN of a user kept from
/// last night (which of them stands depends on their order), the image lacks the masks or
/// segments, the result would hold no entry (a whole read refuses that file), or the values'
/// pool has grown by half since the file was last read whole (the values of users replaced stay
/// in it). More than half the segments new (another export): read whole, on every core.
///
/// Last night's users keep their ids, their ranges read where the image has them; the users read
/// tonight take the ids after them, and the ids of users gone are no one's (`UserTable.order`).
package enum IncrementalDirectory {
    /// What a night read.
    package struct Read {
        package var table: UserTable
        /// Segments tonight whose bytes were new, and users read from them.
        package var segmentsRead: Int
        package var usersRead: Int
    }

    /// Nil where an incremental read could differ from a whole one (see above), or the file
    /// could not be read: then it is read whole, which says what is wrong with it.
    package static func load(_ image: UserTableImage.Contents, file: String, map: AttributeMap,
                             parts: Int = Parallelism.threads) throws(Problem) -> Read? {
        let order = map.requestedAttributes
        guard let old = image.segments, image.masks.count == image.users, order.count <= 32,
              !image.problems.contains(where: { $0.code.rawValue == SourceCode.ldifDuplicateDN.rawValue }) else { return nil }
        // Read in windows (a few megabytes per core, not the export's size: mapped whole, a 1M
        // night's peak grew by the file's 413 MB), on every core.
        guard let segments = try? LDIFSegments.scan(file: file, parts: parts), let reader = try? FileSections(file) else { return nil }
        let matches = RecordMatch.match(old.segments.hashes, segments.hashes)
        // The segments read tonight, as one small file, and where each starts in it.
        var changed: [Int] = []
        for (k, m) in matches.enumerated() where m < 0 { changed.append(k) }
        // Most of it new (another export, not another version of last night's): read whole, on every core.
        guard changed.count * 2 <= segments.count else { return nil }
        var small: [UInt8] = []
        var smallStarts: [UInt32] = []
        var line: UInt32 = 1
        for k in changed {
            smallStarts.append(line)
            let range = segments.range(k)
            guard let bytes = try? reader.bytes(at: range.lowerBound, count: range.count), bytes.count == range.count else { return nil }
            small += bytes
            line &+= k + 1 < segments.count ? segments.startLines[k + 1] &- segments.startLines[k] : 0
        }
        // A `version:` line stands before the first entry only: allowed when the first segment
        // with anything but comments is read tonight.
        var head: Int?
        for k in 0..<segments.count {
            let range = segments.range(k)
            guard let bytes = try? reader.bytes(at: range.lowerBound, count: range.count) else { return nil }
            if bytes.withView({ hasContent($0) }) { head = k; break }
        }
        let versionAllowed = head.map { matches[$0] < 0 } ?? true
        guard let moved = versionLineMoved(matches: matches, head: head, oldCount: old.segments.count, bytes: { k in
            let range = segments.range(k)
            return try? reader.bytes(at: range.lowerBound, count: range.count)
        }), !moved else { return nil }
        let smallSegments = LDIFSegments(startLines: smallStarts, hashes: [])
        func tonight(_ smallLine: Int) -> Int {
            guard smallLine > 0, !changed.isEmpty else { return smallLine }
            let s = smallSegments.segment(ofLine: smallLine)
            return smallLine - Int(smallStarts[s]) + Int(segments.startLines[changed[s]])
        }
        let read: UserTable
        do throws(Problem) {
            read = try LDIFReader.read(small, file: file, map: map, parts: 1, poolLimit: UserTableBuilder.poolLimit, versionAllowed: versionAllowed,
                                       requireEntries: false)
        } catch {
            var problem = error
            problem.location.line = tonight(problem.location.line)
            throw problem
        }
        guard read.groups == nil, let readMasks = read.attributeMasks, read.lines.count == read.count,
              !read.readProblems.contains(where: { $0.code.rawValue == SourceCode.ldifDuplicateDN.rawValue }) else { return nil }
        let oldPool = image.pool.count, newPool = oldPool + read.poolBytes.count
        guard newPool <= image.poolAtFullRead + image.poolAtFullRead / 2, newPool <= UserTableBuilder.poolLimit else { return nil }

        // A user read tonight with the DN of a user kept: which stands depends on the order.
        let stride = map.columns.stride
        func dn(_ pool: ByteView, _ ranges: BufferView<UInt32>, _ u: Int) -> ByteView { UserTableBuilder.storedDN(u, pool, ranges, stride) }
        let readRanges = read.count == 0 ? BufferView<UInt32>.empty : BufferView<UInt32>(read.rangeBytes, at: 0, count: read.count * 2 * stride)!
        var readDNs = ByteKeyTable(capacity: max(16, read.count * 2), foldingASCIICase: true)
        // A bit per hash's top bits, 16 bits a DN read: a kept user's DN hash tested here first
        // leaves the table (megabytes at 100k DNs, a cache miss each) for about one in sixteen.
        let filterBits = max(12, (read.count * 16).bitWidth - (read.count * 16).leadingZeroBitCount)
        func bit(_ h: UInt64) -> (word: Int, mask: UInt64) {
            let top = h >> UInt64(64 - filterBits)
            return (Int(top >> 6), 1 << (top & 63))
        }
        var filter = [UInt64](repeating: 0, count: (1 << filterBits) / 64)
        for u in 0..<read.count {
            let d = dn(read.poolBytes, readRanges, u), h = UserKeyHashes.hash(d)
            _ = readDNs.insert(d, hash: h, id: Int32(u)) { dn(read.poolBytes, readRanges, Int($0)) }
            let b = bit(h)
            filter[b.word] |= b.mask
        }
        let dnFilter = filter
        // The user read from each segment read tonight (at most one: entries are apart by blank lines).
        guard read.count == 0 || !changed.isEmpty else { return nil }
        var readOf = [Int32](repeating: -1, count: changed.count)
        for r in 0..<read.count {
            let s = smallSegments.segment(ofLine: Int(read.lines[r]))
            guard readOf[s] < 0 else { return nil }
            readOf[s] = Int32(r)
        }
        // Per segment tonight, who it becomes: last night's user kept (its index there), a user
        // read tonight (`-2 - index`), or nobody (-1). In parts on every core: the check of the
        // kept users' DNs reads every one (one core, it was a fifth of the phase at 1M users).
        var who = [Int32](repeating: -1, count: segments.count, parts: parts)
        let parts = max(1, parts)
        let clash = who.withWorkerSlots { who in
            anyRange(segments.count, parts: parts) { _, range in
                var s = changed.count(below: range.lowerBound)  // the segments read tonight before this part
                for k in range {
                    guard matches[k] >= 0 else {
                        who[k] = readOf[s] >= 0 ? -2 - readOf[s] : -1
                        s += 1
                        continue
                    }
                    let u = Int32(bitPattern: old.users[matches[k]])
                    guard u >= 0 else { continue }
                    // By the DN's hash kept in the image: the DN itself is read only where the hashes agree.
                    if read.count > 0 {
                        let h = image.keyHashes.dn(Int(u)), b = bit(h)
                        if dnFilter[b.word] & b.mask != 0,
                           readDNs.find(dn(image.pool, image.ranges, Int(u)), hash: h, keyOf: { dn(read.poolBytes, readRanges, Int($0)) }) != nil {
                            return true
                        }
                    }
                    who[k] = u
                }
                return false
            }
        }
        guard !clash else { return nil }
        // Tonight's users in segment order, by id: last night's keep theirs (their rows stay where
        // the image has them, not copied), those read tonight come after them. (An entry given
        // twice is one segment kept and one read, `RecordMatch.match`: a DN clash, read whole.)
        let oldSlots = image.users
        var userOrder: [Int32] = []
        userOrder.reserveCapacity(segments.count)
        var segmentUsers = [Int32](repeating: -1, count: segments.count, parts: parts)
        for k in 0..<segments.count where who[k] != -1 {
            let id = who[k] >= 0 ? who[k] : Int32(oldSlots) + (-2 - who[k])
            segmentUsers[k] = id
            userOrder.append(id)
        }
        // A whole read refuses a file without an entry (`directory.empty`): one kept user, or an
        // entry read tonight, says there is one; else it is read whole to tell.
        guard !userOrder.isEmpty || (read.entries ?? 0) > 0 else { return nil }

        // The rows of the users read tonight, their values' offsets moved past last night's pool,
        // after last night's rows in the image's mapping of them.
        var readRows = [UInt32](repeating: 0, count: read.count * 2 * stride)
        for j in Swift.stride(from: 0, to: readRows.count, by: 2) {
            let (offset, length) = (readRanges[j], readRanges[j + 1])
            (readRows[j], readRows[j + 1]) = (length != .max ? offset &+ UInt32(oldPool) : offset, length)
        }
        guard let ranges = readRows.withView({ image.rangesAppending($0) }) else { return nil }

        // Per id, the line its entry starts on tonight and the attributes it had (those of users
        // gone stay, read by no one); in parts, each counting the attributes its users have.
        // Made on every core, where their pages are first touched (one core zeroing 10M ids'
        // pages held the other).
        var lines = [UInt32](count: oldSlots + read.count) { range, lines in for id in range { lines[id] = id < oldSlots ? image.lines[id] : 0 } }
        let masks = readMasks.withView { readMasks in
            [UInt32](count: oldSlots + read.count) { range, masks in for id in range { masks[id] = id < oldSlots ? image.masks[id] : readMasks[id - oldSlots] } }
        }
        var partCounts = [[Int]](repeating: [Int](repeating: 0, count: order.count), count: parts)
        lines.withWorkerSlots { lines in partCounts.withWorkerSlots { partCounts in
            forEachRange(segments.count, parts: parts) { part, range in
                var counts = [Int](repeating: 0, count: order.count)
                for k in range where segmentUsers[k] >= 0 {
                    let id = Int(segmentUsers[k])
                    if id < oldSlots {
                        lines[id] = image.lines[id] &- old.segments.startLines[matches[k]] &+ segments.startLines[k]
                    } else {
                        lines[id] = UInt32(tonight(Int(read.lines[id - oldSlots])))
                    }
                    var bits = masks[id]
                    while bits != 0 {
                        counts[bits.trailingZeroBitCount] += 1
                        bits &= bits - 1
                    }
                }
                partCounts[part] = counts
            }
        } }
        let counts = order.indices.map { a in partCounts.reduce(0) { $0 + $1[a] } }

        // The problems: each kept segment's last night's, and those read tonight, in line order.
        var problems: [(line: Int, order: Int, problem: Problem)] = []
        // Per segment of last night, where it is tonight: wanted only for last night's problems.
        var newOf: [Int32] = []
        if !image.problems.isEmpty {
            newOf = [Int32](repeating: -1, count: old.segments.count, parts: parts)
            for (k, m) in matches.enumerated() where m >= 0 { newOf[m] = Int32(k) }
        }
        for p in image.problems {
            var p = p
            guard p.location.line > 0 else { problems.append((0, problems.count, p)); continue }
            let s = old.segments.segment(ofLine: p.location.line)
            guard newOf[s] >= 0 else { continue }  // its segment is gone or read again tonight
            p.location.line = p.location.line - Int(old.segments.startLines[s]) + Int(segments.startLines[Int(newOf[s])])
            problems.append((p.location.line, problems.count, p))
        }
        for p in read.readProblems {
            var p = p
            p.location.line = tonight(p.location.line)
            problems.append((p.location.line, problems.count, p))
        }
        problems.sort { ($0.line, $0.order) < ($1.line, $1.order) }

        // The values: last night's pool, then tonight's read, in place after it in the image's
        // mapping where they fit (written privately over the ranges there: the table reads them
        // from their own mapping; the key hashes after them are read still): a copy of the pool
        // was 200 MB of fresh pages at 1M users, most of the phase's time.
        let (pool, copy) = image.mappedPool.appending(read.poolBytes, room: 4 * image.ranges.count)
        // The join index filed by the kept users' hashes in the image: their keys are not read.
        let table = UserTable(source: file, columns: map.columns, pool: pool, ranges: ranges, owners: [image.rangesMapping as AnyObject?, copy].compactMap { $0 },
                              mapping: image.mapping, lines: lines, problems: problems.map(\.problem), order: userOrder,
                              joinHash: { id in
                                  Int(id) < oldSlots ? image.keyHashes.join(Int(id)) : UserKeyHashes.join(of: read, Int(id) - oldSlots)
                              })
        table.joinAttribute = map.joinAttribute
        table.attributeCounts = Dictionary(uniqueKeysWithValues: zip(order, counts))
        table.attributeMasks = masks
        var kept = segments
        kept.ends = []
        table.segments = (kept, segmentUsers)
        table.poolAtFullRead = image.poolAtFullRead
        return Read(table: table, segmentsRead: changed.count, usersRead: read.count)
    }

    /// Keeps a file's segments with the table read from it whole, for the night after: per
    /// segment the user its entry became, told by the line each user's entry starts on. Nothing
    /// kept where that does not hold (two users in one segment: not a file this reads by segment).
    package static func attach(_ segments: LDIFSegments, to table: UserTable) {
        guard table.lines.count == table.count, table.groups == nil else { return }
        guard segments.count > 0 || table.count == 0 else { return }
        var users = [Int32](repeating: -1, count: segments.count)
        // Users in file order, segments too: one walk (a search per user was 0.03 s at 1M).
        var s = 0
        for u in 0..<table.count {
            let line = table.lines[u]
            while s + 1 < segments.count && segments.startLines[s + 1] <= line { s += 1 }
            guard users[s] < 0, segments.startLines[s] <= line else { return }
            users[s] = Int32(u)
        }
        var kept = segments
        kept.ends = []  // tonight's offsets: the night after reads its own
        table.segments = (kept, users)
        table.poolAtFullRead = table.poolBytes.count
    }

    /// Whether a kept segment whose first line is a `version:` line is the file's first with
    /// content on one night and not on the other (nil: a segment could not be read). Such a line
    /// is read as the LDIF version only before the first entry; anywhere else its entry is refused
    /// (`ldif.syntax`), so the kept segment's outcome last night is not tonight's: read whole.
    /// `head`: tonight's first segment with content. Last night's is found among its first few
    /// segments from the kept ones' bytes (tonight's); where one before it was not kept, whether
    /// it had content is not known, and a kept segment with a `version:` line at either night's
    /// head is taken as moved. Without a `version:` line (most exports), first or not reads the same.
    static func versionLineMoved(matches: [Int], head: Int?, oldCount: Int, bytes read: (Int) -> [UInt8]?) -> Bool? {
        // Each segment read once (the head is asked for twice).
        var cache: [Int: [UInt8]] = [:]
        func bytes(_ k: Int) -> [UInt8]? {
            if let b = cache[k] { return b }
            let b = read(k)
            cache[k] = b
            return b
        }
        let bound = min(oldCount, 64)
        // Tonight's segment of each of last night's first `bound`: in step (the usual case), else one pass.
        var keptAt = Array(0..<bound)
        if matches.count < bound || !(0..<bound).allSatisfy({ matches[$0] == $0 }) {
            keptAt = [Int](repeating: -1, count: bound)
            for (k, m) in matches.enumerated() where m >= 0 && m < bound { keptAt[m] = k }
        }
        // Last night's first kept segment with content, and whether one not kept came before it.
        var firstKept: (old: Int, tonight: Int)?
        var unknownBefore = false
        for j in 0..<bound {
            let k = keptAt[j]
            guard k >= 0 else { unknownBefore = true; continue }
            guard let b = bytes(k) else { return nil }
            if b.withView({ hasContent($0) }) { firstKept = (j, k); break }
        }
        func startsWithVersion(_ k: Int) -> Bool? { bytes(k).map { $0.withView { startsWithVersionLine($0) } } }
        if let head, matches[head] >= 0 {
            guard let version = startsWithVersion(head) else { return nil }
            if version && (unknownBefore || firstKept?.old != matches[head]) { return true }
        }
        guard let firstKept else { return bound < oldCount }  // none within reach: not known
        guard firstKept.tonight != head else { return false }
        return startsWithVersion(firstKept.tonight)
    }

    /// Whether a segment's first line with content (`firstContent`: the line `hasContent` and the
    /// head go by) is a `version:` line: its attribute name, unfolded, is `version` in any case.
    static func startsWithVersionLine(_ segment: ByteView) -> Bool {
        guard var i = firstContent(segment) else { return false }
        let n = segment.count
        // The first eight bytes of the logical line, its folds joined.
        var name: [UInt8] = []
        while i < n && name.count < 8 {
            let c = segment[i]
            if c == 0x0D && i + 1 < n && segment[i + 1] == 0x0A { i += 1; continue }
            if c == 0x0A {
                guard i + 1 < n && segment[i + 1] == 0x20 else { break }
                i += 2
                continue
            }
            name.append(c)
            i += 1
        }
        return name.count == 8 && name[7] == 0x3A && name[0..<7].map { $0 | 0x20 }.elementsEqual("version".utf8)
    }

    /// Whether a segment holds anything but blank lines and comments (`#`, and the lines that continue one).
    static func hasContent(_ segment: ByteView) -> Bool { firstContent(segment) != nil }

    /// Where the first line that is not blank or a comment starts (one starting with `#`, a space
    /// or a line break is not), nil when none does.
    static func firstContent(_ segment: ByteView) -> Int? {
        var i = 0
        while i < segment.count {
            let c = segment[i]
            if c != 0x23 && c != 0x20 && c != 0x0A && c != 0x0D { return i }
            while i < segment.count && segment[i] != 0x0A { i += 1 }
            i += 1
        }
        return nil
    }
}
