import AppConfigBatch
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
    var lenient: Bool?

    /// What the command line said of the inputs (nil: not given).
    func settings(spec: String?, values: String?) -> JobSettings.Inputs {
        var s = JobSettings.Inputs()
        s.spec = spec
        s.values = values
        s.lenient = lenient
        s.missing = missing
        s.keyMissing = Entries(given: keyMissing)
        return s
    }

    /// Compiles, printing warnings to stderr; errors end the command (status 1, or 2 for a file
    /// that cannot be read).
    func compile(spec: String, values: String?) throws -> Program {
        try configuration(spec: spec, values: values).base
    }

    /// The spec and values read and compiled (the base program; assignments' variants on demand).
    func configuration(spec: String, values: String?) throws -> Configuration {
        let options = try settingsProblems { try settings(spec: spec, values: values).compileOptions() }
        return try reportingProblems {
            let configuration = try Configuration.load(specFile: spec, valuesFile: values, options: options,
                                                       specOptions: SpecOptions(lenient: lenient ?? false))
            for w in configuration.warnings { writeStandardError(w.description + "\n") }
            return configuration
        }
    }
}

extension MissingValuePolicy: ExpressibleByArgument {}
extension OutputFormat: ExpressibleByArgument {}
