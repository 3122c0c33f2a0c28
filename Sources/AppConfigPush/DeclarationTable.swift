import AppConfigCore

/// The output's declarations by Identifier. A `[String: Declaration]` at 3M declarations (1M
/// devices) cost a status run seconds: SipHash over every 50-byte Identifier and, on each probe,
/// a cache miss on a key's storage. Here each slot carries 32 bits of the Identifier's hash beside
/// its index, so a probe compares Identifiers only where the bits match (almost always the one
/// sought), and the hash reads eight bytes at a time. Written by hand because the benchmark says
/// so (`Status.1000kEvents.foldAndJoin`).
public struct DeclarationTable: Sendable {
    /// Every declaration, in the order read (the last one read of an Identifier wins).
    public let all: [PushSource.Declaration]
    /// Open addressing: a slot holds the hash's high 32 bits and the index + 1 (0: empty).
    private let slots: [UInt64]

    init(_ declarations: [PushSource.Declaration]) { (all, slots) = Self.build(declarations) }

    private static func build(_ declarations: [PushSource.Declaration]) -> ([PushSource.Declaration], [UInt64]) {
        var capacity = 16
        while capacity < declarations.count * 2 { capacity <<= 1 }
        let hashes = ParallelLines.map(declarations.count) { i in hash(declarations[i].identifier) }
        var slots = [UInt64](repeating: 0, count: capacity)
        var replaced: Set<Int> = []
        for i in declarations.indices {
            let h = hashes[i], tag = h >> 32
            var s = Int(truncatingIfNeeded: h) & (capacity - 1)
            while slots[s] != 0 {
                let j = Int(truncatingIfNeeded: slots[s] & 0xFFFF_FFFF) - 1
                if slots[s] >> 32 == tag && declarations[j].identifier == declarations[i].identifier {
                    replaced.insert(j)
                    break
                }
                s = (s + 1) & (capacity - 1)
            }
            slots[s] = tag << 32 | UInt64(i + 1)
        }
        guard replaced.isEmpty else {
            // An Identifier read twice (an output holds each once): the later one stands, as in a dictionary.
            return build(declarations.indices.filter { !replaced.contains($0) }.map { declarations[$0] })
        }
        return (declarations, slots)
    }

    public var count: Int { all.count }
    public var isEmpty: Bool { all.isEmpty }

    /// The declaration with this Identifier, if the output holds one.
    public subscript(id: String) -> PushSource.Declaration? { index(of: id).map { all[$0] } }

    /// Where the declaration with this Identifier is in `all`.
    public func index(of id: String) -> Int? {
        probe(Self.hash(id)) { all[$0].identifier == id }
    }

    /// Where the declaration whose Identifier is these bytes is in `all` (an index line's set
    /// member, found without a string made for it).
    public func index(ofUTF8 id: ArraySlice<UInt8>) -> Int? {
        id.withUnsafeBufferPointer { u in
            probe(wordHash(ByteView(u), foldingASCIICase: false)) { j in
                // A native string's bytes are contiguous: compared with memcmp, not generically.
                all[j].identifier.utf8.withContiguousStorageIfAvailable { $0.count == u.count && (u.isEmpty || memcmp($0.baseAddress!, u.baseAddress!, u.count) == 0) }
                    ?? all[j].identifier.utf8.elementsEqual(u)
            }
        }
    }

    /// The slots from the hash's own on, until an empty one: the first whose tag matches and
    /// whose declaration `matches`.
    private func probe(_ h: UInt64, _ matches: (Int) -> Bool) -> Int? {
        guard !slots.isEmpty else { return nil }
        let tag = h >> 32, mask = slots.count - 1
        var s = Int(truncatingIfNeeded: h) & mask
        while slots[s] != 0 {
            let j = Int(truncatingIfNeeded: slots[s] & 0xFFFF_FFFF) - 1
            if slots[s] >> 32 == tag && matches(j) { return j }
            s = (s + 1) & mask
        }
        return nil
    }

    static func hash(_ id: String) -> UInt64 {
        var id = id
        return id.withUTF8 { wordHash(ByteView($0), foldingASCIICase: false) }
    }
}
