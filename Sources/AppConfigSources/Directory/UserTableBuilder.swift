import AppConfigCore

/// Collects entries (from LDIF or LDAP pages) into a `UserTable`. `mark`/`rollback` let a retried
/// LDAP search drop what a failed attempt delivered, so nothing is duplicated or half-taken.
public struct UserTableBuilder {
    public let source: String
    public let map: AttributeMap
    /// The users' values (a reference: `finish` hands it to the table; the builder is done then).
    private let pool = GrowingBuffer<UInt8>(capacity: 4096)
    /// Per user, its `columns.stride` (offset, length) pairs (a reference, as `pool` is).
    private let ranges = GrowingBuffer<UInt32>(capacity: 1024)
    /// Per user, the line its entry starts on: LDIF only (an LDAP entry has no line).
    private var lines: [UInt32] = []
    /// Per requested attribute (`attributeOrder`), how many users have it: why a join finds few.
    private var attributeCounts: [Int]
    /// Per user, which requested attributes its entry had (bit i: `attributeOrder[i]`): an
    /// incremental night's counts are its users' (`IncrementalDirectory`). Empty past 32 attributes.
    private var masks: [UInt32] = []
    public private(set) var problems: [Problem] = []
    /// Per user variable (`UserVariable.allCases` order): the positions (in `attributeOrder`) of
    /// the attributes that feed it, in order.
    private let positions: [[Int]]
    private let joinPosition: Int
    /// What the table keeps, and per column the variable's `allCases` index.
    let columns: UserColumns
    private let columnVariables: [(variable: UserVariable, index: Int)]
    private let stride: Int
    private static let emailIndex = UserVariable.allCases.firstIndex(of: .emailAddress)!
    private static let upnIndex = UserVariable.allCases.firstIndex(of: .upn)!

    public init(source: String, map: AttributeMap) {
        self.source = source
        self.map = map
        columns = map.columns
        stride = columns.stride
        columnVariables = columns.variables.map { ($0, UserVariable.allCases.firstIndex(of: $0)!) }
        let order = map.requestedAttributes
        func position(_ name: String) -> Int { order.firstIndex(of: name.lowercased())! }
        var positions = [[Int]](repeating: [], count: UserVariable.allCases.count)
        for (variable, attributes) in map.sources { positions[UserVariable.allCases.firstIndex(of: variable)!] = attributes.map(position) }
        self.positions = positions
        joinPosition = position(map.joinAttribute)
        cnPosition = order.firstIndex(of: "cn")
        attributeCounts = [Int](repeating: 0, count: order.count)
        groups = map.readsGroups ? GroupBuilder() : nil
    }

    private let cnPosition: Int?
    /// Memberships, when the map reads groups.
    private var groups: GroupBuilder?

    public var count: Int { ranges.count / (2 * stride) }
    /// The bytes of the users' values so far.
    var poolBytes: Int { pool.count }

    /// The attributes to collect per entry, lowercased, in the order `add` expects them.
    public var attributeOrder: [String] { map.requestedAttributes }

    public struct Mark { fileprivate var pool: Int, ranges: Int, lines: Int, masks: Int, problems: Int, attributeCounts: [Int], groups: GroupBuilder? }

    public func mark() -> Mark {
        Mark(pool: pool.count, ranges: ranges.count, lines: lines.count, masks: masks.count, problems: problems.count, attributeCounts: attributeCounts, groups: groups)
    }

    public mutating func rollback(to mark: Mark) {
        attributeCounts = mark.attributeCounts
        masks.removeSubrange(mark.masks...)
        groups = mark.groups
        pool.truncate(to: mark.pool)
        ranges.truncate(to: mark.ranges)
        lines.removeSubrange(mark.lines...)
        problems.removeSubrange(mark.problems...)
    }

    public mutating func report(_ problem: Problem) { problems.append(problem) }

