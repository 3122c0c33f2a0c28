import AppConfigCore
import Dispatch
import Foundation

/// One LDIF reading: the entry being collected, line by line, and the users so far. Lines and
/// values are ranges of the part being read, valid while it is.
struct EntryCollector {
    var builder: UserTableBuilder
    let file: String
    /// Attribute names compared as lowercased bytes: a short list, no String per line; views of
    /// `names` (an array of arrays was retained and released as each line looked through it).
    let wanted: [ByteView]
    private let names = BufferArena()

    var entryLine = 0
    var dn: ByteView?
    /// `UserTableBuilder.hashDN(dn)`, made when the `dn:` line is read: the DN index's slot for
    /// it is fetched into the cache then, while the entry's other lines are read, and found there
    /// when the entry ends (the duplicate check's look-up was a cache miss per user).
    var dnHash: UInt64 = 0
    /// The DN was written as ASCII text (not base64): no UTF-8 check needed.
    var dnIsASCII = false
    /// Kept from entry to entry (emptied, never freed).
    var values: [ByteView?]
    var rejected = false
    var sawObjectClass = false, isPerson = false, isGroup = false
    /// Group memberships, when the map reads groups: every `memberOf`, and a group's members.
    let readsGroups: Bool
    var memberOf: [ByteView] = []
    var members: [ByteView] = []
    /// Before the first record: a `version:` line may stand here.
    var first = true
    /// Entries seen (`dn:` lines), people or not.
    var entries = 0
    /// A problem that ends the reading (an unsupported LDIF version).
    var fatal: Problem? { didSet { stopped = true } }
    /// `fatal` is set. Tested per line instead of `fatal != nil`, which compares whole Problems
    /// (Problem is Equatable: a copy and a comparison per line).
    private(set) var stopped = false

    init(file: String, map: AttributeMap) {
        builder = UserTableBuilder(source: file, map: map)
        // A copy of its own: each entry's location retains it, and retaining the caller's string
        // from every core at once made the cores contend for its count.
        self.file = String(decoding: Array(file.utf8), as: UTF8.self)
        wanted = builder.attributeOrder.map { [names] in names.view(Array($0.utf8)) }
        readsGroups = map.readsGroups
        values = [ByteView?](repeating: nil, count: wanted.count)
    }

