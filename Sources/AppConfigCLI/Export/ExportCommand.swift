import AppConfigCore
import AppConfigExport
import ArgumentParser

/// `appconfig export --to TARGET --spec SPEC --values VALUES --out DIR`: one values file handed to
/// a console in its own form and tokens.
struct ExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Hand a values file to Intune, Jamf Pro, Workspace ONE, Ivanti AppConnect or Fleet, in their tokens.",
        discussion: """
        Writes one object per variant (every device, then each assignment) under DIR/TARGET/, each for the \
        group it is assigned to, and DIR/plan.md; --dry-run prints the plan only. $(variable|filters) become \
        the console's tokens; what it cannot express is reported (export.untranslatable) and left out of that \
        object, never written wrong. Secrets and credentials are refused (export.secret). Exit 0 exported, \
        3 some value did not translate, 1 the spec or values are wrong (or --strict and a value did not \
        translate: nothing written), 2 usage or a secret (nothing written).
        """
    )

    @Option(help: "intune, intune-mam, jamf, ws1, ivanti or fleet.") var to: String
    @Option(help: "The app's AppConfig spec.") var spec: String
    @Option(help: "The values file (with assignments).") var values: String
    @Option(help: "The folder to write into.") var out: String?
    @Flag(name: .customLong("dry-run"), help: "Print the plan; write nothing.") var dryRun = false
    @Flag(help: "A value that does not translate is an error: nothing is written.") var strict = false
    @Flag(name: .customLong("intune-xml"), help: "Intune: the whole plist in encodedSettingXml (lists and dates keep their types).") var intuneXML = false
    @Option(name: .customLong("intune-app-id"), help: "Intune: the app's ID for targetedMobileApps.") var intuneAppID: String?

    func validate() throws {
        guard ExportTarget(rawValue: to) != nil else {
            throw ValidationError("--to \(to): one of \(ExportTarget.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        if out == nil && !dryRun { throw ValidationError("give --out DIR, or --dry-run") }
        if (intuneXML || intuneAppID != nil) && to != "intune" { throw ValidationError("--intune-xml and --intune-app-id are for --to intune") }
    }

    func run() throws {
        var options = ExportOptions(target: ExportTarget(rawValue: to)!, spec: spec, values: values)
        options.out = out
        options.dryRun = dryRun
        options.strict = strict
        options.intuneXML = intuneXML
        options.intuneAppID = intuneAppID
        let result: ExportResult
        do { result = try ExportJob(options).run() } catch {
            writeStandardError(stderrLine(error))
            throw ExitCode(error.code == ExportCode.secret || error.code == ExportCode.usage || error.code == InputCode.read ? ExitStatus.usage : ExitStatus.failed)
        }
        for note in result.notes { writeStandardError(stderrLine(note)) }
        if dryRun { writeStandardOutput(result.plan, terminator: "") } else {
            writeStandardOutput("\(result.files.count) files written into \(out ?? "") (\(result.variants.count) objects); the plan is \(out ?? "")/plan.md\n", terminator: "")
        }
        if result.notes.contains(where: { $0.severity == .error }) { throw ExitCode(ExitStatus.failed) }
        if result.hasUntranslatable { throw ExitCode(ExitStatus.partial) }
    }
}
