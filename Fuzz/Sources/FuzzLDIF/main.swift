import FuzzDriver
import Foundation
import AppConfigSources
import AppConfigSpec

/// One input as an LDIF export: logical lines, base64, DNs (RFC 4514), the user table and its
/// join index; every user's variables read back.
func fuzzLDIF(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data else { return 0 }
    guard let users = try? LDIFReader.read(Array(UnsafeBufferPointer(start: data, count: size)), file: "fuzz.ldif") else { return 0 }
    for user in 0..<users.count {
        for variable in UserVariable.allCases { _ = users.value(user: user, variable) }
    }
    for problem in users.problems { _ = problem.description }
    return 0
}

var argc = CommandLine.argc
var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&argc, &argv) { fuzzLDIF($0, $1) })
