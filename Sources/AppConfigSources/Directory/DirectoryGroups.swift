import AppConfigCore
import AppConfigSpec

/// Collects the directory's group memberships while entries are read: each user's `memberOf`
/// values (Active Directory lists direct groups only), and each group entry's `member` /
/// `uniqueMember` and its own `memberOf` (nesting). DNs are interned once as nodes of a graph, by
/// their canonical spelling (`DistinguishedName.canonical`), so `CN=Sales, OU=G` and `cn=sales,ou=g`
/// are one group.
struct GroupBuilder {
    /// Canonical DN -> node.
    private var nodes: [[UInt8]: Int32] = [:]
    private var canonicalDNs: [[UInt8]] = []
    /// Nodes known to be groups: group entries, and whatever a `memberOf` names.
    private var isGroup: [Bool] = []
    /// (member, group) pairs.
    private var edges: [(member: Int32, group: Int32)] = []
    /// Per user, its `memberOf` nodes: `userGroups[userGroupStart[u]..<userGroupStart[u + 1]]`.
    private var userGroupStart: [UInt32] = [0]
    private var userGroups: [Int32] = []
    /// Per user, the hash of its ASCII-lowercased DN (`UserTableBuilder.hashDN`) when the DN is
    /// plain (its canonical spelling is those bytes lowercased), else 0: group entries name a few
    /// users by DN, and finding them is a hash compare per user, not a hash of every DN (made
    /// while the DN is in cache, not in `finish`).
    private var userDNHash: [UInt64] = []
    private(set) var groupEntries = 0
    /// Every spelling met, by its bytes, and its node (-1: not a DN). A million users name the same
    /// few groups in `memberOf`: each value after the first is one hash and one compare, with no
    /// parse and no allocation (the canonical form of every value was the groups' largest cost).
    private var spellings = ByteKeyTable(capacity: 64)
    private var spellingPool: [UInt8] = []
    private var spellingRanges: [Range<Int>] = []
    private var spellingNode: [Int32] = []

    /// The node of a DN, nil when it is not a DN.
    private mutating func node(_ dn: ByteView) -> Int32? {
        let hash = Self.spellingHash(dn)
        let known = spellingPool.withView { pool in spellings.find(dn, hash: hash) { pool[view: spellingRanges[Int($0)]] } }
        if let known { return spellingNode[Int(known)] < 0 ? nil : spellingNode[Int(known)] }
        let n = canonicalNode(dn)
        let id = Int32(spellingRanges.count)
        spellingRanges.append(spellingPool.count..<(spellingPool.count + dn.count))
        spellingPool.append(dn)
        spellingNode.append(n ?? -1)
        _ = spellingPool.withView { pool in spellings.insert(dn, hash: hash, id: id) { pool[view: spellingRanges[Int($0)]] } }
        return n
    }

    /// A spelling's hash for `spellings`: its length and three words (its first sixteen bytes and
    /// last eight), mixed. The few group DNs that `memberOf` values name differ there (their CN
    /// leads); equal hashes are told apart by the bytes. FNV-1a over every byte of every value
    /// was most of reading the groups.
    static func spellingHash(_ dn: ByteView) -> UInt64 {
        guard dn.count >= 16 else { return fnv1a(dn) }
        func word(_ at: Int) -> UInt64 { dn.word(at: at) }
        func mix(_ h: UInt64, _ w: UInt64) -> UInt64 {
            let m = (h ^ w) &* 0xBF58_476D_1CE4_E5B9
            return m ^ m >> 31
        }
        return mix(mix(mix(UInt64(dn.count) &* 0x9E37_79B9_7F4A_7C15, word(0)), word(8)), word(dn.count - 8))
    }

    /// The node of a DN by its canonical spelling, made when first met.
    private mutating func canonicalNode(_ dn: ByteView) -> Int32? {
        guard let key = Self.canonicalKey(dn) else { return nil }
        if let n = nodes[key] { return n }
        let n = Int32(canonicalDNs.count)
        nodes[key] = n
        canonicalDNs.append(key)
        isGroup.append(false)
        return n
    }

    /// The canonical spelling. Most DNs are written without escapes or spaces around separators:
    /// for those it is the lowercased bytes (after a check that they are a DN).

    static func canonicalKey(_ dn: ByteView) -> [UInt8]? {
        if isPlain(dn) {
            // Still checked as a DN: each RDN needs a type, `=` and a value, and its bytes are UTF-8
            // (a `memberOf` value is not checked when read, as the variables' values are).
            guard firstInvalidUTF8(dn) == nil,
                  (try? DistinguishedName.scan(Array(dn), wants: { _ in false }, visit: { _, _, _ in })) != nil else { return nil }
            return dn.map(asciiLower)
        }
        return try? DistinguishedName.canonical(Array(dn))
    }

