import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Removes a folder tree by descriptors (`openat` with `O_NOFOLLOW | O_DIRECTORY`, `unlinkat`),
/// never by path: a folder inside it swapped for a symlink mid-removal is unlinked as the symlink
/// it now is, and nothing it points at is touched (`rm -rf` by path followed such a swap out of the
/// tree).
package enum TreeRemoval {
    /// Removes `name` in the folder `parent` (a descriptor), with everything below it.
    package static func remove(_ name: String, in parent: Int32) {
        let fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            // Not a folder (a file, or a symlink, which O_NOFOLLOW refuses): the entry itself goes.
            if errno == ENOTDIR || errno == ELOOP { unlinkat(parent, name, 0) }
            return
        }
        guard let dir = fdopendir(fd) else {
            close(fd)
            return
        }
        var names: [String] = []
        while let entry = readdir(dir) {
            let n = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
            if n != "." && n != ".." { names.append(n) }
        }
        for n in names {
            var info = stat()
            guard fstatat(fd, n, &info, AT_SYMLINK_NOFOLLOW) == 0 else { continue }
            if info.st_mode & S_IFMT == S_IFDIR { remove(n, in: fd) } else { unlinkat(fd, n, 0) }
        }
        closedir(dir)
        unlinkat(parent, name, AT_REMOVEDIR)
    }
}
