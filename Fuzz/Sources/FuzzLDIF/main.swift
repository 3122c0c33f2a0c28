import AppConfigCore
import FuzzDriver
import Foundation
import AppConfigSources
import AppConfigSpec

/// One input as an LDIF export: logical lines, base64, DNs (RFC 4514), the user table and its
/// join index; every user's variables read back. The same input read in three parts must give what
/// one reader gives (a difference traps), with group memberships too.
func fuzzLDIF(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let one = Result { () throws(Problem) in try LDIFReader.read(bytes, file: "fuzz.ldif") }
    let three = Result { () throws(Problem) in try LDIFReader.read(bytes, file: "fuzz.ldif", parts: 3) }
    switch (one, three) {
    case (.success(let a), .success(let b)):
        precondition(a.count == b.count && a.problems == b.problems, "a read in parts differs from one reader")
        for user in 0..<a.count {
            for variable in UserVariable.allCases {
                precondition(a.string(user: user, variable) == b.string(user: user, variable), "a read in parts differs from one reader")
            }
        }
        for problem in a.problems { _ = problem.description }
    case (.failure(let a), .failure(let b)):
        precondition(a == b, "a read in parts fails differently")
    default:
        preconditionFailure("a read in parts succeeds where one reader fails, or the other way")
    }
    var map = AttributeMap()
    map.readsGroups = true
    if let users = try? LDIFReader.read(bytes, file: "fuzz.ldif", map: map), let groups = users.groups,
       let split = try? LDIFReader.read(bytes, file: "fuzz.ldif", map: map, parts: 3), let splitGroups = split.groups {
        let names = ["Sales", "cn=x,dc=y", "g"]
        precondition(groups.memberships(of: names, userCount: users.count) == splitGroups.memberships(of: names, userCount: split.count),
                     "group memberships read in parts differ from one reader's")
    }
    return 0
}

var argc = CommandLine.argc
var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&argc, &argv) { fuzzLDIF($0, $1) })
