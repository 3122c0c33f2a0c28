import AppConfigBatch
import AppConfigCLI
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// A thin entry point: all behaviour lives in AppConfigCLI, where the tests can reach it.
// A closed pipe (`--tar - | head`) is a write error with one line and status 1, not a bare SIGPIPE.
signal(SIGPIPE, SIG_IGN)
// A crash signal sent with kill (a fault of another's making) ends the process at once: never a run
// that goes on to publish after it (the runtime's handler printed a backtrace and returned). A fault
// of this process's own (si_code > 0) goes to the runtime's handler as before, for its backtrace.
// The process is non-dumpable while it holds secrets, so no core holds them.
nonisolated(unsafe) var previousActions: [sigaction] = Array(repeating: sigaction(), count: 65)
for sig in [SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGSYS, SIGTRAP] {
    var action = sigaction()
    action.__sigaction_handler.sa_sigaction = { sig, info, _ in
        if let info, info.pointee.si_code > 0 {
            // Restored; returning re-runs the faulting instruction under it.
            _ = sigaction(sig, &previousActions[Int(sig)], nil)
            return
        }
        // Only async-signal-safe calls: the secrets' commands killed, a constant written, the end.
        ProcessSecrets.children.killFromSignalHandler()
        let text: StaticString = "appconfig: crashed: nothing was published\n"
        _ = write(2, text.utf8Start, text.utf8CodeUnitCount)
        _exit(128 + sig)
    }
    action.sa_flags = SA_SIGINFO
    sigemptyset(&action.sa_mask)
    _ = sigaction(sig, &action, &previousActions[Int(sig)])
}
let arguments = Array(CommandLine.arguments.dropFirst())
// The fleet commands run on huge pages: once, the program executes itself again (see HugePages).
HugePages.reexecuteIfWanted(arguments: arguments)
exit(AppConfigCommand.run(arguments))
