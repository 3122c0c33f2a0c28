import AppConfigCLI
import Testing

/// When the fleet commands execute themselves again with glibc's huge-page tunable, and with what.
@Suite("huge pages for the fleet commands")
struct HugePagesTests {
    @Test("the GLIBC_TUNABLES a command runs with", arguments: [
        (["render", "--spec", "s.xml"], nil, "glibc.malloc.hugetlb=1"),
        (["sources", "--inventory", "i.csv"], "", "glibc.malloc.hugetlb=1"),
        (["bench"], "glibc.malloc.arena_max=2", "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1"),
        (["render"], "glibc.malloc.arena_max=2:", "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1"),
        // Already named, either way (the user's choice, or this process after its exec): run as it is.
        (["render"], "glibc.malloc.hugetlb=1", nil),
        (["render"], "glibc.malloc.hugetlb=0", nil),
        (["render"], "glibc.malloc.mmap_threshold=131072:glibc.malloc.hugetlb=0", nil),
        // Not a fleet command: no second exec.
        (["lint", "s.xml"], nil, nil),
        (["compile", "s.xml", "render"], nil, nil),
        ([], nil, nil),
    ] as [([String], String?, String?)])
    func tunables(arguments: [String], current: String?, expected: String?) {
        #expect(HugePages.tunables(arguments: arguments, current: current) == expected)
    }
}
