import AppConfigCore
import Testing
import TestSupport

/// The key tables behind the join, the duplicate checks and the program's string classes: keys
/// by content, ids handed back, value semantics although the slots live in a buffer of their own.
@Suite("Byte key tables")
struct ByteKeyTableTests {
    /// Keys held by the caller, as the tables expect (the table stores hashes and ids only), in
    /// one buffer that does not move.
    final class Keys {
        private let pool = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: 1 << 20)
        private var ranges: [Range<Int>] = []
        deinit { pool.deallocate() }

        func add(_ key: String) -> Int32 {
            let start = ranges.last?.upperBound ?? 0
            for (i, b) in key.utf8.enumerated() { pool[start + i] = b }
            ranges.append(start..<(start + key.utf8.count))
            return Int32(ranges.count - 1)
        }

        func key(_ id: Int32) -> ByteView { ByteView(UnsafeBufferPointer(rebasing: pool[ranges[Int(id)]])) }
    }

    func find(_ table: ByteKeyTable, _ key: String, _ keys: Keys) -> Int32? {
        Array(key.utf8).withView { table.find($0, keyOf: keys.key) }
    }

    func insert(_ table: inout ByteKeyTable, _ key: String, _ keys: Keys) -> Int32? {
        let id = keys.add(key)
        return Array(key.utf8).withView { table.insert($0, id: id, keyOf: keys.key) }
    }

    @Test("grows past its first capacity and finds every key by content; an equal key gives the first id")
    func growth() {
        let keys = Keys()
        var table = ByteKeyTable(capacity: 4)
        for i in 0..<5_000 { #expect(insert(&table, "key-\(i)", keys) == nil) }
        #expect(table.count == 5_000)
        for i in stride(from: 0, to: 5_000, by: 7) { #expect(find(table, "key-\(i)", keys) == Int32(i)) }
        #expect(find(table, "key-5000", keys) == nil)
        #expect(insert(&table, "key-42", keys) == 42)
        #expect(table.count == 5_000)
    }

    @Test("reserve keeps every key and makes room: the slots do not move until more keys than reserved; a copy is untouched",
          arguments: [0, 50, 1_000, 5_000])
    func reserve(keysReserved: Int) {
        let keys = Keys()
        var table = ByteKeyTable(capacity: 4)
        for i in 0..<100 { _ = insert(&table, "key-\(i)", keys) }
        let before = table
        table.reserve(keysReserved)
        let slots = table.slotCount
        for i in 100..<max(keysReserved, 100) { #expect(insert(&table, "key-\(i)", keys) == nil) }
        if keysReserved >= 100 { #expect(table.slotCount == slots) }  // no growth
        #expect(table.count == max(keysReserved, 100))
        for i in stride(from: 0, to: table.count, by: 7) { #expect(find(table, "key-\(i)", keys) == Int32(i)) }
        #expect(before.count == 100 && find(before, "key-99", keys) == 99)
        #expect(keysReserved <= 100 || find(before, "key-100", keys) == nil)
    }

    @Test("made for a number of keys: the least power of two they fill at most three quarters of (16 at least); no growth up to three quarters, doubled past it; every key found",
          arguments: [(keys: 0, slots: 16), (12, 16), (13, 32), (3_000, 4_096), (3_073, 8_192), (30_000, 65_536)])
    func filling(keys count: Int, slots: Int) {
        let keys = Keys()
        var table = ByteKeyTable(filling: count)
        #expect(table.slotCount == slots)
        for i in 0..<(slots * 3 / 4) { #expect(insert(&table, "key-\(i)", keys) == nil) }
        #expect(table.slotCount == slots)
        #expect(insert(&table, "one more", keys) == nil)
        #expect(table.slotCount == slots * 2)
        var found = true
        for i in 0..<(slots * 3 / 4) where find(table, "key-\(i)", keys) != Int32(i) { found = false }
        #expect(found && find(table, "one more", keys) == Int32(slots * 3 / 4))
        #expect(insert(&table, "key-1", keys) == 1)
    }

    @Test("a copy is a value: keys added to one are not in the other, before and after either grows")
    func valueSemantics() {
        let keys = Keys()
        var original = ByteKeyTable(capacity: 8)
        _ = insert(&original, "a", keys)
        var copy = original
        _ = insert(&copy, "b", keys)
        #expect(find(original, "b", keys) == nil)
        #expect(find(copy, "b", keys) == 1)
        for i in 0..<100 { _ = insert(&original, "o\(i)", keys) }  // grows the original only
        #expect(find(copy, "o5", keys) == nil)
        #expect(find(original, "b", keys) == nil)
        #expect(find(original, "a", keys) == 0 && find(copy, "a", keys) == 0)
    }

    @Test("a folding table takes A-Z and a-z as one key; a plain one does not")
    func folding() {
        let keys = Keys()
        var folding = ByteKeyTable(capacity: 8, foldingASCIICase: true)
        var plain = ByteKeyTable(capacity: 8)
        _ = insert(&folding, "CN=Sales,DC=corp", keys)
        _ = insert(&plain, "CN=Sales,DC=corp", keys)
        #expect(find(folding, "cn=sales,dc=CORP", keys) == 0)
        #expect(find(plain, "cn=sales,dc=CORP", keys) == nil)
        #expect(find(plain, "CN=Sales,DC=corp", keys) == 1)
    }

    @Test(arguments: [
        ("UDID-00008030-001A", "udid-00008030-001a", true),     // A-Z as a-z, in words and in the tail
        ("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz", true),
        ("@[`{", "@[`{", true), ("@", "`", false), ("[", "{", false),  // the bytes beside A-Z and a-z stay
        ("ÉCOLE", "école", false),                              // only ASCII folds
        ("key", "key\0", false), ("", "", true), ("12345678", "123456789", false),
    ])
    func foldedHash(a: String, b: String, equal: Bool) {
        let (x, y) = (Array(a.utf8), Array(b.utf8))
        #expect((x.withView(foldedWordHash) == y.withView(foldedWordHash)) == equal)
    }

    /// The tail of a key of eight bytes or more is read as the last eight bytes shifted: the same
    /// hash as the tail gathered byte by byte, for every length and wherever the key lies.
    @Test func foldedHashTailAsByteByByte() {
        func byBytes(_ b: ByteView) -> UInt64 {
            func lowered(_ w: UInt64) -> UInt64 {
                let low = w & 0x7F7F_7F7F_7F7F_7F7F
                return w | ((low &+ 0x3F3F_3F3F_3F3F_3F3F) & ~(low &+ 0x2525_2525_2525_2525) & ~w & 0x8080_8080_8080_8080) >> 2
            }
            func mix(_ h: UInt64, _ w: UInt64) -> UInt64 { let m = (h ^ w) &* 0xBF58_476D_1CE4_E5B9; return m ^ m >> 31 }
            var h = UInt64(b.count) &* 0x9E37_79B9_7F4A_7C15, i = 0, word: UInt64 = 0
            while i < b.count {
                word |= UInt64(b[i]) << UInt64(8 * (i % 8))
                i += 1
                if i % 8 == 0 || i == b.count { h = mix(h, lowered(word)); word = 0 }
            }
            return h
        }
        let text = Array("Xx-UDID-00008030-001A@Example.COM/ou=Sales,dc=corp".utf8)
        for start in 0..<4 {
            for end in start...text.count {
                text.withUnsafeBufferPointer { all in
                    let key = ByteView(UnsafeBufferPointer(rebasing: all[start..<end]))
                    #expect(foldedWordHash(key) == byBytes(key), "bytes \(start)..<\(end)")
                }
            }
        }
    }

    @Test("shared across cores: each key in one share, the first of equal keys wins, duplicates listed in id order")
    func sharded() {
        let keys = Keys()
        for i in 0..<20_000 { _ = keys.add("user\(i % 15_000)@example.com") }
        _ = keys.add("USER7@example.com")
        let table = ShardedKeyTable(count: 20_001, foldingASCIICase: true, shares: 3, key: keys.key)
        func find(_ key: String) -> Int32? {
            Array(key.utf8).withView { table.find($0, keyOf: keys.key) }
        }
        #expect(find("user14999@example.com") == 14_999)
        #expect(find("User7@Example.com") == 7)
        #expect(find("user15000@example.com") == nil)
        #expect(table.duplicates.count == 5_001)
        #expect(table.duplicates.first.map { [$0.id, $0.first] } == [15_000, 0])
        #expect(table.duplicates.last.map { [$0.id, $0.first] } == [20_000, 7])
    }

    @Test("ids filed in a given order: the first of equal keys in that order wins, duplicates listed in it, ids left out not filed")
    func shardedInOrder() {
        let keys = Keys()
        for i in 0..<20_000 { _ = keys.add("user\(i % 15_000)@example.com") }
        // Backwards, without the ids below 100 (a table's ids of users gone).
        let ids = (100..<20_000).reversed().map(Int32.init)
        let table = ShardedKeyTable(count: ids.count, ids: ids, foldingASCIICase: true, shares: 3, key: keys.key)
        func find(_ key: String) -> Int32? { Array(key.utf8).withView { table.find($0, keyOf: keys.key) } }
        #expect(find("user14999@example.com") == 14_999)
        #expect(find("user200@example.com") == 15_200)
        #expect(find("user50@example.com") == 15_050)
        #expect(find("user15000@example.com") == nil)
        #expect(table.duplicates.count == 4_900)
        #expect(table.duplicates.first.map { [$0.id, $0.first] } == [4_999, 19_999])
        #expect(table.duplicates.last.map { [$0.id, $0.first] } == [100, 15_100])
    }
}

/// Folded equality eight bytes at a time (`foldedBytesEqual`) against the byte-by-byte definition:
/// every length around the word size, the bytes next to A-Z and Z (`@`, `[`, backquote, `{`), and
/// bytes above 0x7F whose low seven bits are letters (0xC1 is not `A`).
@Suite("Folded byte equality")
struct FoldedEqualityTests {
    static func byteByByte(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        a.count == b.count && zip(a, b).allSatisfy { asciiLower($0) == asciiLower($1) }
    }

    @Test("fixed cases", arguments: [
        ("", "", true), ("A", "a", true), ("@", "`", false), ("[", "{", false), ("Z", "z", true),
        ("iPhone 15", "IPHONE 15", true), ("iPhone 15", "iPhone 16", false), ("R&D", "r&d", true),
        ("HQ, Building 2", "hq, building 2", true), ("abcdefgh", "ABCDEFGH", true), ("abcdefghi", "ABCDEFGHj", false),
        ("Field Service APAC", "field service apac", true), ("Field Service APAC", "field service apaC!", false),
        ("\u{C1}bc", "\u{E1}bc", false), ("12345678x", "12345678X", true), ("x12345678", "X12345679", false),
        ("AZAZAZAZaz", "azazazazAZ", true), ("[@[@[@[@", "{`{`{`{`", false), ("\u{C1}\u{DA}\u{C1}\u{DA}", "\u{E1}\u{FA}\u{E1}\u{FA}", false),
    ])
    func fixed(_ a: String, _ b: String, _ equal: Bool) {
        let (x, y) = (Array(a.utf8), Array(b.utf8))
        #expect(Self.byteByByte(x, y) == equal)
        x.withView { x in y.withView { y in #expect(x.equals(y, foldingASCIICase: true) == equal) } }
    }

    @Test("20,000 random pairs of 0 to 40 bytes agree with the byte-by-byte definition; half of them equal when folded")
    func random() {
        var random = SplitMix64(seed: 14)
        let alphabet: [UInt8] = Array(0x3E...0x5D) + Array(0x5E...0x7D) + [0x00, 0x20, 0x7F, 0x80, 0xC1, 0xDA, 0xE1, 0xFA, 0xFF]
        var equalCount = 0
        for _ in 0..<20_000 {
            let n = Int.random(in: 0...40, using: &random)
            let a = (0..<n).map { _ in alphabet.randomElement(using: &random)! }
            var b = a.map { c -> UInt8 in
                guard Bool.random(using: &random) else { return c }
                return c >= 0x41 && c <= 0x5A ? c | 0x20 : c >= 0x61 && c <= 0x7A ? c & ~0x20 : c
            }
            if n > 0 && Bool.random(using: &random) { b[Int.random(in: 0..<n, using: &random)] = alphabet.randomElement(using: &random)! }
            let expected = Self.byteByByte(a, b)
            if expected { equalCount += 1 }
            a.withView { x in b.withView { y in #expect(x.equals(y, foldingASCIICase: true) == expected, "\(a) \(b)") } }
        }
        #expect(equalCount > 8_000 && equalCount < 14_000)
    }
}

/// Byte-wise order eight bytes at a time (`bytesCompare`, `precedes`) against the arrays' own
/// lexicographic order: every length around the word size, a difference at every place (the high
/// bit set or not, which a signed comparison would get wrong), and prefixes of each other.
@Suite("Byte order")
struct ByteOrderTests {
    static func reference(_ a: [UInt8], _ b: [UInt8]) -> Int {
        a == b ? 0 : a.lexicographicallyPrecedes(b) ? -1 : 1
    }

    @Test("20,000 random pairs of 0 to 40 bytes: the arrays' order; a third equal, a third one a prefix of the other")
    func random() {
        var random = SplitMix64(seed: 21)
        let alphabet: [UInt8] = [0x00, 0x01, 0x30, 0x41, 0x61, 0x7F, 0x80, 0x81, 0xFE, 0xFF]
        var counts = [0, 0, 0]
        for n in 0..<20_000 {
            let length = Int.random(in: 0...40, using: &random)
            var a = (0..<length).map { _ in alphabet.randomElement(using: &random)! }
            var b = a
            switch n % 3 {
            case 0: break  // equal
            case 1: if length > 0 { b[Int.random(in: 0..<length, using: &random)] = alphabet.randomElement(using: &random)! }
            default: b = Array(a.prefix(Int.random(in: 0...length, using: &random)))  // a prefix
            }
            if n % 2 == 0 { swap(&a, &b) }
            let expected = Self.reference(a, b)
            counts[expected + 1] += 1
            a.withView { x in
                b.withView { y in
                    #expect(bytesCompare(x, y) == expected, "\(a) \(b)")
                    #expect(bytesCompare(y, x) == -expected, "\(b) \(a)")
                    #expect(x.precedes(y) == (expected < 0))
                }
            }
        }
        #expect(counts[1] > 7_000 && counts[0] > 4_000 && counts[2] > 4_000, "\(counts)")
    }
}
