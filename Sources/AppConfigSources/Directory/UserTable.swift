import AppConfigCore
import CByteScan

/// Which directory attributes feed the user variables. Each variable takes the first attribute of
/// its list that an entry has, so one map serves Active Directory (`sAMAccountName`,
/// `userPrincipalName`, `mail`, `displayName`, `givenName`, `sn`, `preferredLanguage`) and OpenLDAP
/// inetOrgPerson (`uid`, `mail`, `cn`...). A multi-valued attribute gives its first value.
/// `dn`, `cn` and `ou` come from the entry's DN; `emailAddressLocalPart`/`Domain` split
/// `emailAddress` at its last `@`; `userName` is the UPN, else the mail address.
public struct AttributeMap: Sendable {
    public var sources: [UserVariable: [String]] = [
        .sAMAccountName: ["sAMAccountName", "uid"],
        .upn: ["userPrincipalName"],
        .emailAddress: ["mail"],
        .displayName: ["displayName", "cn"],
        .firstName: ["givenName"],
        .lastName: ["sn"],
        .locale: ["preferredLanguage"],
    ]
    /// The attribute a device's user key is matched against (`--user-attribute`), case-insensitively.
    public var joinAttribute = "mail"
    /// The attributes `--attribute VARIABLE=attr` named (the job says once when no entry has one).
    public var given: [UserVariable: String] = [:]
    /// Also read group memberships: every `memberOf` of a user, and the group entries (`member`,
    /// `uniqueMember`, their own `memberOf`). Assignments that match on `group` need them.
    public var readsGroups = false
    /// The multi-valued attributes read for group entries, lowercased, in this order (users: `memberof`).
    public static let groupAttributes = ["memberof", "member", "uniquemember"]
    /// The object classes of group entries, lowercased.
    public static let groupClasses = ["group", "groupofnames", "groupofuniquenames"]

    public init() {}

    /// `--attribute variable=attr` overrides one variable's source.
    public mutating func set(_ variable: UserVariable, to attribute: String) { sources[variable] = [attribute] }

    /// The user variables the table keeps (a render: those its programs read), nil for all. The
    /// attributes read stay the same (the join diagnosis counts them); values no program reads are
    /// not stored.
    public var keptVariables: Set<UserVariable>?

    public var columns: UserColumns { UserColumns(keeping: keptVariables) }

    /// Every attribute an entry must deliver, lowercased (what an LDAP search asks for).
    public var requestedAttributes: [String] {
        var names = Set(sources.values.flatMap { $0 }.map { $0.lowercased() })
        names.insert(joinAttribute.lowercased())
        return names.sorted()
    }
}

/// A user table's columns: `dn`, the other variables kept in `UserVariable.allCases` order, then
/// the join key. A table keeps what its programs read (a pair per user and variable was 112 bytes
/// a user whatever they read) and `alwaysKept`.
public struct UserColumns: Sendable, Equatable {
    public let variables: [UserVariable]
    /// Each kept variable's column (looked up per plan, and per user by the join's diagnosis).
    private let columnOf: [UserVariable: Int]
    /// `dn`: duplicates, groups and messages name users by it; the addresses and account names a
    /// join that finds few users tries instead (`Fleet.joinDiagnosis`).
    public static let alwaysKept: Set<UserVariable> = [.dn, .emailAddress, .upn, .sAMAccountName]

    public init(keeping kept: Set<UserVariable>? = nil) {
        variables = [.dn] + UserVariable.allCases.filter { $0 != .dn && (kept?.contains($0) != false || Self.alwaysKept.contains($0)) }
        columnOf = Dictionary(uniqueKeysWithValues: variables.enumerated().map { ($1, $0) })
    }

    /// Pairs per user: one per variable kept and one for the join key.
    public var stride: Int { variables.count + 1 }
    static let dn = 0
    var joinKey: Int { variables.count }

    public func column(of variable: UserVariable) -> Int? { columnOf[variable] }
}

