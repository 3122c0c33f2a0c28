import AppConfigBatch
import AppConfigCore
import ArgumentParser

/// The `appconfig` command: subcommands over the engine's public APIs.
public struct AppConfigCommand: ParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "appconfig",
        abstract: "Renders Apple managed app configuration (AppConfig specs) for whole fleets.",
        version: "0.1.0",
        subcommands: [RenderCommand.self, MergeCommand.self, RollbackCommand.self, LintCommand.self, CompileCommand.self, SourcesCommand.self, ImportCommand.self, ExportCommand.self, PushCommand.self, StatusCommand.self, BenchCommand.self]
    )

    public init() {}

    /// Runs the command line and returns the exit status, mapping argument errors to 2 (the
    /// ArgumentParser default is 64, EX_USAGE; our interface promises 2).
    public static func run(_ arguments: [String]) -> Int32 {
        do {
            var command = try parseAsRoot(arguments)
            do {
                try command.run()
            } catch let error as ValidationError {
                // A usage error found while running: point at the subcommand's help, not the root's.
                let subcommand = type(of: command)
                let name = subcommand.configuration.commandName ?? ""
                writeStandardError("Error: \(error.message)\nUsage: \(usageString(for: subcommand))\n"
                                   + "  See 'appconfig \(name) --help' for more information.\n")
                return ExitStatus.usage
            }
            return ExitStatus.ok
        } catch let exit as ExitCode {
            return exit.rawValue
        } catch {
            let code = exitCode(for: error)
            let message = fullMessage(for: error)
            if code == .success {
                writeStandardOutput(message)
                return ExitStatus.ok
            }
            writeStandardError(message + "\n")
            return code == .validationFailure ? ExitStatus.usage : code.rawValue
        }
    }
}
