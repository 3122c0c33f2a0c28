@testable import AppConfigBatch
import Testing

/// The new manifest's entries (`Generation.entries`), made in parts on every core, against the
/// walk they replaced: in key order each device missing before a position, then the device
/// there when it was rendered or has a previous entry to carry; those missing after all last.
@Suite("Generation entries in parts")
struct GenerationEntriesTests {
    /// The oracle: one walk of the positions.
    static func walked(order: [Int32], rendered: Set<Int>, carried: [Int: Int], missing: [(before: Int, previous: Int)]) -> [Generation.Entry] {
        var out: [Generation.Entry] = []
        var m = 0
        for position in order.indices {
            while m < missing.count && missing[m].before == position {
                out.append((-1, true, 0, Int32(missing[m].previous)))
                m += 1
            }
            if rendered.contains(position) {
                out.append((order[position], false, UInt16(position % 3), Int32(position)))
            } else if let index = carried[position] {
                out.append((order[position], true, UInt16(position % 3), Int32(index)))
            }
        }
        for rest in missing[m...] { out.append((-1, true, 0, Int32(rest.previous))) }
        return out
    }

    @Test("the same entries in any number of parts, whatever falls on a part's edge", arguments: [0, 1, 2, 5, 64, 1000])
    func parts(_ devices: Int) {
        var generator = SystemRandomNumberGenerator()
        for round in 0..<20 {
            let order = (0..<devices).map { _ in Int32.random(in: 0..<1_000_000, using: &generator) }
            let variants = round % 2 == 0 ? [] : order.indices.map { UInt16($0 % 3) }
            var rendered = Set<Int>(), carried: [Int: Int] = [:]
            for p in order.indices {
                switch Int.random(in: 0..<4, using: &generator) {
                case 0: carried[p] = Int.random(in: 0..<5000, using: &generator)
                case 1: break  // failed, nothing to carry
                default: rendered.insert(p)
                }
            }
            // Missing devices before any position, several before one, and after every one.
            let missing = (0..<Int.random(in: 0...40, using: &generator)).map { _ in Int.random(in: 0...devices, using: &generator) }.sorted()
                .enumerated().map { (before: $0.element, previous: 10_000 + $0.offset) }
            let expected = Self.walked(order: order, rendered: rendered, carried: carried, missing: missing)
                .map { e in variants.isEmpty && e.row >= 0 ? (e.row, e.carried, UInt16(0), e.source) : e }
            for parts in 1...7 {
                let made = Generation.entries(order: order, variants: variants, rendered: { rendered.contains($0) }, carried: carried,
                                              missing: missing, parts: parts)
                #expect(made.count == expected.count, "\(devices) devices, \(parts) parts")
                for (i, (a, b)) in zip(made, expected).enumerated() where a != b {
                    Issue.record("\(devices) devices, \(parts) parts: entry \(i) is \(a), not \(b)")
                    break
                }
            }
        }
    }
}
