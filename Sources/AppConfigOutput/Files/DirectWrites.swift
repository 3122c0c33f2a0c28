import AppConfigCore
import CFileSync
import Foundation

/// An archive's members and line files written to its disk past the page cache (`O_DIRECT`),
/// through a staging buffer of whole blocks. Through the cache, each byte was copied by the kernel
/// into a page it had to find first: a 10M-device archive (18 GB) filled the cache, every new page
/// cost one reclaimed, and the copies were the job's largest share of system time; past it, the
/// archive goes at the disk's own speed (the figures are in the commit that made this). Not on
/// tmpfs, whose pages are the file, nor where the file system refuses such writes (a first block
/// is tried): nil there, and the archive is written as before.
package final class DirectWrites {
    /// Direct writes go in blocks of this size, from addresses and offsets it divides.
    package static let block = 4096
    private let descriptor: Int32
    private let path: String
    private let staging: UnsafeMutableRawBufferPointer
    private var filled = 0
    /// Where the staging buffer's first byte goes in the file.
    private var offset = 0

    /// For the archive being written at `path` (its temporary name, empty), shown as `name`.
    package init?(path: String, shownAs name: String, capacity: Int = 8 << 20) {
        let fd = appconfig_open_direct(path)
        guard fd >= 0 else { return nil }
        var memory: UnsafeMutableRawPointer?
        guard posix_memalign(&memory, Self.block, capacity) == 0, let memory else {
            close(fd)
            return nil
        }
        staging = UnsafeMutableRawBufferPointer(start: memory, count: capacity)
        descriptor = fd
        self.path = name
        // A file system that opens with O_DIRECT may still refuse the writes: one block tried.
        memset(memory, 0, Self.block)
        guard pwrite(fd, memory, Self.block, 0) == Self.block, ftruncate(fd, 0) == 0 else { return nil }
    }

    deinit {
        close(descriptor)
        staging.deallocate()
    }

    /// Appends the pieces, writing the staging buffer each time it fills.
    package func write(_ pieces: [ByteView]) throws(Problem) {
        for piece in pieces {
            try piece.withUnsafeBufferPointer { bytes throws(Problem) in
                var from = 0
                while from < bytes.count {
                    let n = min(staging.count - filled, bytes.count - from)
                    (staging.baseAddress! + filled).copyMemory(from: bytes.baseAddress! + from, byteCount: n)
                    filled += n
                    from += n
                    if filled == staging.count { try writeStaged(filled) }
                }
            }
        }
    }

    /// Appends `count` bytes read from `source` (from where it stands), read straight into the
    /// staging buffer.
    package func copy(from source: Int32, count: Int, shownAs sourceName: String) throws(Problem) {
        var left = count
        while left > 0 {
            let n = read(source, staging.baseAddress! + filled, min(staging.count - filled, left))
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw Problem(.outputWrite, at: Location(file: path), "cannot read \(sourceName) back: \(n == 0 ? "it is shorter than written" : systemError())") }
            filled += n
            left -= n
            if filled == staging.count { try writeStaged(filled) }
        }
    }

    /// Ends direct writing: the whole blocks staged are written; the rest (under a block) goes
    /// through `buffered`, a descriptor of the same file, left at the end for what follows.
    package func finish(through buffered: Int32) throws(Problem) {
        let whole = filled / Self.block * Self.block
        if whole > 0 { try writeStaged(whole) }
        try write(filled, through: buffered)
        guard lseek(buffered, off_t(offset + filled), SEEK_SET) >= 0 else { throw failure() }
        filled = 0
    }

    /// The first `count` staged bytes (whole blocks) written at `offset`; what follows them moved
    /// to the front.
    private func writeStaged(_ count: Int) throws(Problem) {
        try write(count, through: descriptor)
        offset += count
        filled -= count
        if filled > 0 { memmove(staging.baseAddress!, staging.baseAddress! + count, filled) }
    }

    /// The first `count` staged bytes written at `offset` through `fd`.
    private func write(_ count: Int, through fd: Int32) throws(Problem) {
        var done = 0
        while done < count {
            let n = pwrite(fd, staging.baseAddress! + done, count - done, off_t(offset + done))
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw failure() }
            done += n
        }
    }

    private func failure() -> Problem {
        Problem(.outputWrite, at: Location(file: path), "cannot write \(path): \(systemError())")
    }
}