/// Users with their variables resolved once at load, in one byte buffer, and an index from the
/// join attribute (case-insensitive) to the user. Values are pointers into the table's buffer,
/// valid for its lifetime.
public final class UserTable: @unchecked Sendable {
    public let source: String
    /// The users the table holds.
    public let count: Int
    /// The ids a user may have, `0..<slots`: every one a user's, in file order, unless `order` says
    /// otherwise. Per-user lists (`lines`, `attributeMasks`, what callers keep per user) have a place per slot.
    package let slots: Int
    /// The users' ids in file order, where they are not `0..<slots`: a night that read only what
    /// changed (`IncrementalDirectory`) keeps last night's users under their ids (their values'
    /// ranges are last night's, not copied: at 10M users, 576 MB), with the users read tonight after
    /// them; the ids of users gone are no one's.
    package let order: [Int32]?
    /// The entries the source held (people, groups, folders, a schema's), when it counts them (LDIF).
    public internal(set) var entries: Int?
    public let problems: [Problem]
    /// The attribute devices are matched on, and how many users have each requested attribute
    /// (lowercased names): what `Fleet.joinDiagnosis` explains a poor join with.
    public internal(set) var joinAttribute = "mail"
    public internal(set) var attributeCounts: [String: Int] = [:]
    /// Per user, which requested attributes (`AttributeMap.requestedAttributes` order, a bit
    /// each) its entry had, when known: what an incremental night's counts are made of.
    package internal(set) var attributeMasks: [UInt32]?
    /// The LDIF file's segments, and per segment the user its entry became (-1: none), when the
    /// table was read from a file whose segments were found: what the night after compares
    /// (`IncrementalDirectory`).
    package internal(set) var segments: (segments: LDIFSegments, users: [Int32])?
    /// The pool's bytes when the file was last read whole: an incremental night appends the
    /// values of the users it read, and reads the file whole again once the pool has grown by half.
    package internal(set) var poolAtFullRead: Int?
    /// The memberships read when the map asked for them (`readsGroups`), else nil.
    public internal(set) var groups: DirectoryGroups?
    /// Per user, its DN's hash and its join key's (`UserKeyHashes`), when the table was loaded
    /// from an image (others make them from their values when their image is written).
    package let keyHashes: UserKeyHashes?
    /// The users' values, back to back.
    private let pool: ByteView
    /// Per user: its `columns`' (offset, length) pairs into `pool`; absent when the entry has no value.
    private let ranges: BufferView<UInt32>
    /// What holds `pool` and `ranges`: the builder's buffers, taken over (not copied: the pool is
    /// the directory's size), or an image's mapping (`UserTableImage`).
    private let owners: [AnyObject]
    /// The image the table was loaded from, mapped: whether it changed since (`change()`).
    private let mapping: MappedFile?
    private let records: RecordTable
    private let index: ShardedKeyTable
    public let columns: UserColumns

    /// Per user (by id), the line its entry starts on (LDIF), or empty (LDAP).
    let lines: [UInt32]
    /// The problems of reading the entries (`problems` adds the join keys users share).
    let readProblems: [Problem]

    /// `lines`: per user, the line its entry starts on (LDIF), or empty (LDAP).
    convenience init(source: String, columns: UserColumns, pool: GrowingBuffer<UInt8>, ranges: GrowingBuffer<UInt32>, lines: [UInt32], problems: [Problem]) {
        self.init(source: source, columns: columns, pool: pool.view, ranges: ranges.view, owners: [pool, ranges], lines: lines, problems: problems)
    }

    /// `pool` and `ranges` held by `owners` (or by `mapping`, kept to tell a change) for the table's
    /// life; `keyHashes` too, when given. `joinHash`: each user's join key hash (`UserKeyHashes.hash`)
    /// where it is known without reading the key (else `keyHashes`' where given): the join index is
    /// filed by it.
    /// `order`: the users' ids in file order, where not all of `0..<slots` in order (see `order`).
    init(source: String, columns: UserColumns, pool: ByteView, ranges: BufferView<UInt32>, owners: [AnyObject] = [], mapping: MappedFile? = nil,
         lines: [UInt32], problems: [Problem], keyHashes: UserKeyHashes? = nil, order: [Int32]? = nil, joinHash: ((Int32) -> UInt64)? = nil) {
        self.source = source
        self.keyHashes = keyHashes
        self.columns = columns
        self.lines = lines
        readProblems = problems
        let stride = columns.stride, joinKey = columns.joinKey
        (self.pool, self.ranges, self.owners, self.mapping) = (pool, ranges, owners, mapping)
        let records = RecordTable(pairs: ranges, bytes: pool, width: stride)
        self.records = records
        slots = ranges.count / (2 * stride)
        self.order = order
        count = order?.count ?? slots
        var problems = problems
        // The join index, keys folded to lower case, filled on every core, in file order (the first of a key wins).
        func key(_ u: Int32) -> ByteView { records.value(Int(u), joinKey) }
        let index = ShardedKeyTable(count: count, ids: order, foldingASCIICase: true, key: key, hash: joinHash ?? keyHashes.map { h in { h.join(Int($0)) } })
        for (u, first) in index.duplicates {
            func dn(_ user: Int32) -> String { String(decoding: records.value(Int(user), UserColumns.dn), as: UTF8.self) }
            func entry(_ user: Int32) -> String {
                "\"\(dn(user))\"" + (lines.isEmpty ? "" : " (line \(lines[Int(user)]))")
            }
            problems.append(Problem(.userDuplicateKey, at: Location(file: source, line: lines.isEmpty ? 0 : Int(lines[Int(u)]), dn: dn(u)),
                                    "two users have the join key \"\(String(decoding: key(u), as: UTF8.self))\": \(entry(first)) and \(entry(u)); the first is used"))
        }
        self.index = index
        self.problems = problems
    }

    /// The id of the user at `position` in file order (`0..<count`).
    @inline(__always)
    package func user(at position: Int) -> Int { order.map { Int($0[position]) } ?? position }

