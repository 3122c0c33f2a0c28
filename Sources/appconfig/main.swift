import AppConfigCLI
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// A thin entry point: all behaviour lives in AppConfigCLI, where the tests can reach it.
exit(AppConfigCommand.run(Array(CommandLine.arguments.dropFirst())))
