import FuzzDriver
import Foundation
import AppConfigSources

/// One input as an inventory export, with each delimiter: the scanner (quotes unescaped in place,
/// SWAR field search, UTF-8 check), the header and column plan, the device-key table.
func fuzzCSV(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    for delimiter in [UInt8(ascii: ","), UInt8(ascii: ";"), 0x09] {
        var options = InventoryOptions()
        options.delimiter = delimiter
        guard let table = try? InventoryTable(bytes: bytes, file: "fuzz.csv", options: options) else { continue }
        for row in 0..<table.rowCount {
            for slot in table.keptColumns.indices { _ = table.value(row: row, slot: slot) }
            _ = table.location(of: row)
        }
        for problem in table.problems { _ = problem.description }
    }
    return 0
}

var argc = CommandLine.argc
var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&argc, &argv) { fuzzCSV($0, $1) })
