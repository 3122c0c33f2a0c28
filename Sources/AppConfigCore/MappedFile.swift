import CMappedFile
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A file's bytes mapped into memory, privately: the pages are the kernel's cached pages of the
/// file, and a page written (a field unescaped in place) becomes the process's own copy; nothing
/// is written back. Reading an inventory into a buffer of its own cost more than its parse: each
/// fresh page zeroed by the kernel on first touch, then the kernel's copy.
///
/// A file cut shorter while mapped would end the process (SIGBUS on the lost pages): the mapping is
/// guarded (`CMappedFile`), lost pages read as zeros and are counted, and `change()` tells the
/// owner, which refuses what it read. So does a file rewritten in place (its size or status-change
/// time no longer those it was mapped with). A file replaced by a new one (a rename, as exports are
/// usually written) is no change: the mapping keeps the old file.
package final class MappedFile: @unchecked Sendable {
    package let path: String
    /// The file's bytes (mapped privately: changing them changes no file), valid while this
    /// object lives and `unmap` is not called.
    package let bytes: MutableByteView
    /// The same, to read.
    package var view: ByteView { bytes.view }
    private let fd: Int32
    private let guardSlot: Int32
    /// At mapping: the size and the times.
    private let mapped: (size: Int, times: Times)
    /// Set by `unmap`: the pages lost to a shrinking file while they were mapped. `bytes` are
    /// gone then (and their guard), the file is still watched.
    private var faultsWhileMapped: Int?

    /// Maps `path`, or returns nil when it cannot be mapped (empty, not a regular file, no guard
    /// slot left, the system refused): the caller reads it instead. Throws what reading would
    /// (missing, a folder, larger than `limit`).
    /// `readOnly`: mapped to be read only, every page at once (`MAP_POPULATE`): a file read whole
    /// from the start (a directory image) costs one call, not a fault per page. Its `bytes` must
    /// not be written (a writable private mapping populated would be copied page by page).
    package init?(_ path: String, limit: Int, readOnly: Bool = false) throws(FileReadError) {
        let file = try OpenFile(path, limit: limit)
        var info = stat()
        let (protection, flags) = readOnly ? (PROT_READ, MAP_PRIVATE | MAP_POPULATE) : (PROT_READ | PROT_WRITE, MAP_PRIVATE)
        guard fstat(file.fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, file.size > 0,
              let base = mmap(nil, file.size, protection, flags, file.fd, 0), base != MAP_FAILED else {
            close(file.fd)
            return nil
        }
        let slot = appconfig_map_guard_add(base, file.size)
        guard slot >= 0 else {
            munmap(base, file.size)
            close(file.fd)
            return nil
        }
        self.path = path
        fd = file.fd
        guardSlot = slot
        bytes = WorkerSlots(UnsafeMutableBufferPointer(start: base.assumingMemoryBound(to: UInt8.self), count: file.size))
        mapped = (file.size, Times(info))
    }

    /// Lets the pages of `range` go, read once and not needed again, when every byte before it
    /// is done with too (its first page is let go whole, its last only if the range fills it):
    /// they no longer count as the process's memory; the file's cached pages stay. Read again,
    /// they would be the file's bytes as they are then.
    package func release(_ range: Range<Int>) { advise(range, MADV_DONTNEED, wholePagesOnly: true) }

    /// Asks the kernel to start reading the pages of `range` from the disk, for a window read
    /// next (`MADV_WILLNEED`): a file not in the page cache is otherwise read as its pages fault,
    /// a little ahead of each.
    package func willNeed(_ range: Range<Int>) { advise(range, MADV_WILLNEED) }

    /// Maps the pages of a writable mapping for reading, all at once, without copying them (a
    /// writable private mapping populated at `mmap` would copy every page): a fault per page
    /// read later was a tenth of a night's render when its users' values lay here. Where the
    /// system cannot (`MADV_POPULATE_READ`, Linux 5.14 on), the pages come as they are read.
    /// `range`: only those bytes' pages.
    package func populateForReading(_ range: Range<Int>? = nil) {
        #if os(Linux)
        advise(range ?? 0..<bytes.count, 22)  // MADV_POPULATE_READ
        #endif
    }

    /// `advice` for the pages of `range`: from the page its first byte is on, to its end (or,
    /// `wholePagesOnly`, to the last page it fills), within the mapping.
    private func advise(_ range: Range<Int>, _ advice: Int32, wholePagesOnly: Bool = false) {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let start = range.lowerBound / page * page, upper = min(range.upperBound, bytes.count)
        let end = wholePagesOnly ? upper / page * page : upper
        if end > start { _ = madvise(bytes.buffer.baseAddress! + start, end - start, advice) }
    }

    /// Lets the pages go (they no longer count as the process's memory) and keeps the file open,
    /// so that `change()` still says whether it changed since it was mapped. `bytes` must not be
    /// read after. Called once the values needed are copied out.
    package func unmap() {
        guard faultsWhileMapped == nil else { return }
        faultsWhileMapped = appconfig_map_guard_faults(guardSlot)
        // The guard goes with the pages: another mapping may take these addresses.
        appconfig_map_guard_remove(guardSlot)
        munmap(bytes.buffer.baseAddress, bytes.count)
    }

    /// Why what was read from the mapping cannot be trusted, or nil: the file was cut shorter
    /// (pages lost) or rewritten in place since it was mapped.
    package func change() -> FileReadError? {
        let lost = faultsWhileMapped ?? appconfig_map_guard_faults(guardSlot)
        var info = stat()
        guard fstat(fd, &info) == 0 else { return FileReadError(path: path, reason: String(cString: strerror(errno))) }
        if lost > 0 || Int(info.st_size) != mapped.size {
            return FileReadError(path: path, reason: "it changed while it was read (\(mapped.size) bytes, then \(info.st_size))", changed: true)
        }
        // The status-change time (ctime), not the modification time: a rewrite in place that puts
        // the mtime back (`rsync --inplace -t`, same size) left the mtime as it was, and a render was
        // published half old, half new; no call sets the ctime back. A file replaced by
        // a rename (as exporters write) has no name left: the unlink moved its ctime, not its
        // content, so its mtime says whether it was written to.
        let now = Times(info)
        if info.st_nlink == 0 ? now.modified != mapped.times.modified : now.changed != mapped.times.changed {
            return FileReadError(path: path, reason: "it changed while it was read (written to in place)", changed: true)
        }
        return nil
    }

    /// A file's modification and status-change times, each (seconds, nanoseconds).
    struct Times {
        var modified: [Int], changed: [Int]

        init(_ info: stat) {
            #if canImport(Darwin)
            (modified, changed) = ([Int(info.st_mtimespec.tv_sec), Int(info.st_mtimespec.tv_nsec)], [Int(info.st_ctimespec.tv_sec), Int(info.st_ctimespec.tv_nsec)])
            #else
            (modified, changed) = ([Int(info.st_mtim.tv_sec), Int(info.st_mtim.tv_nsec)], [Int(info.st_ctim.tv_sec), Int(info.st_ctim.tv_nsec)])
            #endif
        }
    }

    deinit {
        if faultsWhileMapped == nil {
            appconfig_map_guard_remove(guardSlot)
            munmap(bytes.buffer.baseAddress, bytes.count)
        }
        close(fd)
    }
}
