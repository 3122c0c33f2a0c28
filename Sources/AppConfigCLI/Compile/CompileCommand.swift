import AppConfigCore
import AppConfigOutput
import AppConfigBatch
import AppConfigCompiler
import AppConfigRender
import AppConfigSpec
import ArgumentParser

/// `appconfig compile SPEC [--values FILE] [--disasm] [--var NAME=VALUE ... --format F]`
struct CompileCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "compile",
        abstract: "Compile a spec and admin values into a program; list it, or render one device with given variables.",
        discussion: """
            With --disasm, prints the program one instruction a line. With --var (repeatable), renders \
            one device whose variables are given on the command line and writes its plist to stdout \
            (or --out); with --delivery, in that delivery's form: an MDM command, or for ddm the \
            declarations and the device's set on stdout (each file's name on a line before it) and \
            the asset to --out. With assignments in the values file, --disasm lists the program of \
            devices that match none, then each assignment's variant; --var picks the assignments the \
            device matches (give its groups as --var group=DN-or-cn, repeatable: nesting is not \
            resolved here), names them on stderr and renders, or lists, that variant. Exit status: 0 done, 1 the spec or values do not compile or the device fails \
            (its error on stderr), 2 usage or I/O.
            """
    )

    @Argument(help: "The spec file (XML).")
    var spec: String

    @Option(help: "An admin values file (JSON, XML or binary plist).")
    var values: String?

    @Flag(help: "Print the program's listing.")
    var disasm = false

    @Option(name: .customLong("var"), help: "A variable of the device to render, NAME=VALUE (cn=Jane, device.Asset Tag=42, group=Sales); repeatable.")
    var variables: [String] = []

    @Option(help: "Output format of the rendered device: binary or xml (default: xml for a bare plist or an MDM command; binary for ddm, as render writes it, so its Identifiers and hashes are render's).")
    var format: OutputFormat?

    /// The device previewed as delivered.
    @OptionGroup var delivery: DeliveryArguments

    @Option(help: "Write the rendered plist here instead of stdout.")
    var out: String?

    @OptionGroup var policy: PolicyOptions

    func run() throws {
        let configuration = try policy.configuration(spec: spec, values: values)
        var device: [Variable: String] = [:]
        var groups: [String] = []
        for entry in variables {
            guard let eq = entry.firstIndex(of: "=") else { throw ValidationError("--var takes NAME=VALUE, not \"\(entry)\"") }
            let name = String(entry[..<eq])
            let value = String(entry[entry.index(after: eq)...])
            if name.lowercased() == "group" {
                groups.append(value)
                continue
            }
            guard case .success(let (template, _)) = StringTemplate.parse("$(\(name))"), let variable = template.variables.first else {
                let names = UserVariable.allCases.map(\.rawValue) + DeviceVariable.allCases.map(\.rawValue) + ["group"]
                let hint = closestName(to: name, among: names).map { "; did you mean \"\($0)\"?" } ?? ""
                throw ValidationError("\"\(name)\" is not a user or device variable (or device.<Column>, or group)" + hint)
            }
            device[variable] = value
        }
        let assignments = configuration.assignments
        var program = configuration.base
        var matched: [Int] = []
        if !assignments.isEmpty && !variables.isEmpty {
            matched = assignments.indices.filter { assignments[$0].matches(variables: device, groups: groups) }
            writeStandardError("assignments: " + (matched.isEmpty ? "none" : matched.map { assignments[$0].name }.joined(separator: ", ")) + "\n")
            program = try reportingProblems { try configuration.program(for: matched) }
        }
        if disasm {
            if assignments.isEmpty || !variables.isEmpty {
                writeStandardOutput(Disassembler.listing(program), terminator: "")
            } else {
                writeStandardOutput("; variant: no assignment")
                writeStandardOutput(Disassembler.listing(program), terminator: "")
                for i in assignments.indices {
                    let variant = try reportingProblems { try configuration.program(for: [i]) }
                    writeStandardOutput("\n; variant: assignment \"\(assignments[i].name)\" (line \(assignments[i].location.line))")
                    writeStandardOutput(Disassembler.listing(variant), terminator: "")
                }
            }
        }
        guard !variables.isEmpty || (!disasm && program.slots.isEmpty) || out != nil else {
            if !disasm { writeStandardOutput("compiled \(program.metadata.bundleId) version \(program.metadata.version): \(program.keys.count) keys, \(program.slots.count) variables, hash \(program.metadata.hashHex)" + (assignments.isEmpty ? "" : "; \(assignments.count) assignments")) }
            return
        }
        let options = try delivery.options()
        let resolved = try reportingProblems { try options.resolved(specBundleID: program.metadata.bundleId) }
        // A preview shows XML unless asked (DDM's assets: binary); an MDM command is XML whatever is asked.
        let renderFormat = resolved.delivery.plistFormat(format, otherwise: resolved.delivery == .ddm ? .binary : .xml) ?? .xml
        let renderer = Renderer(image: ProgramImage(program), format: renderFormat, xmlNesting: DeliveryPreview.xmlNesting(resolved))
        // Every variable the device lacks, at once (the render stops at the first).
        let missing = program.slots.filter { device[$0] == nil }
        let bytes = try reportingProblems {
            do { return try renderer.renderCopy(device) { _ in Location(file: "--var") } } catch let failure as Problem where missing.count > 1 && failure.code == DeviceCode.missingVariable {
                throw Problem(DeviceCode.missingVariable, at: Location(file: "--var"),
                              "the device lacks \(missing.count) variable\(missing.count == 1 ? "" : "s") the program reads: " + missing.map { "$(\($0))" }.joined(separator: ", ")
                              + " (give each as --var NAME=VALUE)")
            }
        }
        let key = device[.device(.udid)] ?? device[.device(.serialNumber)] ?? "preview"
        // Each credential's document as the device would get it, its secrets and files named, not read.
        var credentials: [(credential: Credential, document: [UInt8])] = []
        if resolved.delivery == .ddm {
            for credential in configuration.values?.credentials(applying: matched) ?? [] {
                var problems: [Problem] = []
                credentials.append((credential, CredentialPreview.document(credential, variables: device, problems: &problems)))
                for p in problems { writeStandardError(stderrLine(p)) }
            }
        }
        var files = DeliveryPreview.files(key: key, rendered: bytes, delivery: resolved, credentials: credentials)
        if resolved.delivery == .ddm {
            // The asset (a plist) to --out, the JSON files to stdout, each after its name.
            let asset = files.removeFirst()
            if let out { try reportingProblems { try writeFileAtomically(asset.bytes, to: out) } }
            writeStandardOutput("# \(asset.name) (\(asset.bytes.count) bytes\(out.map { ", written to \($0)" } ?? ""))")
            for file in files { writeStandardOutput("# \(file.name)\n" + String(decoding: file.bytes, as: UTF8.self).trimmingSuffix()) }
            for (credential, document) in credentials {
                writeStandardOutput("# credential \(credential.identifier) (\(credential.kind.assetType))\n" + String(decoding: document, as: UTF8.self))
            }
            if !credentials.isEmpty { writeStandardError("note: " + DeliveryPreview.credentialNote + "\n") }
        } else if let out {
            try reportingProblems { try writeFileAtomically(files[0].bytes, to: out) }
        } else {
            writeStandardOutput(bytes: files[0].bytes)
        }
    }
}
