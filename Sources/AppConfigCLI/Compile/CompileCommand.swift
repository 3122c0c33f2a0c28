import AppConfigBytes
import AppConfigBatch
import AppConfigCompiler
import AppConfigRender
import AppConfigSpec
import ArgumentParser
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Options that decide what a program does with missing variables; shared by compile and bench.
struct PolicyOptions: ParsableArguments {
    @Option(help: "Missing or empty variable, every key: fail, omit or empty (default: omit for nullable keys, else fail).")
    var missing: MissingValuePolicy?

    @Option(name: .customLong("key-missing"), help: "Per-key policy, KEY=fail|omit|empty; repeatable; wins over --missing.")
    var keyMissing: [String] = []

    @Flag(help: "Accept unknown elements and attributes, and nonstandard keyNames, with warnings.")
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

    /// Compiles, printing warnings to stderr; errors end the command with status 1.
    func compile(spec: String, values: String?) throws -> Program {
        do {
            let (program, diagnostics) = try Compiler.compile(specFile: spec, valuesFile: values, options: compileOptions(),
                                                              specOptions: SpecOptions(lenient: lenient))
            for d in diagnostics { writeStandardError(d.description + "\n") }
            return program
        } catch let error as CompileError {
            for d in error.diagnostics { writeStandardError(d.description + "\n") }
            throw ExitCode(AppConfigCommand.Status.failed)
        } catch let error as FileReadError {
            writeStandardError("appconfig: \(error)\n")
            throw ExitCode(AppConfigCommand.Status.usage)
        }
    }
}

extension MissingValuePolicy: ExpressibleByArgument {}
extension OutputFormat: ExpressibleByArgument {}

/// `appconfig compile SPEC [--values FILE] [--disasm] [--var NAME=VALUE ... --format F]`
struct CompileCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "compile",
        abstract: "Compile a spec and admin values into a program; list it, or render one device with given variables.",
        discussion: """
            With --disasm, prints the program one instruction a line. With --var (repeatable), renders
            one device whose variables are given on the command line and writes its plist to stdout
            (or --out). Exit status: 0 done, 1 the spec or values do not compile or the device fails
            (its error on stderr), 2 usage or I/O.
            """
    )

    @Argument(help: "The spec file (XML).")
    var spec: String

    @Option(help: "An admin values file (JSON, XML or binary plist).")
    var values: String?

    @Flag(help: "Print the program's listing.")
    var disasm = false

    @Option(name: .customLong("var"), help: "A variable of the device to render, NAME=VALUE (cn=Jane, device.Asset Tag=42); repeatable.")
    var variables: [String] = []

    @Option(help: "Output format of the rendered device: binary or xml.")
    var format: OutputFormat = .xml

    @Option(help: "Write the rendered plist here instead of stdout.")
    var out: String?

    @OptionGroup var policy: PolicyOptions

    func run() throws {
        let program = try policy.compile(spec: spec, values: values)
        if disasm { print(Disassembler.listing(program), terminator: "") }
        guard !variables.isEmpty || (!disasm && program.slots.isEmpty) || out != nil else {
            if !disasm { print("compiled \(program.metadata.bundleId) version \(program.metadata.version): \(program.keys.count) keys, \(program.slots.count) variables, hash \(program.metadata.hashHex)") }
            return
        }
        var device: [Variable: String] = [:]
        for entry in variables {
            guard let eq = entry.firstIndex(of: "=") else { throw ValidationError("--var takes NAME=VALUE, not \"\(entry)\"") }
            let name = String(entry[..<eq])
            guard case .success(let (template, _)) = StringTemplate.parse("$(\(name))"), let variable = template.variables.first else {
                throw ValidationError("\"\(name)\" is not a user or device variable (or device.<Column>)")
            }
            device[variable] = String(entry[entry.index(after: eq)...])
        }
        let renderer = Renderer(image: ProgramImage(program), format: format)
        let bytes: [UInt8]
        do {
            bytes = try renderer.renderCopy(device) { _ in "--var" }
        } catch {
            writeStandardError("appconfig: \(error)\n")
            throw ExitCode(AppConfigCommand.Status.failed)
        }
        if let out {
            do { try writeFileAtomically(bytes, to: out) } catch {
                writeStandardError("appconfig: \(error)\n")
                throw ExitCode(AppConfigCommand.Status.failed)
            }
        } else {
            _ = bytes.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
        }
    }
}
