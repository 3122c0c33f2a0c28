import AppConfigCore
import Foundation

/// A file written under a temporary name beside its final one, renamed when complete: no partial
/// file ever stands under the final name.
package final class AtomicFile {
    package let path: String
    package let temporary: String
    package let descriptor: Int32
    private var isOpen = true

    /// The temporary is `PATH.tmp-PID-RANDOM`, created with `O_EXCL | O_NOFOLLOW`: a file or a
    /// symlink planted under a name a run would use is never opened (a root run truncated a
    /// symlink's target through `PATH.tmp-PID`). `mode` 0600 for a file that holds secrets
    /// (member modes protect nothing inside an archive others can read). `readable`: open for
    /// reading too (what is written is copied elsewhere from it, `TrailingCopy`).
    package init(path: String, mode: mode_t = 0o644, readable: Bool = false) throws(Problem) {
        self.path = path
        var name = "", fd: Int32 = -1
        for _ in 0..<16 {
            name = Self.temporaryName(for: path)
            fd = open(name, (readable ? O_RDWR : O_WRONLY) | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
            if fd >= 0 || errno != EEXIST { break }
        }
        temporary = name
        descriptor = fd
        guard descriptor >= 0 else { throw Problem(.outputWrite, at: Location(file: path), "cannot write \(path): \(systemError())") }
    }

    /// Flushed to the disk, then renamed over the final name: a crash after the rename never finds
    /// a short file under it.
    package func commit() throws(Problem) {
        guard isOpen else { return }
        isOpen = false
        guard fsync(descriptor) == 0 || errno == EINVAL, close(descriptor) == 0, rename(temporary, path) == 0 else {
            let reason = systemError()
            unlink(temporary)
            throw Problem(.outputWrite, at: Location(file: path), "cannot write \(path): \(reason)")
        }
    }

    package func discard() {
        guard isOpen else { return }
        isOpen = false
        close(descriptor)
        unlink(temporary)
    }

    deinit { discard() }

    /// `PATH.tmp-PID-RANDOM`: what `removeStale` finds when the run that made it is gone.
    private static func temporaryName(for path: String) -> String {
        path + ".tmp-\(getpid())-" + String(UInt32.random(in: 0...UInt32.max), radix: 16)
    }

    /// `path` made a hard link to `source`, under a temporary name first, as a file is written
    /// (`link` never follows or overwrites what stands at the name). False when it cannot be
    /// linked (another file system, `source` gone): nothing is then left.
    package static func link(_ source: String, to path: String) -> Bool {
        let name = temporaryName(for: path)
        guard Foundation.link(source, name) == 0 else { return false }
        guard rename(name, path) == 0 else {
            unlink(name)
            return false
        }
        return true
    }

    /// Removes `PATH.tmp-PID-RANDOM` files whose process is gone (a run killed while writing).
    package static func removeStale(beside path: String) {
        let folder = PathText.folder(of: path)
        let prefix = PathText.name(of: path) + ".tmp-"
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] where name.hasPrefix(prefix) {
            guard let pid = Int32(name.dropFirst(prefix.count).prefix { $0 != "-" }), kill(pid, 0) != 0 && errno == ESRCH else { continue }
            unlink(folder + "/" + name)
        }
    }
}

/// Writes a small file (a report, one plist) atomically: temporary name, then rename.
package func writeFileAtomically(_ bytes: [UInt8], to path: String) throws(Problem) {
    try writeFileAtomically(parts: [bytes], to: path)
}

/// Writes a file made of parts atomically.
package func writeFileAtomically(parts: [[UInt8]], to path: String) throws(Problem) {
    let file = try AtomicFile(path: path)
    for part in parts { try writeAll(file.descriptor, part, path: path) }
    try file.commit()
}

/// Writes all of `bytes` to a descriptor, through partial writes and EINTR. `path` names it in errors.
package func writeAll(_ fd: Int32, _ bytes: [UInt8], path: String) throws(Problem) {
    try bytes.withView { b throws(Problem) in try writeAll(fd, b, path: path) }
}

package func writeAll(_ fd: Int32, _ view: ByteView, path: String) throws(Problem) {
    var done = 0
    while done < view.count {
        let n = view.withUnsafeBufferPointer { write(fd, $0.baseAddress! + done, $0.count - done) }
        if n < 0 {
            if errno == EINTR { continue }
            throw Problem(.outputWrite, at: Location(file: path), "cannot write \(path): \(systemError())")
        }
        done += n
    }
}

/// errno in the system's words.
package func systemError() -> String { String(cString: strerror(errno)) }

/// Writes `pieces` in order with as few system calls as the kernel takes (`writev`, at most 1024
/// pieces a call: Linux's IOV_MAX), through partial writes and EINTR: a chunk's members are
/// written where they lie, not copied together first.
package func writeAllGathered(_ fd: Int32, _ pieces: [ByteView], path: String) throws(Problem) {
    var vectors = pieces.compactMap { p in
        p.isEmpty ? nil : p.withUnsafeBufferPointer { iovec(iov_base: UnsafeMutableRawPointer(mutating: $0.baseAddress), iov_len: $0.count) }
    }
    var first = 0
    while first < vectors.count {
        let count = Int32(min(vectors.count - first, 1024))
        var left = vectors.withUnsafeBufferPointer { writev(fd, $0.baseAddress! + first, count) }
        if left < 0 {
            if errno == EINTR { continue }
            throw Problem(.outputWrite, at: Location(file: path), "cannot write \(path): \(systemError())")
        }
        while left > 0 {
            if left >= vectors[first].iov_len {
                left -= vectors[first].iov_len
                first += 1
            } else {
                vectors[first].iov_base += left
                vectors[first].iov_len -= left
                left = 0
            }
        }
    }
}
