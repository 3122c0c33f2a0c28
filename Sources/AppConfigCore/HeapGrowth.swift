import CMappedFile

/// How the C library's allocator grows its heaps, for a command that builds millions of small
/// objects at once (`status` at 1M devices: 7 GB of reports, tables and strings).
public enum HeapGrowth {
    /// Each heap grows 64 MiB at a time, not 128 KiB: glibc's threads' heaps grow by `mprotect`,
    /// and at 1M devices those calls were 4% of a status run's samples (perf; 0.8 s of system
    /// time, 0.5 s of wall time gone with this). Pages not touched cost nothing.
    public static func inLargeSteps() {
        appconfig_heap_top_pad(64 << 20)
    }

    /// Gives the pages the allocator holds free back to the system: after a run freed gigabytes
    /// of small objects, the next run in the same process otherwise starts on their scattered
    /// remains (a benchmark's later samples were a second slower than its first).
    public static func returnFreePages() { appconfig_heap_trim() }
}
