import FuzzDriver
import Foundation
import AppConfigSpec

/// A spec with a key of every type and constraints, for the values to be typed against.
let spec: Spec = {
    let text = """
        <managedAppConfiguration><version>1</version><bundleId>com.example.fuzz</bundleId><dict>
        <string keyName="serverURL"><constraint pattern="^https://"/></string>
        <stringArray keyName="domains"><constraint max="2"/></stringArray>
        <integer keyName="timeout"><defaultValue><value>60</value></defaultValue><constraint min="1" max="600"/></integer>
        <integerArray keyName="ports"/><float keyName="ratio"/><floatArray keyName="levels"/>
        <boolean keyName="enabled"/><date keyName="expiry"/>
        <string keyName="role"><constraint><values><value>sales</value><value>staff</value></values></constraint></string>
        </dict></managedAppConfiguration>
        """
    return SpecParser.parse(Array(text.utf8), file: "spec.xml").spec!
}()

/// One input as a values file: JSON by our reader with positions, XML and binary plists through
/// the precheck and libplist, then typed against the spec.
func fuzzValues(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data else { return 0 }
    let result = AdminValuesReader.read(Array(UnsafeBufferPointer(start: data, count: size)), file: "fuzz.json", spec: spec)
    for problem in result.diagnostics { _ = problem.description }
    return 0
}

var argc = CommandLine.argc
var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&argc, &argv) { fuzzValues($0, $1) })