    /// Adds one entry as LDAP delivers it: `values[i]` is the first value of `attributeOrder[i]`,
    /// or nil; `memberOf`: the user's groups, when the map reads groups.
    public mutating func add(dn: String, values: [[UInt8]?], memberOf: [[UInt8]] = [], location: @autoclosure () -> Location) {
        let dnBytes = Array(dn.utf8)
        withBuffers(values) { values in
            withBuffers(memberOf) { memberOf in
                dnBytes.withView { dn in
                    addEntry(dn: dn, dnHash: nil, values: values, memberOf: memberOf.map { $0! }, line: nil, location: location())
                }
            }
        }
    }

    /// Adds one entry. `values[i]` is the first value of `attributeOrder[i]`, or nil; every value
    /// is copied into the pool (the buffers may go once this returns). `dn` is valid UTF-8 (a
    /// string's bytes, or an LDIF DN that was checked). `line`: where an LDIF entry starts.
    /// `memberOf`: the user's groups, when the map reads groups. `dnHash`: `hashDN(dn)`, when the
    /// caller made it.
    mutating func addEntry(dn: ByteView, dnHash: UInt64?, values: [ByteView?], memberOf: [ByteView],
                           line: Int?, location: @autoclosure () -> Location) {
        guard let readInOnePass = addUser(dn: dn, values: values, line: line, location: location()),
              let invalid = groups?.addUser(dn: dn, dnHash: dnHash, readInOnePass: readInOnePass, memberOf: memberOf) else { return }
        for value in invalid { reportNotDN(value, "memberOf", at: location()) }
    }

    /// A group entry (when the map reads groups): its members and the groups it is in, by DN.
    public mutating func addGroup(dn: String, members: [[UInt8]], memberOf: [[UInt8]], location: @autoclosure () -> Location) {
        let dnBytes = Array(dn.utf8)
        withBuffers(members) { members in
            withBuffers(memberOf) { memberOf in
                dnBytes.withView { dn in
                    addGroupEntry(dn: dn, members: members.map { $0! }, memberOf: memberOf.map { $0! }, location: location())
                }
            }
        }
    }

    mutating func addGroupEntry(dn: ByteView, members: [ByteView], memberOf: [ByteView],
                                location: @autoclosure () -> Location) {
        guard let invalid = groups?.addGroup(dn: dn, members: members, memberOf: memberOf) else { return }
        for value in invalid { reportNotDN(value, "member or memberOf", at: location()) }
    }

    private mutating func reportNotDN(_ value: ByteView, _ attribute: String, at location: Location) {
        problems.append(Problem(.groupDN, at: location, "the \(attribute) value \"\(String(decoding: value, as: UTF8.self))\" is not a DN; it is ignored"))
    }

