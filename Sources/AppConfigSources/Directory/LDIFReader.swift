import AppConfigBytes
import AppConfigSpec
import Dispatch
import Foundation

/// LDIF content records (RFC 2849) into a user table: `version:`, comments, folded lines, base64
/// `::` values. Change records and `:<` URL values are refused, entry by entry, with the line.
/// As the LDAP default filter `(objectClass=person)` does, only people are users: entries whose
/// objectClass is person or one of its kinds (organizationalPerson, inetOrgPerson, user), or that
/// name no objectClass at all; domains, OUs and groups are passed over.
public enum LDIFReader {
    static let personClasses: [StaticString] = ["person", "organizationalperson", "inetorgperson", "user"]
    /// Read as groups when the map reads groups.
    static let groupClasses = AttributeMap.groupClasses.map { Array($0.utf8) }

    /// A large file is read in parts (one per core), each part in windows of `window` bytes into a
    /// buffer of its own, each parsed on its own core. `parts` overrides the parts (tests).
    public static func load(_ path: String, map: AttributeMap = AttributeMap(), parts: Int? = nil, window: Int = 8 << 20) throws(Problem) -> UserTable {
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        let file: PartedFile
        do {
            file = try PartedFile(path, parts: parts ?? (size >= parallelThreshold ? cores : 1), limit: Int(UInt32.max)) { entryEnd(in: $0) }
        } catch {
            throw error.problem
        }
        let sizes = zip(file.bounds, file.bounds.dropFirst()).map { $1 - $0 }
        return try read(partSizes: sizes, file: path, map: map) { part, take throws(FileReadError) in
            try file.readWindows(part: part, window: window, lastRecordEnd: lastEntryEnd, take)
        }
    }

    /// Files at least this large are read in parts, one per core.
    static let parallelThreshold = 8 << 20

    /// Refuses (throws) what cannot be a directory export: an LDIF version other than 1, and a file
    /// without a single entry, which would otherwise fail every device with `join.user-not-found`.
    /// `parts` > 1 splits the bytes at entry boundaries and reads the parts in parallel (as `load`
    /// does for a large file): the same users, lines and problems as one reader.
    public static func read(_ bytes: [UInt8], file: String, map: AttributeMap = AttributeMap(), parts: Int = 1) throws(Problem) -> UserTable {
        let bounds = partBounds(size: bytes.count, parts: parts) { from in
            bytes.withUnsafeBufferPointer { entryEnd(in: UnsafeBufferPointer(rebasing: $0[from...])) }.map { from + $0 }
        }
        var arrays = zip(bounds, bounds.dropFirst()).map { Array(bytes[$0..<$1]) }
        let sizes = arrays.map(\.count)
        return try arrays.withUnsafeMutableBufferPointer { arrays throws(Problem) in
            let parts = WorkerSlots(arrays)
            return try read(partSizes: sizes, file: file, map: map) { part, take in
                _ = parts.buffer[part].withUnsafeMutableBufferPointer { take($0, true) }
            }
        }
    }

