import AppConfigCore
import Testing
import TestSupport

/// The sort that puts a fleet's rows in device-key order (`PrefixSort`): the same order as sorting
/// by the whole keys' bytes, then by row, whatever the keys share.
@Suite("Prefix sort: rows in key order")
struct PrefixSortTests {
    /// The rows of `keys` in key order as `PrefixSort` puts them.
    static func sorted(_ keys: [[UInt8]], parts: Int = 1) -> [Int32] {
        func prefix(_ key: [UInt8]) -> UInt64 { (0..<8).reduce(0) { $0 << 8 | UInt64($1 < key.count ? key[$1] : 0) } }
        var records = keys.enumerated().map { (prefix: prefix($0.element), row: Int32($0.offset)) }
        PrefixSort.sort(&records, parts: parts) { a, b in keys[Int(a.row)].lexicographicallyPrecedes(keys[Int(b.row)]) }
        return records.map(\.row)
    }

    /// The reference: the whole keys compared, then the rows.
    static func reference(_ keys: [[UInt8]]) -> [Int32] {
        keys.indices.sorted { a, b in keys[a] == keys[b] ? a < b : keys[a].lexicographicallyPrecedes(keys[b]) }.map(Int32.init)
    }

    @Test("examples: ties past eight bytes, shorter keys, empty keys, equal keys by row, bytes above 0x7F")
    func examples() {
        let keys = ["C02XYZ123B", "C02XYZ123A", "C02XYZ12", "C02XYZ1", "", "B", "C02XYZ123A", "é", "C02XYZ123", "A\u{0}"].map { Array($0.utf8) }
        #expect(Self.sorted(keys) == [4, 9, 5, 3, 2, 8, 1, 6, 0, 7])
        #expect(Self.sorted(keys) == Self.reference(keys))
        #expect(Self.sorted([]) == [] && Self.sorted([[1]]) == [0])
    }

    @Test("seeded fleets against the reference: random keys, shared prefixes of every length, duplicates; in parts from 32,768 records", arguments: [
        (count: 5_000, shared: 0), (count: 5_000, shared: 3), (count: 5_000, shared: 7), (count: 5_000, shared: 8),
        (count: 5_000, shared: 12), (count: 100_000, shared: 4), (count: 100_000, shared: 0), (count: 40_000, shared: 9),
    ])
    func seeded(_ fleet: (count: Int, shared: Int)) {
        var random = SplitMix64(seed: UInt64(fleet.count * 31 + fleet.shared))
        let common = (0..<fleet.shared).map { _ in UInt8.random(in: 0x21...0x7E, using: &random) }
        var keys: [[UInt8]] = []
        for i in 0..<fleet.count {
            // One in fifty repeats an earlier key; a few end within the shared part.
            if i > 0 && Int.random(in: 0..<50, using: &random) == 0 {
                keys.append(keys[Int.random(in: 0..<i, using: &random)])
                continue
            }
            let length = Int.random(in: 0...(fleet.shared + 6), using: &random)
            keys.append(Array((common + (0..<6).map { _ in UInt8.random(in: 0x30...0x39, using: &random) }).prefix(length)))
        }
        let reference = Self.reference(keys)
        for parts in [1, 2, 3] {
            // One Bool: a failing `==` over 100,000 rows makes Swift Testing diff them for minutes.
            let sorted = Self.sorted(keys, parts: parts), same = sorted == reference
            #expect(same, "\(parts) parts: first difference at \(sorted.indices.first { sorted[$0] != reference[$0] } ?? -1)")
        }
    }
}