    /// A DN whose canonical spelling is its bytes lowercased: no spaces around separators, no
    /// quotes, no multi-valued RDN, no `=` in a value, and escapes only of the characters the
    /// canonical form escapes the same way (`\,` in `CN=Doe\, Jane`, as AD writes it). Most DNs
    /// are: they are compared without a parse or a copy.
    ///
    /// Only the bytes below 0x40 and `\` can make a DN not plain; the others are passed over eight
    /// at a time and the state kept between the ones looked at is what the byte before each says
    /// (read from the DN). Byte by byte it cost every user of a directory whose groups are read.
    static func isPlain(_ dn: ByteView) -> Bool {
        let b = dn
        guard dn.count > 0, b[0] != 0x20 else { return false }
        let n = dn.count
        var sawEquals = false, anyEquals = false
        /// The byte a `\` escapes: checked when the backslash is met, not a separator.
        var escapedAt = -1
        /// False when the byte at `j` (below 0x40 or `\`) makes the DN not plain.
        func visit(_ j: Int) -> Bool {
            let c = b[j]
            if j == escapedAt { return true }
            // Which of them matter (` "#+,;<=>`: bits 0x20 0x22 0x23 0x2B 0x2C 0x3B 0x3C 0x3D 0x3E, and
            // `\`); digits and the rest of the punctuation are plain text. A literal: as a static
            // it was a `swift_once` call per DN.
            if c < 0x40 ? (0x7800_180D_0000_0000 as UInt64) >> UInt64(c) & 1 == 0 : c != UInt8(ascii: "\\") { return true }
            let previous: UInt8 = j == 0 ? 0 : j - 1 == escapedAt ? UInt8(ascii: "a") : b[j - 1]
            switch c {
            case UInt8(ascii: "\\"):
                // Hex pairs, `\ `, `\#`: parsed, not plain.
                guard j + 1 < n, DistinguishedName.canonicallyEscaped.contains(b[j + 1]) else { return false }
                escapedAt = j + 1
            case UInt8(ascii: "\""), UInt8(ascii: "+"), UInt8(ascii: ";"), UInt8(ascii: "#"), UInt8(ascii: "<"), UInt8(ascii: ">"): return false
            case UInt8(ascii: "="):
                if sawEquals || previous == 0x20 { return false }
                sawEquals = true
                anyEquals = true
            case UInt8(ascii: ","):
                if previous == 0x20 || !sawEquals { return false }
                sawEquals = false
            case 0x20 where previous == UInt8(ascii: ",") || previous == UInt8(ascii: "="): return false
            default: break
            }
            return true
        }
        var i = 0
        while i + 8 <= n {
            let w = b.word(at: i)
            // 0x80 in each byte below 0x40 (bits 7 and 6 clear), and in each `\` (exact: no carries).
            let low = ~(w | w << 1) & 0x8080_8080_8080_8080
            let x = w ^ 0x5C5C_5C5C_5C5C_5C5C
            var looked = low | ~(((x & 0x7F7F_7F7F_7F7F_7F7F) &+ 0x7F7F_7F7F_7F7F_7F7F) | x | 0x7F7F_7F7F_7F7F_7F7F)
            while looked != 0 {
                guard visit(i + looked.trailingZeroBitCount / 8) else { return false }
                looked &= looked - 1
            }
            i += 8
        }
        while i < n {
            if b[i] < 0x40 || b[i] == UInt8(ascii: "\\"), !visit(i) { return false }
            i += 1
        }
        return b[n - 1] != 0x20 && anyEquals
    }

    /// The next user's direct groups (call once per user added, in order). `dnHash`: the hash of
    /// its DN when the caller made it (else made here). Values that are not DNs are returned for
    /// the caller to report.
    /// `readInOnePass`: the user table read the DN's cn and ou in one pass (it is written plainly).
    mutating func addUser(dn: ByteView, dnHash: UInt64?, readInOnePass: Bool, memberOf: [ByteView]) -> [ByteView] {
        let plain = readInOnePass ? dn.dnCountsPlain : Self.isPlain(dn)
        userDNHash.append(plain ? dnHash ?? UserTableBuilder.hashDN(dn) : 0)
        var invalid: [ByteView] = []
        for value in memberOf {
            guard let g = node(value) else { invalid.append(value); continue }
            isGroup[Int(g)] = true
            userGroups.append(g)
        }
        userGroupStart.append(UInt32(userGroups.count))
        return invalid
    }

