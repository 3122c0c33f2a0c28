import AppConfigCore
import AppConfigSpec
import ArgumentParser

/// `appconfig lint FILE... [--values FILE] [--format text|json] [--lenient]`
struct LintCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lint",
        abstract: "Check AppConfig specs (and an admin values file) against every rule of the schema reference.",
        discussion: """
            Reports every problem at once, each with file, line, column, severity, a stable code and \
            a message. Exit status: 0 when no file has an error (warnings allowed), 1 when one has, \
            2 for usage or I/O problems.
            """
    )

    @Argument(help: "The spec files (XML) to check.")
    var files: [String]

    @Option(help: "An admin values file (JSON, XML or binary plist) to check against the spec; needs exactly one spec.")
    var values: String?

    @Option(help: "Output format: text (compiler style) or json (an array of {file, line, column, severity, code, message}).")
    var format: LintReport.Format = .text

    @Flag(help: "Accept unknown elements and attributes, and keyNames with characters the reference forbids, as warnings.")
    var lenient = false

    func validate() throws {
        if files.isEmpty { throw ValidationError("give at least one spec file") }
        if values != nil && files.count != 1 { throw ValidationError("--values checks one spec; give exactly one spec file") }
    }

    func run() throws {
        let outcome = Linter(options: SpecOptions(lenient: lenient)).lint(files: files, valuesFile: values)
        writeStandardOutput(LintReport.render(outcome, format: format), terminator: "")
        for failure in outcome.ioFailures { writeStandardError("appconfig: \(failure)\n") }
        let status = outcome.exitStatus
        if status != ExitStatus.ok { throw ExitCode(status) }
    }
}

extension LintReport.Format: ExpressibleByArgument {}
