import AppConfigCore
@testable import AppConfigSources
import AppConfigSpec
import TestSupport
import Testing

/// The C record scanner (`nextWellFormed`) against the careful one (`next`): the same records,
/// fields, lines and ends wherever it takes a record, and every record it refuses read by `next`
/// with its error.
@Suite("CSV records through the C scanner")
struct CSVFastPathTests {
    struct Read: Equatable {
        var line: Int
        var fields: [Int]
        var error: String?
        var position: Int
        var lineAfter: Int
    }

    /// Every record of `text`, each through the C scanner when `fast` and it takes it.
    static func records(_ text: [UInt8], fast: Bool, delimiter: UInt8 = UInt8(ascii: ",")) -> (reads: [Read], taken: Int) {
        var bytes = text
        return bytes.withWorkerSlots { buffer in
            var scanner = CSVScanner(bytes: buffer, delimiter: delimiter, unescapes: false)
            var fields = CSVFieldBuffer(capacity: 4)  // small: records with more fields go to `next`, which grows it
            var reads: [Read] = []
            var taken = 0
            while scanner.position < buffer.count {
                var record = fast ? scanner.nextWellFormed(into: &fields) : nil
                if record != nil { taken += 1 } else { record = scanner.next(into: &fields) }
                guard let record else { break }
                let pairs = (0..<fields.count).flatMap { [fields.offset($0), fields.length($0)] }
                reads.append(Read(line: record.line, fields: pairs, error: record.error.map { "\($0.0) \($0.message(0))" },
                                  position: scanner.position, lineAfter: scanner.line))
            }
            return (reads, taken)
        }
    }

    @Test("table: plain, quoted, doubled quotes, newlines in quotes, CRLF, a lone CR, blank lines, the end", arguments: [
        "a,b,c\n1,2,3\n",
        "\"a,b\",\"c\"\"d\",e\r\nx,\"y\nz\",\n\n,\n",
        "a\rb\r\nc",
        "\"never closed,\nx\n",
        "\"a\"x,b\nc,d\n",
        "café,\u{00FC}ber,日本\n",
        "0123456789abcdefghij,0123456789abcdefghij0123456789abcdefghij,\"0123456789abcdefghij\"\"0123456789\"\n",
    ])
    func table(_ text: String) {
        let careful = Self.records(Array(text.utf8), fast: false)
        let fast = Self.records(Array(text.utf8), fast: true)
        #expect(fast.reads == careful.reads)
    }

    @Test("20,000 seeded texts of delimiters, quotes, CR, LF, UTF-8 and bytes that are not: the same records")
    func seeded() {
        var random = SplitMix64(seed: 16)
        let pieces: [[UInt8]] = [[0x2C], [0x2C], [0x22], [0x22, 0x22], [0x0A], [0x0D, 0x0A], [0x0D], [0x61], [0x62], [0x20],
                                 Array("0123456789abcdef".utf8), Array("é".utf8), Array("日".utf8), [0xFF], [0xC3], [0x3B]]
        var taken = 0, records = 0
        for n in 0..<20_000 {
            let text = (0..<Int.random(in: 0...40, using: &random)).flatMap { _ in pieces.randomElement(using: &random)! }
            let delimiter = n % 5 == 0 ? UInt8(ascii: ";") : UInt8(ascii: ",")
            let careful = Self.records(text, fast: false, delimiter: delimiter)
            let fast = Self.records(text, fast: true, delimiter: delimiter)
            #expect(fast.reads == careful.reads, "text \(text)")
            taken += fast.taken
            records += fast.reads.count
        }
        #expect(taken > records / 2)  // the C scanner takes most records, so the comparison means something
    }
}
