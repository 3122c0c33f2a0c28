import FuzzDriver
import Foundation
import AppConfigSpec

/// One input as a spec file: the XML reader, then every rule of the reference. Strict and lenient,
/// since they take different paths. A crash, a hang or a leak is a finding; problems are not.
func fuzzSpec(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    for lenient in [false, true] {
        let result = SpecParser.parse(bytes, file: "fuzz.xml", options: SpecOptions(lenient: lenient))
        // Every problem must print (escaping included) without trapping.
        for problem in result.diagnostics { _ = problem.description }
    }
    return 0
}

var argc = CommandLine.argc
var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&argc, &argv) { fuzzSpec($0, $1) })