    /// The user's variables the table keeps and the join key into the pool, each value once:
    /// `cn` and `ou` are usually ranges of the DN, the mail address's parts ranges of it, and a
    /// value that feeds several variables (the mail address as `userName` and join key) is stored once. No
    /// allocation per entry. Nil when the DN does not parse (reported; the entry is skipped), else
    /// whether it was read in one pass (`DistinguishedName.commonNameAndUnit`: written plainly).
    private mutating func addUser(dn: ByteView, values: [ByteView?], line: Int?,
                                  location: @autoclosure () -> Location) -> Bool? {
        let pieces: (cn: DistinguishedName.Piece?, ou: DistinguishedName.Piece?, readInOnePass: Bool)
        do {
            pieces = try DistinguishedName.commonNameAndUnit(in: dn, validUTF8: true)
        } catch {
            let text = String(decoding: dn, as: UTF8.self)
            problems.append(Problem(.ldifDN, at: location(), "DN \"\(text)\" is not valid (\(error.message) at offset \(error.offset)); entry skipped"))
            return nil
        }
        if let line { lines.append(UInt32(line)) }
        // The counts' uniqueness checked once an entry, not once a value.
        var mask: UInt32 = 0
        attributeCounts.withWorkerSlots { counts in
            for (i, v) in values.enumerated() where v != nil {
                counts[i] += 1
                if i < 32 { mask |= 1 << UInt32(i) }
            }
        }
        if values.count <= 32 { masks.append(mask) }
        // The user's pairs are made on the stack and appended at once: written into `ranges` one by
        // one, each write checked the array's uniqueness and exclusive access.
        // The pool borrowed and the values as a view: reached through `self` (inout) the pool
        // was retained and released around each append, and captured by the closures below
        // each was retained twice an entry.
        Unmanaged.passUnretained(pool)._withUnsafeGuaranteedRef { storage in values.withView { values in
        withTemporarySlots(count: 2 * stride, repeating: UInt32(0)) { row in
            // Values stored for this entry, by where they came from: one stored once is found again.
            var stored: (ByteView, UInt32) = (.empty, 0)
            var storedMore: (ByteView, UInt32) = (.empty, 0)
            func store(_ value: ByteView) -> UInt32 {
                if !value.isEmpty {
                    if value.isSame(as: stored.0) { return stored.1 }
                    if value.isSame(as: storedMore.0) { return storedMore.1 }
                }
                let offset = append(value)
                (storedMore, stored) = (stored, (value, offset))
                return offset
            }
            // Past 4 GiB the offsets wrap; `checkPool` refuses such a table before it is read.
            func append(_ value: ByteView) -> UInt32 { UInt32(truncatingIfNeeded: storage.append(value)) }
            // `column`: where the value goes in the user's row.
            func put(_ column: Int, _ value: ByteView?) {
                guard let value else { row[2 * column + 1] = .max; return }
                set(column, store(value), value.count)
            }
            func set(_ column: Int, _ offset: UInt32, _ count: Int) {
                row[2 * column] = offset
                row[2 * column + 1] = UInt32(count)
            }
            func attribute(_ variable: Int) -> ByteView? {
                for p in positions[variable] { if let v = values[p] { return v } }
                return nil
            }
            let dnOffset = store(dn)
            func put(_ column: Int, _ piece: DistinguishedName.Piece?) {
                switch piece {
                case .range(let r): set(column, dnOffset &+ UInt32(r.lowerBound), r.count)
                case .bytes(let b): b.withView { set(column, append($0), $0.count) }  // built: never the same buffer again
                case nil: put(column, nil as ByteView?)
                }
            }
            let mail = attribute(Self.emailIndex)
            let at = mail.flatMap { m in m.lastIndex(of: UInt8(ascii: "@")) }
            for (i, (v, index)) in columnVariables.enumerated() {
                switch v {
                case .dn: set(i, dnOffset, dn.count)
                case .cn: if pieces.cn != nil { put(i, pieces.cn) } else { put(i, cnPosition.flatMap { values[$0] }) }
                case .ou: put(i, pieces.ou)
                case .emailAddressLocalPart: put(i, at.map { mail![view: 0..<$0] })
                case .emailAddressDomain: put(i, at.map { mail![view: ($0 + 1)...] })
                case .userName: put(i, attribute(Self.upnIndex) ?? mail)
                default: put(i, attribute(index))
                }
            }
            put(columns.joinKey, values[joinPosition])
            ranges.append(row.view)
        }
        } }
        return pieces.readInOnePass
    }

