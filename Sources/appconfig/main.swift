import AppConfigCLI
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// A thin entry point: all behaviour lives in AppConfigCLI, where the tests can reach it.
// A closed pipe (`--tar - | head`) is a write error with one line and status 1, not a bare SIGPIPE.
signal(SIGPIPE, SIG_IGN)
// A crash signal (a fault, or one sent with kill) ends the process at once: never a run that goes on
// to publish after it. The process is non-dumpable while it holds secrets, so no core holds them.
for sig in [SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGSYS, SIGTRAP] {
    signal(sig) { sig in
        // Only async-signal-safe calls: a constant written, the process ended.
        let text: StaticString = "appconfig: crashed: nothing was published\n"
        _ = write(2, text.utf8Start, text.utf8CodeUnitCount)
        _exit(128 + sig)
    }
}
let arguments = Array(CommandLine.arguments.dropFirst())
// The fleet commands run on huge pages: once, the program executes itself again (see HugePages).
HugePages.reexecuteIfWanted(arguments: arguments)
exit(AppConfigCommand.run(arguments))
