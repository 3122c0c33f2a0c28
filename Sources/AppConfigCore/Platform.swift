/// The C library, for every module that imports this one: the platform's import is written once,
/// here, not in each file that calls `open`, `mmap` or `poll`.
#if canImport(Glibc)
@_exported import Glibc
#elseif canImport(Darwin)
@_exported import Darwin
#endif