    /// Appends the users of a builder that read a later part of the same file (a parallel LDIF
    /// read), leaving out those whose DN an earlier user has (`repeated`: per user of `other`;
    /// `ldif.duplicate-dn`, as one reader would), with their group memberships. `lineOffset`: the
    /// lines of the file before that part.
    /// `other`'s tables are spent: the pages it copied from are given back, `piece` bytes at a time.
    mutating func append(_ other: UserTableBuilder, lineOffset: Int, repeated: [Bool], piece: Int = movedPiece) {
        precondition(other.columns == columns, "parts of one directory, one layout")
        precondition(pool.count + other.pool.count <= Self.poolLimit, "checkPool(adding:) before append")
        var problems = other.problems.map { p in
            var p = p
            if p.location.line > 0 { p.location.line += lineOffset }
            return p
        }
        for i in attributeCounts.indices { attributeCounts[i] += other.attributeCounts[i] }
        var kept: [Int] = []
        kept.reserveCapacity(other.count)
        for u in 0..<other.count {
            let line = other.lines.isEmpty ? 0 : Int(other.lines[u]) + lineOffset
            if repeated[u] {
                let text = String(decoding: other.dn(ofUser: u), as: UTF8.self)
                problems.append(Problem(.ldifDuplicateDN, at: Location(file: source, line: line, dn: text),
                                        "DN \"\(text)\" appears again; this entry is skipped"))
                continue
            }
            kept.append(u)
            if !other.lines.isEmpty { lines.append(UInt32(line)) }
            if u < other.masks.count { masks.append(other.masks[u]) }
        }
        // The pairs and the values copied on every core (one core copying them into fresh pages
        // left the others idle), in pieces whose source pages are given back once copied: the
        // part's tables and their copy never stand whole at once (a night's peak at 10M users).
        let stride = 2 * self.stride
        let base = UInt32(pool.count)
        let (theirs, into) = (other.ranges.view, ranges.extend(by: kept.count * stride))
        let usersPerPiece = max(1, piece / (4 * stride))
        var given = 0
        kept.withView { kept in
            for first in Swift.stride(from: 0, to: kept.count, by: usersPerPiece) {
                let end = min(first + usersPerPiece, kept.count)
                forEachRange(end - first) { _, share in
                    for k in (first + share.lowerBound)..<(first + share.upperBound) {
                        let from = kept[k] * stride, to = k * stride
                        for j in Swift.stride(from: 0, to: stride, by: 2) {
                            into[to + j] = theirs[from + j + 1] != .max ? theirs[from + j] &+ base : theirs[from + j]
                            into[to + j + 1] = theirs[from + j + 1]
                        }
                    }
                }
                let read = (kept[end - 1] + 1) * stride
                other.ranges.discardPages(given..<read)
                given = read
            }
        }
        let (values, valuesInto) = (other.pool.view, pool.extend(by: other.pool.count))
        for first in Swift.stride(from: 0, to: values.count, by: max(piece, 1)) {
            let bytes = first..<min(first + max(piece, 1), values.count)
            forEachRange(bytes.count) { _, r in valuesInto.copy(values[view: (first + r.lowerBound)..<(first + r.upperBound)], to: first + r.lowerBound) }
            other.pool.discardPages(bytes)
        }
        if let theirs = other.groups { groups?.append(theirs, keptUsers: kept) }
        // In line order, as one reader reports them.
        self.problems += problems.enumerated().sorted { ($0.element.location.line, $0.offset) < ($1.element.location.line, $1.offset) }.map(\.element)
    }

    /// The bytes `append` copies between giving a part's pages back.
    static let movedPiece = 64 << 20

    /// The DN stored for a user added earlier (for duplicate checks).
    func dn(ofUser u: Int) -> ByteView {
        Self.storedDN(u, pool.view, ranges.view, stride)
    }

    /// The users' DNs, when they are indexed (an LDIF read refuses a DN seen before): by the hash
    /// of the case-folded DN (`hashDN`), each hit checked against the stored DN.
    private var dnIndex = ByteKeyTable(capacity: 16, foldingASCIICase: true)

    /// The hash `hasUser(withDN:)` and `indexDN` take, and a case-folding `ByteKeyTable` files a DN
    /// under (the groups' table of listed members is searched with it).
    static func hashDN(_ dn: ByteView) -> UInt64 { ByteKeyTable.hash(dn, foldingASCIICase: true) }

    /// Whether a user indexed by `indexDN` has this DN (ASCII case-insensitively).
    func hasUser(withDN dn: ByteView, hash: UInt64) -> Bool { dnLookup.contains(dn, hash: hash) }

    /// What `hasUser(withDN:hash:)` reads, valid while the builder is: the readers of later parts
    /// look up each of their DNs in the earlier parts'. Trivial values only: a copy retains
    /// nothing (holding the table, each copy retained its slots: 1.5% of a 1M job's samples).
    struct DNLookup {
        fileprivate let index: ByteKeyTable.Reader
        fileprivate let pool: ByteView
        fileprivate let ranges: BufferView<UInt32>
        fileprivate let stride: Int

