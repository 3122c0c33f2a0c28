import AppConfigCompiler
import AppConfigSpec
import Testing

/// Compiles a spec (and JSON values) given as text; the spec and values must be free of errors.
public func compileProgram(_ spec: String, values: String? = nil, options: CompileOptions = CompileOptions()) throws -> Program {
    let parsed = SpecParser.parse(Array(spec.utf8), file: "spec.xml")
    let specModel = try #require(parsed.spec)
    #expect(!parsed.hasErrors, "\(parsed.diagnostics)")
    var adminValues: AdminValues?
    if let values {
        let read = AdminValuesReader.read(Array(values.utf8), file: "values.json", spec: specModel)
        #expect(!read.hasErrors, "\(read.diagnostics)")
        adminValues = read.values
    }
    return try Compiler.compile(specModel, values: adminValues, options: options)
}

/// A spec around a dict body.
public func specXML(_ body: String, version: Int = 1) -> String {
    "<managedAppConfiguration><version>\(version)</version><bundleId>com.example.oracle</bundleId><dict>\n\(body)\n</dict></managedAppConfiguration>"
}
