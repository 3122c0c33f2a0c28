@testable import AppConfigCLI
import TestSupport

/// `appconfig ARGUMENTS` run in this process (`AppConfigCommand.capturing`): the exit status and
/// the text the binary would write, without a process per call. A tar streamed to standard output
/// (`--tar -`) runs the binary: it would write to this process's descriptor 1. The tests of what
/// only a process shows (signals, a FIFO that blocks, an environment of its own, the crash
/// handler) call `runProcess(Paths.appconfigBinary, ...)` themselves.
func appconfig(_ arguments: [String]) throws -> ProcessResult {
    if zip(arguments, arguments.dropFirst()).contains(where: { $0 == "--tar" && $1 == "-" }) {
        return try runProcess(Paths.appconfigBinary, arguments)
    }
    let (status, stdout, stderr) = AppConfigCommand.capturing(arguments)
    return ProcessResult(status: status, stdout: stdout, stderr: stderr)
}
