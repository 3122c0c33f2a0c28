@testable import AppConfigBatch
import AppConfigCore
import Digest
import Testing

/// `assets.live`: the rendered devices' names, kept as references, merged with the other names.
@Suite("Live assets")
struct LiveAssetsTests {
    /// A digest from a small pool, so names repeat; pool entries 0-3 share their first 8 bytes
    /// (the sort's prefix), so the sort and the repeats are decided by the rest.
    static func digest(_ n: Int) -> SHA256Digest {
        n < 4 ? SHA256Digest(a: 0x1111, b: 0, c: 0, d: UInt64(n))
              : SHA256Digest(a: UInt64(n) &* 0x9E37_79B9_7F4A_7C15, b: UInt64(n), c: 0, d: 0)
    }

    /// Rendered names at `positions` devices and two slots each, `others` names of every form, some
    /// the same as a rendered one; the oracle is every name once, sorted as the old list was.
    static func fixture(positions: Int, others: Int) -> (LiveAssets, expected: [AssetName]) {
        let slots = [DigestSlots(count: positions), DigestSlots(count: positions)]
        var all: Set<AssetName> = []
        var live = LiveAssets(digests: slots, reservingRendered: positions * 2)
        for p in 0..<positions {
            for k in 0..<2 {
                let d = digest((p * 7 + k * 3) % 23)
                slots[k].set(p, d)
                live.addRendered(position: p, slots: k)
                all.insert(AssetName(digest: d, form: 0))
            }
        }
        for o in 0..<others {
            let name = AssetName(digest: digest((o * 5) % 31), form: UInt8(o % 7))
            live.addOther(name)
            all.insert(name)
        }
        live.sortKeepingEachOnce()
        return (live, all.sorted(by: AssetName.precedes))
    }

    @Test("every name once and in order, read in rounds of any size", arguments: [
        (positions: 0, others: 0), (positions: 0, others: 40), (positions: 30, others: 0),
        (positions: 1, others: 1), (positions: 30, others: 40), (positions: 50, others: 9),
    ])
    func rounds(positions: Int, others: Int) {
        let (live, expected) = Self.fixture(positions: positions, others: others)
        for size in [1, 2, 3, 7, 1000] {
            var read: [AssetName] = []
            var start = 0
            while start < live.rounds {
                let end = min(live.rounds, start + size)
                live.forEach(inRounds: start..<end) { read.append($0) }
                start = end
            }
            #expect(read == expected, "rounds of \(size)")
        }
    }

    @Test("assets.live is a line per name: its path")
    func closingFile() throws {
        let (live, expected) = Self.fixture(positions: 20, others: 12)
        var text: [UInt8] = []
        try live.closingFile().write { text += Array($0) }
        let lines = String(decoding: text, as: UTF8.self).split(separator: "\n").map(String.init)
        #expect(lines == expected.map { n in
            var path: [UInt8] = []
            n.appendPath(to: &path)
            return String(decoding: path, as: UTF8.self)
        })
        #expect(lines.count == Set(lines).count)
        // Pool entry 0: its words little-endian, so its bytes are 11 11 and then zeros.
        #expect(lines.first == "assets/1111" + String(repeating: "0", count: 60) + ".plist")
    }
}
