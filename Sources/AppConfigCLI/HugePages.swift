#if canImport(Glibc)
import Glibc
#endif

/// The fleet commands ask glibc's allocator for transparent huge pages (the tunable
/// `glibc.malloc.hugetlb=1`: large blocks `madvise`d `MADV_HUGEPAGE`, the heap grown in 2 MiB
/// steps). A fleet job reads its rows scattered over large tables, and the kernel copies the
/// tar from its buffers: on 4 KiB pages both are TLB misses, which in a virtual machine
/// cost a two-level page walk each (docs/performance-log.md has the figures). glibc reads the tunable only when a
/// process starts, so the command sets it and executes its file again, once. A `GLIBC_TUNABLES`
/// that already names `glibc.malloc.hugetlb` is the user's choice (`=0` turns it off) and is kept.
/// A program that embeds `RenderJob` decides for its own process the same way.
public enum HugePages {
    /// The commands that read and render fleets; the others start faster without a second exec.
    static let commands: Set<String> = ["render", "sources", "bench"]

    /// The `GLIBC_TUNABLES` value the command should run with, or nil to run as it is: not a
    /// fleet command, or the tunable is already set either way.
    public static func tunables(arguments: [String], current: String?) -> String? {
        guard let command = arguments.first, commands.contains(command) else { return nil }
        let entries = (current ?? "").split(separator: ":", omittingEmptySubsequences: true)
        if entries.contains(where: { $0.hasPrefix("glibc.malloc.hugetlb=") }) { return nil }
        return (entries + ["glibc.malloc.hugetlb=1"]).joined(separator: ":")
    }

    /// Executes this program again with the tunable set, when `tunables` says so; returns only
    /// when it does not, or when the exec fails (the command then runs on small pages).
    public static func reexecuteIfWanted(arguments: [String]) {
        #if os(Linux)
        let current = getenv("GLIBC_TUNABLES").map { String(cString: $0) }
        guard let value = tunables(arguments: arguments, current: current) else { return }
        // The program's file by the path /proc/self/exe names, not /proc/self/exe itself: under a
        // loader that runs it (valgrind), that link is the loader's file, which refuses to start
        // so; the path is the program's (valgrind answers for it), which then runs on its own
        // (valgrind users set the tunable, or `--trace-children=yes`).
        var path = [CChar](repeating: 0, count: 4096)
        let length = readlink("/proc/self/exe", &path, path.count - 1)
        guard length > 0 else { return }
        setenv("GLIBC_TUNABLES", value, 1)
        execv(path, CommandLine.unsafeArgv)
        if let current { setenv("GLIBC_TUNABLES", current, 1) } else { unsetenv("GLIBC_TUNABLES") }
        #endif
    }
}
