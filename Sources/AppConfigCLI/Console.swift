import Foundation
import Synchronization

/// Where a command's text goes: the process's standard output and error, or, for a command run
/// in process (`AppConfigCommand.capturing`: the tests, an embedder), buffers of its own. Bound
/// per call (a task-local value), so commands run side by side keep their text apart; a closure
/// another thread calls (a job's warnings) takes the console of the call that made it.
package struct Console: Sendable {
    package let out: @Sendable (String) -> Void
    package let err: @Sendable (String) -> Void
    /// The process's own streams: a signal may end the process, a terminal may show progress.
    package let isProcess: Bool

    /// Standard output (buffered, as `print`) and standard error (unbuffered, so that messages
    /// interleave with stdout as they are written).
    package static let process = Console(out: { Swift.print($0, terminator: "") }, err: { text in
        var bytes = Array(text.utf8)
        _ = bytes.withUnsafeMutableBytes { write(2, $0.baseAddress, $0.count) }
    }, isProcess: true)

    @TaskLocal package static var current = Console.process
}

extension AppConfigCommand {
    /// Runs a command line in this process with its text captured: the exit status and what it
    /// wrote to standard output and error, as the binary would have. Not for `--tar -` (the
    /// archive streams to this process's descriptor 1), and no signal handlers are installed.
    package static func capturing(_ arguments: [String]) -> (status: Int32, stdout: String, stderr: String) {
        let out = Mutex(""), err = Mutex("")
        let console = Console(out: { text in out.withLock { $0 += text } }, err: { text in err.withLock { $0 += text } }, isProcess: false)
        let status = Console.$current.withValue(console) { run(arguments) }
        return (status, out.withLock { $0 }, err.withLock { $0 })
    }
}

/// Standard output, through the call's console: every command's text goes here, never to `print`.
func writeStandardOutput(_ text: String = "", terminator: String = "\n") { Console.current.out(text + terminator) }

/// Bytes to standard output as they are (a binary plist), through the call's console: the
/// process's descriptor 1, written at once; a capture takes them as text.
func writeStandardOutput(bytes: [UInt8]) {
    let console = Console.current
    guard console.isProcess else { return console.out(String(decoding: bytes, as: UTF8.self)) }
    _ = bytes.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
}

/// Standard error, through the call's console.
func writeStandardError(_ text: String) { Console.current.err(text) }