    /// Reads a window's lines (`lines`: the physical lines before it, then after it); the entry
    /// being read ends with the window when it is the `last`. In place, in one call per window (a
    /// call per line through the workers' buffer copied the whole collector each time). False
    /// when the reading must stop.
    mutating func read(_ window: MutableByteView, lines: inout Int, skipping: Int, last: Bool) -> Bool {
        var reader = LogicalLines(bytes: window)
        reader.line = lines
        reader.position = skipping
        while let (line, number, ascii) = reader.next() {
            take(line, number, ascii: ascii)
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
            guard dnIsASCII || firstInvalidUTF8(dn) == nil else {
                builder.report(Problem(.ldifInvalidUTF8, at: location(), "the DN is not valid UTF-8"))
                return
            }
            builder.addGroupEntry(dn: dn, members: members, memberOf: memberOf, location: location(dn: true))
            return
        }
        guard isPerson || !sawObjectClass else { return }
        guard dnIsASCII || firstInvalidUTF8(dn) == nil else {
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
    /// in its place. `ascii`: the line's bytes are all ASCII.
    mutating func take(_ line: MutableByteView, _ number: Int, ascii: Bool = false) {
        if line.count == 0 { finishEntry(); return }
        if line[0] == UInt8(ascii: "#") { return }
        let (colon, semicolon) = Self.colon(in: line.view)
        guard colon < line.count else {
            problem(.ldifSyntax, number, "expected \"attribute: value\"")
            return
        }
        let name = line.view[view: 0..<colon]
        let base64 = colon + 1 < line.count && line[colon + 1] == UInt8(ascii: ":")
        guard let value = value(line[slots: (colon + 1)...], of: name, number) else { return }
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
            dnIsASCII = ascii && !base64
            dnHash = UserTableBuilder.hashDN(value)
            builder.prefetchDN(hash: dnHash)
            return
        }
        if equalsLower(name, "objectclass") {
            sawObjectClass = true
            if !isPerson && LDIFReader.personClasses.contains(where: { equalsLower(value, $0) }) { isPerson = true }
            if readsGroups && LDIFReader.groupClasses.contains(where: { equalsLowerBytes(value, $0) }) { isGroup = true }
            return
        }
        if equalsLower(name, "changetype") {
            problem(.ldifChangeRecord, number, "change records (changetype: \(String(decoding: value, as: UTF8.self))) are not supported; give the directory's content")
            return
        }
        // Attribute options (";lang-de", ";binary") do not change which attribute it is.
        let attribute = name[view: 0..<(semicolon < 0 ? name.count : semicolon)]
        if readsGroups {
            if equalsLower(attribute, "memberof") { memberOf.append(value); return }
            if equalsLower(attribute, "member") || equalsLower(attribute, "uniquemember") { members.append(value); return }
        }
        var i = 0
        while i < wanted.count && !equalsLowerBytes(attribute, wanted[i]) { i += 1 }
        guard i < wanted.count else { return }
        if values[i] != nil { return }  // multi-valued: the first value is kept
        // A text value of an ASCII line is ASCII; a base64 value's bytes are another matter.
        if (!ascii || base64) && firstInvalidUTF8(value) != nil {
            problem(.ldifInvalidUTF8, number, "the value of \(String(decoding: name, as: UTF8.self)) is not valid UTF-8")
            return
        }
        values[i] = value
    }

    /// The value after the colon: ": text", ":: base64" (decoded in place) or ":< URL" (refused: nil).
    mutating func value(_ rest: MutableByteView, of name: ByteView, _ number: Int) -> ByteView? {
        let first = rest.count > 0 ? rest[0] : nil
        if first == UInt8(ascii: ":") {
            let text = rest[slots: 1...]
            guard let d = Base64.decodeInPlace(text[slots: Self.spaces(text.view, from: 0)...]) else {
                problem(.ldifBase64, number, "the base64 value of \(String(decoding: name, as: UTF8.self)) is not valid base64")
                return nil
            }
            return d.view
        }
        if first == UInt8(ascii: "<") {
            problem(.ldifURLValue, number, "\(String(decoding: name, as: UTF8.self)) takes its value from a URL (\":<\"), which is not supported")
            return nil
        }
        return rest.view[view: Self.spaces(rest.view, from: 0)...]
    }

    /// The first `:` of a line (its count when there is none) and the first `;` before it (the
    /// attribute's options), or -1. Eight bytes at a time, inline: a byte loop here was a quarter
    /// of the reader's time per line, memchr's call more.
    @inline(__always)
    static func colon(in line: ByteView) -> (colon: Int, semicolon: Int) {
        var semicolon = -1
        var i = 0
        while i + 8 <= line.count {
            let w = line.word(at: i)
            let colons = zeroByteMarks(w ^ 0x3A3A_3A3A_3A3A_3A3A)
            if semicolon < 0 {
                let semicolons = zeroByteMarks(w ^ 0x3B3B_3B3B_3B3B_3B3B)
                // One before the colon (or in a word without one) is the first.
                if semicolons != 0 && (colons == 0 || semicolons.trailingZeroBitCount < colons.trailingZeroBitCount) {
                    semicolon = i + semicolons.trailingZeroBitCount / 8
                }
            }
            if colons != 0 { return (i + colons.trailingZeroBitCount / 8, semicolon) }
            i += 8
        }
        while i < line.count && line[i] != UInt8(ascii: ":") {
            if semicolon < 0 && line[i] == UInt8(ascii: ";") { semicolon = i }
            i += 1
        }
        return (i, semicolon)
    }

    /// Where the spaces from `start` end.
    @inline(__always)
    static func spaces(_ bytes: ByteView, from start: Int) -> Int {
        var i = start
        while i < bytes.count && bytes[i] == 0x20 { i += 1 }
        return i
    }
}