    /// A user variable's value, or nil when the entry has none (or the table does not keep it).
    @inline(__always)
    package func value(user: Int, _ variable: UserVariable) -> ByteView? {
        columns.column(of: variable).flatMap { value(user: user, index: $0) }
    }

    /// `value(user:_:)` by the variable's column (`columns.column(of:)`), looked up once per plan.
    @inline(__always)
    package func value(user: Int, index: Int) -> ByteView? { records.field(user, index) }

    /// Starts reading a user's ranges into the cache (`prefetchValue` a few rows later finds them there).
    @inline(__always)
    public func prefetchRanges(user: Int) { records.prefetchPairs(user) }

    /// Starts reading a user's value into the cache (its range is read now: see `prefetchRanges`).
    @inline(__always)
    public func prefetchValue(user: Int, index: Int) {
        records.prefetchValue(user, index)
    }

    public func string(user: Int, _ variable: UserVariable) -> String? {
        value(user: user, variable).map { String(decoding: $0, as: UTF8.self) }
    }

    /// The user whose join attribute equals this key (ASCII case-insensitively).
    package func user(forKey key: ByteView) -> Int? { user(forKey: key, hash: joinHash(key)) }

    public func user(forKey key: String) -> Int? { Array(key.utf8).withView { user(forKey: $0) } }

    /// A join look-up in steps, for many keys in turn: each key's hash (`joinHash`), what its
    /// look-up reads started a few keys ahead (`prefetchLookup`), then `user(forKey:hash:)`.
    /// Each look-up read an index slot and a user's key, two cache misses a device.
    @inline(__always)
    package func joinHash(_ key: ByteView) -> UInt64 { index.hash(key) }

    /// Step 0: the index's slot for `hash`; 1 (the slot read by then): where the user in it keeps
    /// its key; 2 (that read by then): the key's bytes.
    @inline(__always)
    package func prefetchLookup(hash: UInt64, step: Int) {
        if step == 0 { return index.prefetch(hash: hash) }
        let u = index.firstCandidate(hash: hash)
        guard u >= 0 else { return }
        if step == 1 { records.prefetchPair(Int(u), columns.joinKey) } else { records.prefetchValue(Int(u), columns.joinKey) }
    }

    /// `user(forKey:)` with the key's hash made beforehand (`joinHash`).
    @inline(__always)
    package func user(forKey key: ByteView, hash: UInt64) -> Int? {
        guard !key.isEmpty else { return nil }
        let joinKey = columns.joinKey
        return index.find(key, hash: hash) { u in records.value(Int(u), joinKey) }.map(Int.init)
    }

    /// The users' values and their ranges, as the table holds them (`UserTableImage`).
    var poolBytes: ByteView { pool }
    var rangeBytes: ByteView { ranges.bytes }

    /// Nil, or why the table's values can no longer be trusted: the image it was loaded from,
    /// mapped, was cut shorter or written to in place since. A job asks before it publishes.
    public func change() -> Problem? { mapping?.change()?.problem }
}

/// Per user of a table, the hashes a night looks its keys up by, kept in its image: its DN's and
/// its join key's (`UserKeyHashes.hash`, case folded), a pair a user. Why: checking a night's DNs
/// against the users kept and filing the join index hashed every kept user's DN and join key,
/// reading all the values (at 10M users, 2.3 GB: a second of the directory phase).
package struct UserKeyHashes: @unchecked Sendable {
    /// `2 * users` hashes: the DN's, then the join key's, per user.
    package let pairs: BufferView<UInt64>

    package init(pairs: BufferView<UInt64>) { self.pairs = pairs }

    @inline(__always) package func dn(_ user: Int) -> UInt64 { pairs[2 * user] }
    @inline(__always) package func join(_ user: Int) -> UInt64 { pairs[2 * user + 1] }

    /// The hash of a DN or a join key: what the join index and a DN table file them under
    /// (`ByteKeyTable.hash`, ASCII case folded). An image records `probe` made with it, so that
    /// one made by another hash is not read.
    @inline(__always) package static func hash(_ key: ByteView) -> UInt64 { ByteKeyTable.hash(key, foldingASCIICase: true) }
    package static var probe: UInt64 { Array("CN=AppConfig,DC=probe".utf8).withView { hash($0) } }

    /// User `u`'s join key hash, made from its value.
    @inline(__always)
    static func join(of table: UserTable, _ u: Int) -> UInt64 { hash(table.value(user: u, index: table.columns.joinKey) ?? .empty) }

    /// The pairs of users `range` of `table`, made from its values, into `into` (from its start).
    static func make(_ table: UserTable, users range: Range<Int>, into: WorkerSlots<UInt64>) {
        for u in range {
            into[2 * (u - range.lowerBound)] = hash(table.value(user: u, index: UserColumns.dn) ?? .empty)
            into[2 * (u - range.lowerBound) + 1] = join(of: table, u)
        }
    }
}
