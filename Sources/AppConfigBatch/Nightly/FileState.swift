import Foundation

/// A file's identity and what any change to it moves: device, inode, size, modification and
/// status-change times. Two equal states a while apart: the same file, not written to, cut or
/// replaced in between (a write moves the status-change time, which no call sets back).
struct FileState: Equatable {
    private let fields: [Int]

    /// The state of the open file `fd` (nil when `fstat` fails).
    init?(descriptor fd: Int32) {
        var info = stat()
        guard fstat(fd, &info) == 0 else { return nil }
        #if canImport(Darwin)
        let (modified, changed) = (info.st_mtimespec, info.st_ctimespec)
        #else
        let (modified, changed) = (info.st_mtim, info.st_ctim)
        #endif
        fields = [Int(info.st_dev), Int(info.st_ino), Int(info.st_size), modified.tv_sec, modified.tv_nsec, changed.tv_sec, changed.tv_nsec].map { Int($0) }
    }

    /// The file's size.
    var size: Int { fields[2] }

    /// The state as text, to keep in a file (a directory image's header).
    var text: String { fields.map(String.init).joined(separator: " ") }

    /// The state of the file at `path` now (nil when it cannot be opened).
    init?(path: String) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        self.init(descriptor: fd)
    }
}
