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

    public static func load(_ path: String, map: AttributeMap = AttributeMap()) throws(Problem) -> UserTable {
        // A large file is read in parts (one per core), each into its own array, each parsed on its
        // own core.
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        let parts: [[UInt8]]
        do {
            if size >= parallelThreshold && cores > 1 {
                parts = try readFileInParts(path, parts: cores, limit: Int(UInt32.max)) { entryEnd(in: $0) }
            } else {
                parts = [try readFileBytes(path, limit: Int(UInt32.max))]
            }
        } catch {
            throw error.problem
        }
        return try read(parts: consume parts, file: path, map: map)
    }

    /// Files at least this large are read in parts, one per core.
    static let parallelThreshold = 8 << 20

    /// Refuses (throws) what cannot be a directory export: an LDIF version other than 1, and a file
    /// without a single entry, which would otherwise fail every device with `join.user-not-found`.
    /// `parts` > 1 splits the bytes at entry boundaries and reads the parts in parallel (as `load`
    /// does for a large file): the same users, lines and problems as one reader.
    public static func read(_ bytes: [UInt8], file: String, map: AttributeMap = AttributeMap(), parts: Int = 1) throws(Problem) -> UserTable {
        guard parts > 1 else { return try read(parts: [bytes], file: file, map: map) }
        let bounds = partBounds(size: bytes.count, parts: parts) { from in
            bytes.withUnsafeBufferPointer { entryEnd(in: UnsafeBufferPointer(rebasing: $0[from...])) }.map { from + $0 }
        }
        return try read(parts: zip(bounds, bounds.dropFirst()).map { Array(bytes[$0..<$1]) }, file: file, map: map)
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
    /// joined in file order with the duplicate-DN check across parts.
    static func read(parts: consuming [[UInt8]], file: String, map: AttributeMap) throws(Problem) -> UserTable {
        let partCount = parts.count
        var collectors = (0..<partCount).map { i in
            var c = EntryCollector(file: file, map: map)
            c.first = i == 0  // a `version:` line stands only before the first entry
            return c
        }
        var lineCounts = [Int](repeating: 0, count: partCount)
        // Each worker reads its part into its own collector, in place, and lets the part's bytes
        // go as soon as it is done (the users' values are in the collector's pool by then).
        var files = consume parts
        files.withUnsafeMutableBufferPointer { files in
            collectors.withUnsafeMutableBufferPointer { collectors in
                lineCounts.withUnsafeMutableBufferPointer { counts in
                    let (files, collectors, counts) = (WorkerSlots(files), WorkerSlots(collectors), WorkerSlots(counts))
                    DispatchQueue.concurrentPerform(iterations: partCount) { i in
                        do {
                            var lines = LogicalLines(bytes: files.buffer[i])
                            if i == 0 && files.buffer[0].starts(with: [0xEF, 0xBB, 0xBF]) { lines.position = 3 }  // a UTF-8 byte order mark
                            while let (line, number) = lines.next() {
                                collectors.buffer[i].take(line, number)
                                if collectors.buffer[i].fatal != nil { break }
                            }
                            collectors.buffer[i].finishEntry()
                            counts.buffer[i] = lines.line
                        }
                        files.buffer[i] = []
                    }
                }
            }
        }
        var lineOffset = 0
        for i in 0..<partCount {
            if var problem = collectors[i].fatal {
                problem.location.line += lineOffset
                throw problem
            }
            lineOffset += lineCounts[i]
        }
        var builder = collectors[0].builder
        // The part's own reference goes, so that appending to the builder does not copy its pool.
        collectors[0].builder = UserTableBuilder(source: file, map: map)
        var entries = collectors[0].entries
        if partCount > 1 {
            var seen = collectors[0].seenDNs  // the first part's users are the joined table's first
            lineOffset = lineCounts[0]
            for i in 1..<partCount {
                builder.append(collectors[i].builder, lineOffset: lineOffset, seenDNs: &seen)
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

/// One LDIF reading: the entry being collected, line by line, and the users so far.
struct EntryCollector {
    var builder: UserTableBuilder
    let file: String
    /// Attribute names compared as lowercased bytes: a short list, no String per line.
    let wanted: [[UInt8]]
    /// The DNs of the users so far (duplicates are refused).
    var seenDNs = DNIndex()

    var entryLine = 0
    var dn: [UInt8]?
    var values: [ArraySlice<UInt8>?]
    var rejected = false
    var sawObjectClass = false, isPerson = false, isGroup = false
    /// Group memberships, when the map reads groups: every `memberOf`, and a group's members.
    let readsGroups: Bool
    var memberOf: [ArraySlice<UInt8>] = []
    var members: [ArraySlice<UInt8>] = []
    /// Before the first record: a `version:` line may stand here.
    var first = true
    /// Entries seen (`dn:` lines), people or not.
    var entries = 0
    /// A problem that ends the reading (an unsupported LDIF version).
    var fatal: Problem?

    init(file: String, map: AttributeMap) {
        builder = UserTableBuilder(source: file, map: map)
        self.file = file
        wanted = builder.attributeOrder.map { Array($0.utf8) }
        readsGroups = map.readsGroups
        values = [ArraySlice<UInt8>?](repeating: nil, count: wanted.count)
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
        let location = Location(file: file, line: entryLine)
        if readsGroups && isGroup && !isPerson {
            guard let text = String(validating: dn, as: UTF8.self) else {
                builder.report(Problem(.ldifInvalidUTF8, at: location, "the DN is not valid UTF-8"))
                return
            }
            builder.addGroup(dn: text, members: members, memberOf: memberOf, location: location.with(dn: text))
            return
        }
        guard isPerson || !sawObjectClass else { return }
        guard let text = String(validating: dn, as: UTF8.self) else {
            builder.report(Problem(.ldifInvalidUTF8, at: location, "the DN is not valid UTF-8"))
            return
        }
        let hash = DNIndex.hash(dn[...])
        if seenDNs.user(withDN: dn[...], hash: hash, in: builder) != nil {
            builder.report(Problem(.ldifDuplicateDN, at: location.with(dn: text), "DN \"\(text)\" appears again; this entry is skipped"))
            return
        }
        let user = builder.count
        builder.add(dn: text, values: values, memberOf: memberOf, line: entryLine, location: location)
        guard builder.count > user else { return }  // the DN did not parse: reported, not added
        seenDNs.insert(user, hash: hash)
    }

    /// A refused line: reported, and its entry is left out.
    mutating func problem(_ code: SourceCode, _ line: Int, _ message: String) {
        builder.report(Problem(code, at: Location(file: file, line: line), message))
        rejected = true
    }

    /// One logical line (folded lines joined) numbered as in the file.
    mutating func take(_ line: ArraySlice<UInt8>, _ number: Int) {
        if line.isEmpty { finishEntry(); return }
        if line.first == UInt8(ascii: "#") { return }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else {
            problem(.ldifSyntax, number, "expected \"attribute: value\"")
            return
        }
        let name = line[..<colon]
        guard let value = value(line[(colon + 1)...], of: name, number) else { return }
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
            guard equalsLower(name, "dn") else {
                if !rejected { problem(.ldifSyntax, number, "an entry starts with \"dn:\", not \"\(String(decoding: name, as: UTF8.self)):\"") }
                return
            }
            entryLine = number
            entries += 1
            dn = Array(value)
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
        let attribute = name.prefix { $0 != UInt8(ascii: ";") }
        if readsGroups {
            if equalsLower(attribute, "memberof") { memberOf.append(value); return }
            if equalsLower(attribute, "member") || equalsLower(attribute, "uniquemember") { members.append(value); return }
        }
        guard let i = wanted.firstIndex(where: { equalsLowerBytes(attribute, $0) }) else { return }
        if values[i] != nil { return }  // multi-valued: the first value is kept
        if firstInvalidUTF8Slice(value) != nil {
            problem(.ldifInvalidUTF8, number, "the value of \(String(decoding: name, as: UTF8.self)) is not valid UTF-8")
            return
        }
        values[i] = value
    }

    /// The value after the colon: ": text", ":: base64" (decoded) or ":< URL" (refused: nil).
    mutating func value(_ rest: ArraySlice<UInt8>, of name: ArraySlice<UInt8>, _ number: Int) -> ArraySlice<UInt8>? {
        if rest.first == UInt8(ascii: ":") {
            guard let d = Base64.decode(rest.dropFirst().drop { $0 == 0x20 }) else {
                problem(.ldifBase64, number, "the base64 value of \(String(decoding: name, as: UTF8.self)) is not valid base64")
                return nil
            }
            return d[...]
        }
        if rest.first == UInt8(ascii: "<") {
            problem(.ldifURLValue, number, "\(String(decoding: name, as: UTF8.self)) takes its value from a URL (\":<\"), which is not supported")
            return nil
        }
        return rest.drop { $0 == 0x20 }
    }
}

/// Bytes equal to a lowercase ASCII word, ignoring ASCII case.
@inline(__always)
func equalsLower(_ bytes: ArraySlice<UInt8>, _ word: StaticString) -> Bool {
    guard bytes.count == word.utf8CodeUnitCount else { return false }
    let w = word.utf8Start
    var i = 0
    for b in bytes {
        if asciiLower(b) != w[i] { return false }
        i += 1
    }
    return true
}

func equalsLowerBytes(_ bytes: ArraySlice<UInt8>, _ lower: [UInt8]) -> Bool {
    guard bytes.count == lower.count else { return false }
    var i = 0
    for b in bytes {
        if asciiLower(b) != lower[i] { return false }
        i += 1
    }
    return true
}

func firstInvalidUTF8Slice(_ s: ArraySlice<UInt8>) -> Int? {
    s.withUnsafeBufferPointer { firstInvalidUTF8($0.baseAddress ?? UnsafePointer(bitPattern: 1)!, $0.count) }
}

/// LDIF's lines with folding undone (a line starting with one space continues the previous one),
/// CRLF or LF, each with the number of its first physical line.
struct LogicalLines {
    let bytes: [UInt8]
    var position = 0
    let end: Int
    /// Physical lines read so far.
    var line = 0

    init(bytes: [UInt8]) {
        self.bytes = bytes
        end = bytes.count
    }

    /// A slice of the input when the line is not folded (the common case); a copy when it is.
    mutating func next() -> (ArraySlice<UInt8>, Int)? {
        guard position < end else { return nil }
        let first = physical()
        let number = line
        guard position < end && bytes[position] == 0x20 else { return (first, number) }
        var out = Array(first)
        while position < end && bytes[position] == 0x20 {
            position += 1  // the fold's space
            out += physical()
        }
        return (out[...], number)
    }

    private mutating func physical() -> ArraySlice<UInt8> {
        line += 1
        let start = position
        while position < end && bytes[position] != 0x0A { position += 1 }
        var stop = position
        if stop > start && bytes[stop - 1] == 0x0D { stop -= 1 }
        if position < end { position += 1 }
        return bytes[start..<stop]
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

    static func decode(_ text: ArraySlice<UInt8>) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(text.count * 3 / 4)
        var buffer: UInt32 = 0
        var bits = 0
        var padding = 0
        for c in text {
            let v = table[Int(c)]
            if v < 64 {
                if padding > 0 { return nil }
                buffer = buffer << 6 | UInt32(v)
                bits += 6
                if bits >= 8 {
                    bits -= 8
                    out.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bits)))
                }
            } else if v == 64 {
                padding += 1
            } else if v == 255 {
                return nil
            }
        }
        guard padding <= 2, bits < 6 else { return nil }
        return out
    }
}