    /// A group entry: its members (users or groups, by DN) and the groups it is itself a member of.
    mutating func addGroup(dn: ByteView, members: [ByteView], memberOf: [ByteView]) -> [ByteView] {
        guard let g = node(dn) else { return [dn] }
        groupEntries += 1
        isGroup[Int(g)] = true
        var invalid: [ByteView] = []
        for value in members {
            if let m = node(value) { edges.append((m, g)) } else { invalid.append(value) }
        }
        for value in memberOf {
            if let parent = node(value) { isGroup[Int(parent)] = true; edges.append((g, parent)) } else { invalid.append(value) }
        }
        return invalid
    }

    /// Appends what a reader of a later part of the same file collected: its nodes by their
    /// canonical spelling, its edges, and the direct groups of its users that were kept (`kept`:
    /// their indices in that part, in order; a user whose DN an earlier part had is left out).
    mutating func append(_ other: GroupBuilder, keptUsers kept: [Int]) {
        let node = other.canonicalDNs.indices.map { n -> Int32 in
            let key = other.canonicalDNs[n]
            let mine: Int32
            if let existing = nodes[key] {
                mine = existing
            } else {
                mine = Int32(canonicalDNs.count)
                nodes[key] = mine
                canonicalDNs.append(key)
                isGroup.append(false)
            }
            if other.isGroup[n] { isGroup[Int(mine)] = true }
            return mine
        }
        edges += other.edges.map { (node[Int($0.member)], node[Int($0.group)]) }
        for u in kept {
            userDNHash.append(other.userDNHash[u])
            let range = Int(other.userGroupStart[u])..<Int(other.userGroupStart[u + 1])
            for g in other.userGroups[range] { userGroups.append(node[Int(g)]) }  // no array per user
            userGroupStart.append(UInt32(userGroups.count))
        }
        groupEntries += other.groupEntries
    }

    /// `userDN(u)`: each user's DN as stored, to find the users that group entries list by DN.
    func finish(userCount: Int, userDN: (Int) -> ByteView) -> DirectoryGroups {
        // Members of each group: a CSR list from the (member, group) pairs.
        var start = [Int32](repeating: 0, count: canonicalDNs.count + 1)
        for e in edges { start[Int(e.group) + 1] += 1 }
        for i in 0..<canonicalDNs.count { start[i + 1] += start[i] }
        var fill = start
        var members = [Int32](repeating: 0, count: edges.count)
        for e in edges {
            members[Int(fill[Int(e.group)])] = e.member
            fill[Int(e.group)] += 1
        }
        // Users that a group entry lists by DN: each user looked up among the members that are not
        // groups (none: nothing to look up). A plain DN's lowercased bytes are its canonical
        // spelling: such a user is looked up by the hash made when it was read (its DN is read
        // only on a hit); the others by their canonical spelling.
        var userNode = [Int32]()
        var listed = ByteKeyTable(capacity: 16, foldingASCIICase: true)
        var listedPool: [UInt8] = []
        var listedRanges: [Range<Int>] = []
        var listedNode: [Int32] = []
        for e in edges where !isGroup[Int(e.member)] {
            let key = canonicalDNs[Int(e.member)]
            listedRanges.append(listedPool.count..<(listedPool.count + key.count))
            listedPool += key
            let inserted = key.withView { k in
                listedPool.withView { pool in listed.insert(k, id: Int32(listedNode.count)) { pool[view: listedRanges[Int($0)]] } }
            }
            if inserted == nil { listedNode.append(e.member) } else { listedRanges.removeLast(); listedPool.removeLast(key.count) }
        }
        if listed.count > 0 {
            // One range of users per core (read-only tables).
            precondition(userDNHash.count == userCount, "a hash per user added")
            userNode = [Int32](repeating: -1, count: userCount)
            listedPool.withView { pool in
                userNode.withWorkerSlots { out in
                    func find(_ key: ByteView, hash: UInt64) -> Int32 {
                        listed.find(key, hash: hash) { pool[view: listedRanges[Int($0)]] }.map { listedNode[Int($0)] } ?? -1
                    }
                    forEachRange(userCount, parallelFrom: 65_536) { _, users in
                        for u in users {
                            let hash = userDNHash[u]
                            if hash != 0 {
                                out[u] = find(userDN(u), hash: hash)
                            } else if let key = Self.canonicalKey(userDN(u)) {
                                out[u] = key.withView { find($0, hash: listed.hash($0)) }
                            }
                        }
                    }
                }
            }
        }
        return DirectoryGroups(nodes: nodes, canonicalDNs: canonicalDNs, isGroup: isGroup, memberStart: start, members: members,
                               userGroupStart: userGroupStart, userGroups: userGroups, userNode: userNode, groupEntries: groupEntries)
    }
}

