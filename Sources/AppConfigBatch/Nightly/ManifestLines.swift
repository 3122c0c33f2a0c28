import AppConfigCore
import Foundation

/// Where each device line of a manifest read from a file lies in it, with the file kept open: a
/// night writes the lines of the devices that did not change as last night's bytes, copied,
/// instead of making them again (a 1% night made and wrote a million lines, 99% of them the same).
/// Only a version 4 manifest's (the lines this version writes), and only while the file is the one
/// that was read: the same file, neither written to nor cut since (`unchanged`).
final class ManifestLines: @unchecked Sendable {
    let path: String
    private let fd: Int32
    /// Device line `i` is `starts[i]..<starts[i + 1]` (with its line break); the last is the end line's start.
    private let starts: [Int]
    /// The file as it was opened.
    private let opened: FileState

    /// The file `path` opened, as it was read (`read`: its state when the parse began, nil when
    /// it could not be taken): nil when it is not that file any more.
    init?(path: String, starts: [Int], read: FileState?) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        guard let state = FileState(descriptor: fd), state == read else {
            close(fd)
            return nil
        }
        (self.path, self.fd, self.starts, opened) = (path, fd, starts, state)
    }

    deinit { close(fd) }

    /// Whether the file is as it was read: not written to, cut or grown since.
    var unchanged: Bool { FileState(descriptor: fd) == opened }

    /// Appends device lines `lines` (entries of the manifest, in file order) to `out`, each with
    /// its line break; false when they cannot be read whole (`out` is then as it was).
    func append(lines: Range<Int>, to out: inout [UInt8]) -> Bool {
        let start = starts[lines.lowerBound], count = starts[lines.upperBound] - start
        let at = out.count
        out.append(contentsOf: repeatElement(0, count: count))
        var done = 0
        let whole = out.withUnsafeMutableBytes { bytes in
            while done < count {
                let n = pread(fd, bytes.baseAddress! + at + done, count - done, off_t(start + done))
                if n <= 0 { return false }
                done += n
            }
            return true
        }
        if !whole { out.removeLast(count) }
        return whole
    }
}
