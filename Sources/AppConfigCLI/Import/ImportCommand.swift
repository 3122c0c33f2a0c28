import AppConfigBatch
import AppConfigCore
import AppConfigOutput
import AppConfigSpec
import ArgumentParser

/// `appconfig import --from jamf|ws1|intune FILE [--out VALUES.json] [--spec SPEC]`
struct ImportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Turn an app configuration from Jamf Pro, Workspace ONE or Intune into a values file, translating their variables.",
        discussion: """
            FILE is the configuration as the console holds it: the plist <dict> pasted into its app \
            configuration, or a whole XML plist. Each variable token ($EMAIL, {EmailAddress}, \
            {{userprincipalname}}) becomes ours ($(emailAddress), $(upn)...); tokens without an \
            equivalent are kept as text and listed on stderr with their line and column. With --spec \
            the result is checked as lint --values would. Exit status: 0 imported (warnings allowed), \
            1 the file cannot be read as a configuration or the result breaks the spec, 2 usage.
            """
    )

    enum Console: String, ExpressibleByArgument, CaseIterable {
        case jamf, ws1, intune
        var foreign: ForeignVariables.Console {
            switch self {
            case .jamf: .jamf
            case .ws1: .ws1
            case .intune: .intune
            }
        }
    }

    @Option(help: "The console the configuration comes from: jamf, ws1 or intune.") var from: Console
    @Argument(help: "The configuration: a plist <dict> fragment or an XML plist.") var file: String
    @Option(help: "Write the values file here (default: standard output).") var out: String?
    @Option(help: "Check the values against this spec.") var spec: String?

    func run() throws {
        try reportingProblems {
            let bytes: [UInt8]
            do { bytes = try readFileBytes(file, limit: AdminValuesReader.maxFileBytes) } catch let e as FileReadError { throw e.problem }
            let result = try ConsoleImport.convert(bytes, file: file, from: from.foreign)
            for note in result.notes { writeStandardError(note.description + "\n") }
            if let out {
                try writeFileAtomically(Array(result.json.utf8), to: out)
            } else {
                writeStandardOutput(result.json, terminator: "")
            }
            if let spec {
                let specBytes: [UInt8]
                do { specBytes = try readFileBytes(spec, limit: SpecParser.maxFileBytes) } catch let e as FileReadError { throw e.problem }
                let parsed = SpecParser.parse(specBytes, file: spec)
                guard let model = parsed.spec, !parsed.hasErrors else { throw ProblemList(parsed.diagnostics) }
                let typed = AdminValuesReader.read(Array(result.json.utf8), file: out ?? "(imported values)", spec: model)
                for problem in typed.diagnostics { writeStandardError(problem.description + "\n") }
                if typed.hasErrors { throw ExitCode(ExitStatus.failed) }
            }
        }
    }
}
