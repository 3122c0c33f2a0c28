import Foundation

/// A directory output, crash-safe: plists are written into a new generation folder beside the
/// output (`OUT.generations/g<time>-<pid>`), and `OUT` is a symlink switched to it in one atomic
/// rename once every device is written. Until then readers see the previous generation whole; after
/// a crash or an interrupt no partial file stands under a final name. (Measured here on ext4:
/// creating a small file costs ~12 µs, replacing one through a temporary name ~84 µs; one switch
/// per run costs nothing per file.)
final class GenerationFolder: @unchecked Sendable {
    let path: String
    let root: String
    let generation: String

    init(path: String) throws {
        var p = path
        while p.count > 1 && p.hasSuffix("/") { p.removeLast() }
        self.path = p
        var info = stat()
        if lstat(p, &info) == 0 && (info.st_mode & S_IFMT) != S_IFLNK {
            throw BatchError(message: "\(p) exists and is not an appconfig output (a symlink to a generation); give a new --out path")
        }
        root = p + ".generations"
        if mkdir(root, 0o755) != 0 && errno != EEXIST {
            throw BatchError(message: "cannot create \(root): \(String(cString: strerror(errno)))")
        }
        var t = timespec()
        clock_gettime(CLOCK_REALTIME, &t)
        let stamp = String(Int(t.tv_sec) * 1000 + Int(t.tv_nsec) / 1_000_000)
        generation = root + "/g" + String(repeating: "0", count: max(0, 14 - stamp.count)) + stamp + "-" + String(getpid())
        if mkdir(generation, 0o755) != 0 {
            throw BatchError(message: "cannot create \(generation): \(String(cString: strerror(errno)))")
        }
    }

    /// Writes one plist under its relative path (`folder/name.plist`). A missing folder is made on
    /// the first ENOENT; threads racing to make the same one all succeed (EEXIST counts as made).
    func write(_ bytes: UnsafeRawBufferPointer, to relative: String) throws {
        let full = generation + "/" + relative
        var fd = open(full, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        if fd < 0 && errno == ENOENT, let slash = relative.firstIndex(of: "/") {
            let folder = generation + "/" + relative[..<slash]
            if mkdir(folder, 0o755) != 0 && errno != EEXIST {
                throw BatchError(message: "cannot create \(folder): \(String(cString: strerror(errno)))")
            }
            fd = open(full, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        }
        guard fd >= 0 else {
            let reason = errno == EEXIST ? "two devices map to this file name" : String(cString: strerror(errno))
            throw BatchError(message: "cannot write \(full): \(reason)")
        }
        defer { close(fd) }
        try writeAll(fd, bytes)
    }

    /// Switches `path` to this generation in one rename, then removes generations beyond `keep`.
    func publish(keep: Int) throws {
        let target = (root as NSString).lastPathComponent + "/" + (generation as NSString).lastPathComponent
        let temporary = path + ".switch-\(getpid())"
        unlink(temporary)
        guard symlink(target, temporary) == 0 else {
            throw BatchError(message: "cannot create \(temporary): \(String(cString: strerror(errno)))")
        }
        guard rename(temporary, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw BatchError(message: "cannot publish \(path): \(reason)")
        }
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).filter { $0.hasPrefix("g") }.sorted()
        for old in names.dropLast(max(keep, 1)) where root + "/" + old != generation {
            try? FileManager.default.removeItem(atPath: root + "/" + old)
        }
    }

    /// Removes this unpublished generation (an interrupt, a failed run).
    func discard() {
        try? FileManager.default.removeItem(atPath: generation)
    }
}

/// A file written under a temporary name beside its final one, renamed when complete.
final class AtomicFile {
    let path: String
    let temporary: String
    let descriptor: Int32
    private var open = true

    init(path: String) throws {
        self.path = path
        temporary = path + ".tmp-\(getpid())"
        descriptor = Glibc.open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw BatchError(message: "cannot write \(path): \(String(cString: strerror(errno)))") }
    }

    func commit() throws {
        guard open else { return }
        open = false
        guard close(descriptor) == 0, rename(temporary, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw BatchError(message: "cannot write \(path): \(reason)")
        }
    }

    func discard() {
        guard open else { return }
        open = false
        close(descriptor)
        unlink(temporary)
    }

    deinit { discard() }
}

/// Writes a small file (a report, one plist) atomically: temporary name, then rename.
public func writeFileAtomically(_ bytes: [UInt8], to path: String) throws {
    let file = try AtomicFile(path: path)
    try writeAll(file.descriptor, bytes)
    try file.commit()
}
