import AppConfigCore
import FuzzDriver
import Foundation
import AppConfigSources
import AppConfigSpec

/// One input as an inventory export, with each delimiter: the scanner (quotes unescaped in place,
/// SWAR field search, UTF-8 check), the header and column plan, the device-key table. The same
/// input scanned in three parts must give what one scanner gives (a difference traps), and the
/// records a night hashes must be the scanner's.
func fuzzCSV(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    for delimiter in [UInt8(ascii: ","), UInt8(ascii: ";"), 0x09] {
        var options = InventoryOptions()
        options.delimiter = delimiter
        let one = Result { () throws(Problem) in try InventoryTable(bytes: bytes, file: "fuzz.csv", options: options) }
        options.scanParts = 3
        let three = Result { () throws(Problem) in try InventoryTable(bytes: bytes, file: "fuzz.csv", options: options) }
        guard case .success(let table) = one else {
            guard case .failure(let a) = one, case .failure(let b) = three, a == b else { preconditionFailure("a scan in parts fails differently") }
            continue
        }
        guard case .success(let split) = three, split.rowCount == table.rowCount, split.problems == table.problems,
              split.dataRows == table.dataRows, split.continuationRows == table.continuationRows else {
            preconditionFailure("a scan in parts differs from one scanner")
        }
        for row in 0..<table.rowCount {
            for slot in table.keptColumns.indices {
                precondition(table.string(row: row, slot: slot) == split.string(row: row, slot: slot) && table.line(of: row) == split.line(of: row),
                             "a scan in parts differs from one scanner")
            }
            _ = table.location(of: row)
        }
        for problem in table.problems { _ = problem.description }
    }
    // The records a night hashes (`InventoryRecords`) are the scanner's, in one part or three.
    for delimiter in [UInt8(ascii: ","), 0x09] {
        for parts in [1, 3] {
            let split = InventoryRecords.splitBothWays(bytes, delimiter: delimiter, parts: parts)
            precondition(split.found == split.scanner && split.foundLines == split.scannerLines, "the record scan splits records unlike the scanner")
        }
    }
    return 0
}

var argc = CommandLine.argc
var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&argc, &argv) { fuzzCSV($0, $1) })
