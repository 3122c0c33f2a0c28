import AppConfigCLI
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// A thin entry point: all behaviour lives in AppConfigCLI, where the tests can reach it.
// A closed pipe (`--tar - | head`) is a write error with one line and status 1, not a bare SIGPIPE.
signal(SIGPIPE, SIG_IGN)
let arguments = Array(CommandLine.arguments.dropFirst())
// The fleet commands run on huge pages: once, the program executes itself again (see HugePages).
HugePages.reexecuteIfWanted(arguments: arguments)
exit(AppConfigCommand.run(arguments))