/// The directory's groups as a graph, read once per run: which users are in which of the groups
/// that assignments name, nested groups included (a group in a group in the named group), cycles
/// cut (each group is visited once).
public final class DirectoryGroups: Sendable {
    private let nodes: [[UInt8]: Int32]
    private let canonicalDNs: [[UInt8]]
    private let isGroup: [Bool]
    private let memberStart: [Int32]
    private let members: [Int32]
    private let userGroupStart: [UInt32]
    private let userGroups: [Int32]
    private let userNode: [Int32]
    /// Group entries read (LDIF group entries, LDAP group search results).
    public let groupEntries: Int

    init(nodes: [[UInt8]: Int32], canonicalDNs: [[UInt8]], isGroup: [Bool], memberStart: [Int32], members: [Int32],
         userGroupStart: [UInt32], userGroups: [Int32], userNode: [Int32], groupEntries: Int) {
        self.nodes = nodes
        self.canonicalDNs = canonicalDNs
        self.isGroup = isGroup
        self.memberStart = memberStart
        self.members = members
        self.userGroupStart = userGroupStart
        self.userGroups = userGroups
        self.userNode = userNode
        self.groupEntries = groupEntries
    }

    /// Groups known (entries and the groups `memberOf` values name).
    public var groupCount: Int { isGroup.lazy.filter { $0 }.count }

    /// Every group's name, its leaf RDN's `cn=` value (for a "did you mean").
    public var groupNames: [String] {
        (0..<canonicalDNs.count).compactMap { n in
            guard isGroup[n] else { return nil }
            var rdn = 0
            var leafCN: [UInt8]?
            try? DistinguishedName.scan(canonicalDNs[n], wants: { _ in true }) { type, value, newRDN in
                if newRDN { rdn += 1 }
                if rdn == 1, leafCN == nil, type.elementsEqual("cn".utf8) { leafCN = value }
            }
            return leafCN.map { String(decoding: $0, as: UTF8.self) }
        }
    }

    /// The groups a name stands for: a DN names one (by its canonical spelling), a bare name every
    /// group whose leaf RDN is `cn=` that name (ASCII case-insensitively).
    public func groups(named name: String) -> [Int32] {
        if Assignment.isGroupDN(name) {
            return Array(name.utf8).withView(GroupBuilder.canonicalKey).flatMap { nodes[$0] }.map { [$0] } ?? []
        }
        let wanted = name.utf8.map(asciiLower)
        return (0..<Int32(canonicalDNs.count)).filter { n in
            guard isGroup[Int(n)] else { return false }
            var rdn = 0
            var leafCN: [UInt8]?
            try? DistinguishedName.scan(canonicalDNs[Int(n)], wants: { _ in true }) { type, value, newRDN in
                if newRDN { rdn += 1 }
                if rdn == 1, leafCN == nil, type.elementsEqual("cn".utf8) { leafCN = value }
            }
            return leafCN == wanted
        }
    }

    /// Per user, a bit for each name in `names` (bit i for names[i], at most 64) whose groups hold
    /// the user directly or through nested groups. Each name's members are found by one walk down
    /// from its groups; a group met twice (a cycle, or two paths) is walked once.
    public func memberships(of names: [String], userCount: Int) -> [UInt64] {
        precondition(names.count <= 64)
        var nodeBits = [UInt64](repeating: 0, count: canonicalDNs.count)
        var seen = [Bool](repeating: false, count: canonicalDNs.count)
        for (bit, name) in names.enumerated() {
            for i in seen.indices { seen[i] = false }
            var stack = groups(named: name)
            for n in stack { seen[Int(n)] = true }
            while let n = stack.popLast() {
                nodeBits[Int(n)] |= 1 << UInt64(bit)
                for m in members[Int(memberStart[Int(n)])..<Int(memberStart[Int(n) + 1])] where !seen[Int(m)] {
                    seen[Int(m)] = true
                    stack.append(m)
                }
            }
        }
        return (0..<userCount).map { u in
            var bits = userNode.isEmpty || userNode[u] < 0 ? 0 : nodeBits[Int(userNode[u])]
            if u + 1 < userGroupStart.count {
                for g in userGroups[Int(userGroupStart[u])..<Int(userGroupStart[u + 1])] { bits |= nodeBits[Int(g)] }
            }
            return bits
        }
    }
}
