import AppConfigCompiler
import AppConfigRender
import AppConfigSpec
import ArgumentParser

/// Options that decide what a program does with missing variables; shared by compile and bench.
struct PolicyOptions: ParsableArguments {
    @Option(help: "Missing or empty variable, every key: fail, omit or empty (default: omit for nullable keys, else fail).")
    var missing: MissingValuePolicy?

    @Option(name: .customLong("key-missing"), help: "Per-key policy, KEY=fail|omit|empty; repeatable; wins over --missing.")
    var keyMissing: [String] = []

    @Flag(inversion: .prefixedNo, help: "Accept unknown elements and attributes, and nonstandard keyNames, with warnings.")
    var lenient = false

    func compileOptions() throws -> CompileOptions {
        var policies: [String: MissingValuePolicy] = [:]
        for entry in keyMissing {
            guard let eq = entry.lastIndex(of: "="), let policy = MissingValuePolicy(rawValue: String(entry[entry.index(after: eq)...])) else {
                throw ValidationError("--key-missing takes KEY=fail|omit|empty, not \"\(entry)\"")
            }
            policies[String(entry[..<eq])] = policy
        }
        return CompileOptions(missingValuePolicy: missing, keyPolicies: policies)
    }

    /// Compiles, printing warnings to stderr; errors end the command (status 1, or 2 for a file
    /// that cannot be read).
    func compile(spec: String, values: String?) throws -> Program {
        try configuration(spec: spec, values: values).base
    }

    /// The spec and values read and compiled (the base program; assignments' variants on demand).
    func configuration(spec: String, values: String?) throws -> Configuration {
        let options = try compileOptions()
        return try reportingProblems {
            let configuration = try Configuration.load(specFile: spec, valuesFile: values, options: options,
                                                       specOptions: SpecOptions(lenient: lenient))
            for w in configuration.warnings { writeStandardError(w.description + "\n") }
            return configuration
        }
    }
}

extension MissingValuePolicy: ExpressibleByArgument {}
extension OutputFormat: ExpressibleByArgument {}