    /// Where the last entry that ends in `bytes` ends: just past a blank line's newline, where
    /// the next line is there to see and does not continue it (a window is cut there).
    static func lastEntryEnd(in bytes: UnsafeBufferPointer<UInt8>) -> Int? {
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
    static func entryEnd(in bytes: UnsafeBufferPointer<UInt8>) -> Int? {
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
    static func read(partSizes: [Int], file: String, map: AttributeMap,
                     feed: (Int, (UnsafeMutableBufferPointer<UInt8>, Bool) -> Bool) throws(FileReadError) -> Void) throws(Problem) -> UserTable {
        let partCount = partSizes.count
        var collectors = (0..<partCount).map { i in
            var c = EntryCollector(file: file, map: map)
            c.first = i == 0  // a `version:` line stands only before the first entry
            // The users' values are under half an export's bytes: the pool is not copied as it
            // grows, nor when the other parts' users join the first's (untouched room costs no memory).
            c.builder.reserve(poolBytes: (i == 0 ? partSizes.reduce(0, +) : partSizes[i]) / 2)
            return c
        }
        var lineCounts = [Int](repeating: 0, count: partCount)
        var failures = [FileReadError?](repeating: nil, count: partCount)
        // Called for each part on its own core; each touches only its part's slots.
        nonisolated(unsafe) let feed = feed
        collectors.withUnsafeMutableBufferPointer { collectors in
            lineCounts.withUnsafeMutableBufferPointer { counts in
                failures.withUnsafeMutableBufferPointer { failures in
                    let (collectors, counts, failures) = (WorkerSlots(collectors), WorkerSlots(counts), WorkerSlots(failures))
                    DispatchQueue.concurrentPerform(iterations: partCount) { i in
                        var physicalLines = 0
                        var atStart = true
                        do throws(FileReadError) {
                            // Folded lines and base64 values are undone in place (both only shrink),
                            // so every line and value is a range of the window: no copy, no allocation.
                            try feed(i) { window, last in
                                let bom = i == 0 && atStart && window.starts(with: [0xEF, 0xBB, 0xBF])  // a UTF-8 byte order mark
                                let first = atStart
                                atStart = false
                                let more = collectors.buffer[i].read(window, lines: &physicalLines, skipping: bom ? 3 : 0, last: last)
                                // The part's users, told from its first window: the DN index sized once.
                                if first && !last && window.count > 0 {
                                    let users = collectors.buffer[i].builder.count * partSizes[i] / window.count
                                    collectors.buffer[i].builder.reserveUsers(users + users / 8)
                                }
                                return more
                            }
                        } catch {
                            failures.buffer[i] = error
                        }
                        counts.buffer[i] = physicalLines
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
        let repeated = repeatedUsers(collectors)
        var builder = collectors[0].builder
        // The part's own reference goes, so that appending to the builder does not copy its arrays (lines, problems, DN index).
        collectors[0].builder = UserTableBuilder(source: file, map: map)
        var entries = collectors[0].entries
        if partCount > 1 {
            lineOffset = lineCounts[0]
            for i in 1..<partCount {
                builder.append(collectors[i].builder, lineOffset: lineOffset, repeated: repeated[i])
                collectors[i].builder = UserTableBuilder(source: file, map: map)
                entries += collectors[i].entries
                lineOffset += lineCounts[i]
            }
        }
        guard entries > 0 || !builder.problems.isEmpty else {
            throw Problem(.directoryEmpty, at: Location(file: file), "\(file) holds no directory entries")
        }
        return builder.finish()
    }
}

extension LDIFReader {
    /// Per part, per user: whether an earlier part has a user with its DN (`ldif.duplicate-dn`, as
    /// one reader would find). Each part checked its own users as it read them; a later part's are
    /// looked up in the earlier parts' indexes, read-only, on every core.
    static func repeatedUsers(_ collectors: [EntryCollector]) -> [[Bool]] {
        var repeated = collectors.map { [Bool](repeating: false, count: $0.builder.count) }
        guard collectors.count > 1 else { return repeated }
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let tasks = (1..<collectors.count).flatMap { part in (0..<cores).map { (part, $0) } }
        collectors.withUnsafeBufferPointer { collectors in
            repeated.withUnsafeMutableBufferPointer { repeated in
                let (parts, flags) = (WorkerSlots(UnsafeMutableBufferPointer(mutating: collectors)), WorkerSlots(repeated))
                DispatchQueue.concurrentPerform(iterations: tasks.count) { t in
                    let (part, share) = tasks[t]
                    // Taken once per task: read through the buffer per user, each was a copy.
                    let mine = parts.buffer[part].builder
                    let earlier = (0..<part).map { parts.buffer[$0].builder.dnLookup }
                    flags.buffer[part].withUnsafeMutableBufferPointer { flags in
                        // In blocks: the block's hashes made and their slots fetched into the
                        // cache, then looked up (one at a time, each look-up was a cache miss).
                        let users = (mine.count * share / cores)..<(mine.count * (share + 1) / cores)
                        withUnsafeTemporaryAllocation(of: UInt64.self, capacity: 32) { hashes in
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

/// One LDIF reading: the entry being collected, line by line, and the users so far. Lines and
/// values are ranges of the part being read, valid while it is.
struct EntryCollector {
    var builder: UserTableBuilder
    let file: String
    /// Attribute names compared as lowercased bytes: a short list, no String per line.
    let wanted: [[UInt8]]

    var entryLine = 0
    var dn: UnsafeBufferPointer<UInt8>?
    /// `UserTableBuilder.hashDN(dn)`, made when the `dn:` line is read: the DN index's slot for
    /// it is fetched into the cache then, while the entry's other lines are read, and found there
    /// when the entry ends (the duplicate check's look-up was a cache miss per user).
    var dnHash: UInt64 = 0
    /// Kept from entry to entry (emptied, never freed).
    var values: [UnsafeBufferPointer<UInt8>?]
    var rejected = false
    var sawObjectClass = false, isPerson = false, isGroup = false
    /// Group memberships, when the map reads groups: every `memberOf`, and a group's members.
    let readsGroups: Bool
    var memberOf: [UnsafeBufferPointer<UInt8>] = []
    var members: [UnsafeBufferPointer<UInt8>] = []
    /// Before the first record: a `version:` line may stand here.
    var first = true
    /// Entries seen (`dn:` lines), people or not.
    var entries = 0
    /// A problem that ends the reading (an unsupported LDIF version).
    var fatal: Problem? { didSet { stopped = true } }
    /// `fatal` is set. Tested per line instead of `fatal != nil`, which compares whole Problems
    /// (Problem is Equatable: a copy and a comparison per line, measured 13% of a read).
    private(set) var stopped = false

    init(file: String, map: AttributeMap) {
        builder = UserTableBuilder(source: file, map: map)
        // A copy of its own: each entry's location retains it, and retaining the caller's string
        // from every core at once made the cores contend for its count (0.18 s of CPU at 900k).
        self.file = String(decoding: Array(file.utf8), as: UTF8.self)
        wanted = builder.attributeOrder.map { Array($0.utf8) }
        readsGroups = map.readsGroups
        values = [UnsafeBufferPointer<UInt8>?](repeating: nil, count: wanted.count)
    }

    /// Reads a window's lines (`lines`: the physical lines before it, then after it); the entry
    /// being read ends with the window when it is the `last`. In place, in one call per window (a
    /// call per line through the workers' buffer copied the whole collector each time). False
    /// when the reading must stop.
    mutating func read(_ window: UnsafeMutableBufferPointer<UInt8>, lines: inout Int, skipping: Int, last: Bool) -> Bool {
        var reader = LogicalLines(bytes: window)
        reader.line = lines
        reader.position = skipping
        while let (line, number) = reader.next() {
            take(line, number)
            if stopped { break }
        }
        lines = reader.line
        // Its values are in the window: the entry ends with it.
        if last || stopped { finishEntry() }
        return !stopped
    }

    /// The entry ends (a blank line, the end of the file): a person becomes a user, unless a line
    /// of it was refused or its DN was seen before.
    mutating func finishEntry() {
        defer {
            dn = nil; rejected = false; sawObjectClass = false; isPerson = false; isGroup = false
            for i in values.indices { values[i] = nil }
            memberOf.removeAll(keepingCapacity: true)
            members.removeAll(keepingCapacity: true)
        }
        guard let dn, !rejected else { return }
        let (file, line) = (self.file, entryLine)
        func location(dn: Bool = false) -> Location {
            Location(file: file, line: line, dn: dn ? String(decoding: self.dn!, as: UTF8.self) : nil)
        }
        if readsGroups && isGroup && !isPerson {
            guard firstInvalidUTF8(dn) == nil else {
                builder.report(Problem(.ldifInvalidUTF8, at: location(), "the DN is not valid UTF-8"))
                return
            }
            builder.addGroupEntry(dn: dn, members: members, memberOf: memberOf, location: location(dn: true))
            return
        }
        guard isPerson || !sawObjectClass else { return }
        guard firstInvalidUTF8(dn) == nil else {
            builder.report(Problem(.ldifInvalidUTF8, at: location(), "the DN is not valid UTF-8"))
            return
        }
        let hash = dnHash
        if builder.hasUser(withDN: dn, hash: hash) {
            let text = String(decoding: dn, as: UTF8.self)
            builder.report(Problem(.ldifDuplicateDN, at: location(dn: true), "DN \"\(text)\" appears again; this entry is skipped"))
            return
        }
        let user = builder.count
        builder.addEntry(dn: dn, dnHash: hash, values: values, memberOf: memberOf, line: entryLine, location: location())
        guard builder.count > user else { return }  // the DN did not parse: reported, not added
        builder.indexDN(ofUser: user, hash: hash)
    }

    /// A refused line: reported, and its entry is left out.
    mutating func problem(_ code: SourceCode, _ line: Int, _ message: String) {
        builder.report(Problem(code, at: Location(file: file, line: line), message))
        rejected = true
    }

    /// One logical line (folded lines joined) numbered as in the file; base64 values are decoded
    /// in its place.
    mutating func take(_ line: UnsafeMutableBufferPointer<UInt8>, _ number: Int) {
        if line.isEmpty { finishEntry(); return }
        if line[0] == UInt8(ascii: "#") { return }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else {
            problem(.ldifSyntax, number, "expected \"attribute: value\"")
            return
        }
        let name = UnsafeBufferPointer(rebasing: line[..<colon])
        guard let value = value(UnsafeMutableBufferPointer(rebasing: line[(colon + 1)...]), of: name, number) else { return }
        if first && equalsLower(name, "version") {
            first = false
            if !value.elementsEqual("1".utf8) {
                fatal = Problem(.ldifSyntax, at: Location(file: file, line: number),
                                "LDIF version \"\(String(decoding: value, as: UTF8.self))\" is not supported: RFC 2849 defines version 1")
            }
            return
        }
        first = false
        if dn == nil {
            // ldapsearch's trailer (`# search result`, `search: 2`, `result: 0 Success`): not an
            // entry; a result other than 0 is a search that failed, whatever entries came before.
            if equalsLower(name, "search") { return }
            if equalsLower(name, "result") {
                let text = String(decoding: value, as: UTF8.self)
                let code = text.prefix { $0.isNumber }
                if code != "0" && fatal == nil {
                    fatal = Problem(.directorySearchFailed, at: Location(file: file, line: number),
                                    "\(file) is the output of a search that failed (result: \(Problem.printable(text))): it holds no directory")
                }
                return
            }
            guard equalsLower(name, "dn") else {
                if !rejected { problem(.ldifSyntax, number, "an entry starts with \"dn:\", not \"\(String(decoding: name, as: UTF8.self)):\"") }
                return
            }
            entryLine = number
            entries += 1
            dn = value
            dnHash = UserTableBuilder.hashDN(value)
            builder.prefetchDN(hash: dnHash)
            return
        }
        if equalsLower(name, "objectclass") {
            sawObjectClass = true
            if LDIFReader.personClasses.contains(where: { equalsLower(value, $0) }) { isPerson = true }
            if readsGroups && LDIFReader.groupClasses.contains(where: { equalsLowerBytes(value, $0) }) { isGroup = true }
            return
        }
        if equalsLower(name, "changetype") {
            problem(.ldifChangeRecord, number, "change records (changetype: \(String(decoding: value, as: UTF8.self))) are not supported; give the directory's content")
            return
        }
        // Attribute options (";lang-de", ";binary") do not change which attribute it is.
        let attribute = UnsafeBufferPointer(rebasing: name[..<(name.firstIndex(of: UInt8(ascii: ";")) ?? name.count)])
        if readsGroups {
            if equalsLower(attribute, "memberof") { memberOf.append(value); return }
            if equalsLower(attribute, "member") || equalsLower(attribute, "uniquemember") { members.append(value); return }
        }
        guard let i = wanted.firstIndex(where: { equalsLowerBytes(attribute, $0) }) else { return }
        if values[i] != nil { return }  // multi-valued: the first value is kept
        if firstInvalidUTF8(value) != nil {
            problem(.ldifInvalidUTF8, number, "the value of \(String(decoding: name, as: UTF8.self)) is not valid UTF-8")
            return
        }
        values[i] = value
    }

    /// The value after the colon: ": text", ":: base64" (decoded in place) or ":< URL" (refused: nil).
    mutating func value(_ rest: UnsafeMutableBufferPointer<UInt8>, of name: UnsafeBufferPointer<UInt8>, _ number: Int) -> UnsafeBufferPointer<UInt8>? {
        if rest.first == UInt8(ascii: ":") {
            let text = UnsafeMutableBufferPointer(rebasing: rest[1...])
            let skip = text.firstIndex { $0 != 0x20 } ?? text.count
            guard let d = Base64.decodeInPlace(UnsafeMutableBufferPointer(rebasing: text[skip...])) else {
                problem(.ldifBase64, number, "the base64 value of \(String(decoding: name, as: UTF8.self)) is not valid base64")
                return nil
            }
            return UnsafeBufferPointer(d)
        }
        if rest.first == UInt8(ascii: "<") {
            problem(.ldifURLValue, number, "\(String(decoding: name, as: UTF8.self)) takes its value from a URL (\":<\"), which is not supported")
            return nil
        }
        let skip = rest.firstIndex { $0 != 0x20 } ?? rest.count
        return UnsafeBufferPointer(rebasing: rest[skip...])
    }
}

/// Bytes equal to a lowercase ASCII word, ignoring ASCII case.
@inline(__always)
func equalsLower(_ bytes: UnsafeBufferPointer<UInt8>, _ word: StaticString) -> Bool {
    guard bytes.count == word.utf8CodeUnitCount else { return false }
    let w = word.utf8Start
    for i in 0..<bytes.count where asciiLower(bytes[i]) != w[i] { return false }
    return true
}

func equalsLowerBytes(_ bytes: UnsafeBufferPointer<UInt8>, _ lower: [UInt8]) -> Bool {
    guard bytes.count == lower.count else { return false }
    for i in 0..<bytes.count where asciiLower(bytes[i]) != lower[i] { return false }
    return true
}

/// LDIF's lines with folding undone (a line starting with one space continues the previous one),
/// CRLF or LF, each with the number of its first physical line. A folded line is joined in place:
/// each continuation is copied down over the line break and the fold's space before it.
struct LogicalLines {
    let bytes: UnsafeMutableBufferPointer<UInt8>
    var position = 0
    /// Physical lines read so far.
    var line = 0

    init(bytes: UnsafeMutableBufferPointer<UInt8>) { self.bytes = bytes }

    mutating func next() -> (UnsafeMutableBufferPointer<UInt8>, Int)? {
        guard position < bytes.count else { return nil }
        let first = physical()
        let number = line
        var end = first.upperBound
        while position < bytes.count && bytes[position] == 0x20 {
            position += 1  // the fold's space
            let more = physical()
            if more.lowerBound != end {
                memmove(bytes.baseAddress! + end, bytes.baseAddress! + more.lowerBound, more.count)
            }
            end += more.count
        }
        return (UnsafeMutableBufferPointer(rebasing: bytes[first.lowerBound..<end]), number)
    }

    private mutating func physical() -> Range<Int> {
        line += 1
        let start = position
        // memchr: the generic search went a byte at a time (every byte of the file passes here).
        if start < bytes.count, let newline = memchr(bytes.baseAddress! + start, 0x0A, bytes.count - start) {
            position = bytes.baseAddress!.distance(to: newline.assumingMemoryBound(to: UInt8.self))
        } else {
            position = bytes.count
        }
        var stop = position
        if stop > start && bytes[stop - 1] == 0x0D { stop -= 1 }
        if position < bytes.count { position += 1 }
        return start..<stop
    }
}

/// Standard base64 (RFC 4648), as LDIF writes it; white space is skipped.
enum Base64 {
    /// 0...63 for the alphabet, 64 for '=', 65 for white space, 255 for anything else.
    private static let table: [UInt8] = (0...255).map { c -> UInt8 in
        switch c {
        case 0x41...0x5A: UInt8(c - 0x41)
        case 0x61...0x7A: UInt8(c - 0x61 + 26)
        case 0x30...0x39: UInt8(c - 0x30 + 52)
        case 0x2B: 62
        case 0x2F: 63
        case 0x3D: 64
        case 0x20, 0x0D, 0x0A: 65
        default: 255
        }
    }

    /// Decodes `text` into its own first bytes (the output is never longer than what it has read)
    /// and returns them; nil when it is not base64. Four letters of the alphabet at a time make
    /// three bytes at once (a quarter of a 1M-user export is base64 values: byte by byte, through
    /// the shared table, they were 14 instructions a byte, callgrind); anything else (white space,
    /// padding, the end) goes byte by byte.
    static func decodeInPlace(_ text: UnsafeMutableBufferPointer<UInt8>) -> UnsafeMutableBufferPointer<UInt8>? {
        table.withUnsafeBufferPointer { table in decodeInPlace(text, table: table) }
    }

    @inline(__always)
    private static func decodeInPlace(_ text: UnsafeMutableBufferPointer<UInt8>, table: UnsafeBufferPointer<UInt8>) -> UnsafeMutableBufferPointer<UInt8>? {
        var out = 0
        var buffer: UInt32 = 0
        var bits = 0
        var padding = 0
        var i = 0
        while i < text.count {
            // Wrapping arithmetic and masking shifts: indices stay within the text, shifts under 32.
            let pending = UInt32(truncatingIfNeeded: bits)
            while padding == 0 && i &+ 4 <= text.count {
                let a = table[Int(text[i])], b = table[Int(text[i &+ 1])], c = table[Int(text[i &+ 2])], d = table[Int(text[i &+ 3])]
                guard (a | b | c | d) < 64 else { break }
                // `bits` (0, 2 or 4) pending bits, then 24 more: three whole bytes out, the same bits pending.
                buffer = buffer &<< 24 | UInt32(a) &<< 18 | UInt32(b) &<< 12 | UInt32(c) &<< 6 | UInt32(d)
                text[out] = UInt8(truncatingIfNeeded: buffer &>> (pending &+ 16))
                text[out &+ 1] = UInt8(truncatingIfNeeded: buffer &>> (pending &+ 8))
                text[out &+ 2] = UInt8(truncatingIfNeeded: buffer &>> pending)
                out &+= 3
                i &+= 4
            }
            guard i < text.count else { break }
            let v = table[Int(text[i])]
            i += 1
            if v < 64 {
                if padding > 0 { return nil }
                buffer = buffer << 6 | UInt32(v)
                bits += 6
                if bits >= 8 {
                    bits -= 8
                    text[out] = UInt8(truncatingIfNeeded: buffer >> UInt32(bits))
                    out += 1
                }
            } else if v == 64 {
                padding += 1
            } else if v == 255 {
                return nil
            }
        }
        guard padding <= 2, bits < 6 else { return nil }
        return UnsafeMutableBufferPointer(rebasing: text[0..<out])
    }
}
