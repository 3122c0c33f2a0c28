import AppConfigCore
import Foundation

/// One run at a time per output: an exclusive `flock` on `OUTPUT.lock`, held for the whole run and
/// let go when the run ends (or its process dies: the kernel releases it). A second run fails at
/// once with one clear line instead of interleaving with the first.
package final class OutputLock {
    private let descriptor: Int32

    package init(output: String) throws(Problem) {
        let p = PathText.trimmed(output)
        let parent = PathText.folder(of: p)
        if parent != "." {
            do { try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true) } catch {
                throw Problem(.outputWrite, at: Location(file: parent), "cannot create \(parent): \(GenerationFolder.reason(error))")
            }
        }
        let path = p + ".lock"
        // Never through a symlink (one planted at OUT.lock made a root run create its target), and
        // only the running user's lock file.
        descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o644)
        guard descriptor >= 0 else {
            if errno == ELOOP { throw Problem(.outputExists, at: Location(file: path), "\(path) is a symlink; nothing was written") }
            throw Problem(.outputWrite, at: Location(file: path), "cannot create \(path): \(systemError())")
        }
        var info = stat()
        if fstat(descriptor, &info) != 0 || info.st_uid != geteuid() || (info.st_mode & S_IFMT) != S_IFREG {
            close(descriptor)
            throw Problem(.outputExists, at: Location(file: path), "\(path) is not a lock file of this user's; nothing was written")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            close(descriptor)
            throw Problem(.outputLocked, at: Location(file: p), "\(p) is being written by another appconfig run (it holds \(path)); nothing was written")
        }
    }

    deinit { close(descriptor) }
}