        func contains(_ dn: ByteView, hash: UInt64) -> Bool {
            index.find(dn, hash: hash) { UserTableBuilder.storedDN(Int($0), pool, ranges, stride) } != nil
        }

        /// Starts reading the slot `contains` looks at first into the cache.
        @inline(__always)
        func prefetch(hash: UInt64) { index.prefetch(hash: hash) }
    }

    var dnLookup: DNLookup { DNLookup(index: dnIndex.reader, pool: pool.view, ranges: ranges.view, stride: stride) }

    /// Room in the DN index for this many users in all (a reader that can tell).
    mutating func reserveUsers(_ users: Int) { dnIndex.reserve(users) }

    /// Starts reading the DN index's slot for a DN of this hash into the cache.
    @inline(__always)
    func prefetchDN(hash: UInt64) { dnIndex.prefetch(hash: hash) }

    /// Indexes a user's DN for `hasUser(withDN:)`.
    mutating func indexDN(ofUser user: Int, hash: UInt64) {
        let (pool, ranges, stride) = (pool.view, ranges.view, stride)
        _ = dnIndex.insert(Self.storedDN(user, pool, ranges, stride), hash: hash, id: Int32(user)) { Self.storedDN(Int($0), pool, ranges, stride) }
    }

    /// User `u`'s DN in a table's values and ranges (`stride`: pairs a user).
    static func storedDN(_ u: Int, _ pool: ByteView, _ ranges: BufferView<UInt32>, _ stride: Int) -> ByteView {
        let i = (u * stride + UserColumns.dn) * 2
        return pool[view: Int(ranges[i])..<(Int(ranges[i]) + Int(ranges[i + 1]))]
    }

    /// Room for this many bytes of values, ahead (a reader knows its input's size: the pool is
    /// not copied as it grows).
    mutating func reserve(poolBytes: Int) { pool.reserve(poolBytes) }

    /// The pool's offsets are 32-bit: the users' values (their DNs and the attributes the programs
    /// read, not the whole export) must stay within 4 GiB.
    static let poolLimit = Int(UInt32.max)

    /// Refuses a table whose values pass `limit` bytes (with `more` still to join them), before
    /// any wrapped offset is read: `input.too-large`, not a trap or a wrong value.
    func checkPool(adding more: Int = 0, limit: Int = poolLimit) throws(Problem) {
        let bytes = pool.count + more
        guard bytes > limit else { return }
        throw Problem(InputCode.tooLarge, at: Location(file: source),
                      "\(source): the users' values the programs read (DNs and \(attributeOrder.count) attributes) come to \(byteSize(bytes)), over the "
                      + "\(byteSize(limit)) one directory table holds; read the directory in parts (an LDAP filter or an LDIF per region, one run each)")
    }

    public func finish() -> UserTable {
        let table = UserTable(source: source, columns: columns, pool: pool, ranges: ranges, lines: lines, problems: problems)
        table.joinAttribute = map.joinAttribute
        table.attributeCounts = Dictionary(uniqueKeysWithValues: zip(attributeOrder, attributeCounts))
        if masks.count == count { table.attributeMasks = masks }
        let (pool, ranges, stride) = (pool.view, ranges.view, stride)
        table.groups = groups?.finish(userCount: count) { Self.storedDN($0, pool, ranges, stride) }
        return table
    }
}

/// Byte arrays (some missing) as views into one contiguous copy, for the duration of `body`.
func withBuffers<R>(_ arrays: [[UInt8]?], _ body: ([ByteView?]) -> R) -> R {
    let flat = arrays.flatMap { $0 ?? [] }
    return flat.withView { all in
        var offset = 0
        let buffers = arrays.map { a -> ByteView? in
            guard let a else { return nil }
            defer { offset += a.count }
            return all[view: offset..<(offset + a.count)]
        }
        return body(buffers)
    }
}
