@testable import AppConfigSources
import Testing

/// Tonight's pieces matched with last night's by hash (`RecordMatch.match`): a match is a piece
/// with the same hash, and each of last night's pieces is matched at most once, in step or
/// through the table a change too far out of step falls back to.
@Suite("Record match")
struct RecordMatchTests {
    /// Last night's pieces 1...200; tonight's, each case's.
    static let old = (1...200).map(UInt64.init)
    static let cases: [(name: String, new: [UInt64])] = [
        ("the same", old),
        ("a piece given twice in a row", Array(old[0..<50]) + [old[49]] + Array(old[50...])),
        ("a block moved to the end (the table) and a piece of it given twice", Array(old[0..<20]) + Array(old[120...]) + Array(old[20..<120]) + [old[60]]),
        ("every piece twice, the second copies after all", old + old),
        ("new pieces among them", old.map { $0 % 7 == 0 ? $0 + 1000 : $0 }),
    ]

    @Test("each match has tonight's hash, and no piece of last night is matched twice", arguments: cases.indices)
    func matched(_ i: Int) {
        let (name, new) = Self.cases[i]
        let out = RecordMatch.match(Self.old, new)
        #expect(out.count == new.count, "\(name)")
        for (k, m) in out.enumerated() where m >= 0 && Self.old[m] != new[k] { Issue.record("\(name): piece \(k) matched to \(m), another hash") }
        let matched = out.filter { $0 >= 0 }
        #expect(Set(matched).count == matched.count, "\(name): a piece of last night matched twice")
        // Every piece tonight whose hash last night had, once, is matched (nothing given twice is lost).
        #expect(matched.count == Set(new.filter { Self.old.contains($0) }).count, "\(name)")
    }
}
