import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a file could not be read, in the system's words (`No such file or directory`).
public struct FileReadError: Error, Sendable, CustomStringConvertible {
    public var path: String
    public var reason: String
    /// The file is larger than its reader takes (found from its size, before reading it).
    public var tooLarge = false
    /// The file changed while it was read (cut shorter or written to in place).
    public var changed = false

    public var description: String { "cannot read \(path): \(reason)" }
}

/// A size as people read it: `16 MiB`, `40.2 MiB` (to a tenth, rounded down), `512 bytes`.
public func byteSize(_ n: Int) -> String {
    if n < 1024 { return "\(n) bytes" }
    let units = ["KiB", "MiB", "GiB", "TiB"]
    var value = Double(n) / 1024, unit = 0
    while value >= 1024 && unit < units.count - 1 { value /= 1024; unit += 1 }
    let text = value == value.rounded() ? String(Int(value)) : String(Double(Int(value * 10)) / 10)
    return "\(text) \(units[unit])"
}

/// Reads a whole file with POSIX calls, so that the error carries errno's reason (Foundation's
/// `FileManager.contents(atPath:)` only says nil).
public func readFileBytes(_ path: String, limit: Int = 1 << 30) throws(FileReadError) -> [UInt8] {
    let file = try OpenFile(path, limit: limit)
    defer { close(file.fd) }
    return try file.read(0..<file.size)
}

/// A file cut into parts (one per core) near each `parts`th of it, where `splitPoint` finds a
/// record's end, each part read window by window into one buffer of its own: a reader touches a
/// few megabytes of fresh memory per core, not the export's size (first-touched pages cost more
/// than the parse).
package final class PartedFile: Sendable {
    private let file: OpenFile
    /// The parts' offsets: part `i` is `bounds[i]..<bounds[i + 1]`.
    package let bounds: [Int]
    package var partCount: Int { bounds.count - 1 }
    package var size: Int { file.size }

    /// `parts(size)`: how many parts a file of `size` bytes is read in (its size as the open file
    /// has it: a link's target's).
    package init(_ path: String, parts: (Int) -> Int, limit: Int = 1 << 30, splitPoint: (ByteView) -> Int?) throws(FileReadError) {
        let file = try OpenFile(path, limit: limit)
        let parts = parts(file.size)
        var window = [UInt8](repeating: 0, count: 1 << 16)
        bounds = partBounds(size: file.size, parts: parts) { start in
            var offset = start
            while offset < file.size {
                let n = window.withUnsafeMutableBytes { pread(file.fd, $0.baseAddress, $0.count, off_t(offset)) }
                guard n > 0 else { return nil }
                if let i = window.withView({ splitPoint($0[view: 0..<n]) }) { return offset + i }
                offset += max(n - 2, 1)  // a separator may straddle two windows
            }
            return nil
        }
        self.file = file
    }

    deinit { close(file.fd) }

    /// Reads part `part` in windows of whole records: each window is cut after the last record that
    /// ends in it (`lastRecordEnd`, nil: none does yet, and the window grows), and what follows is
    /// carried to the front of the next. `body` gets each window (its bytes may be changed in
    /// place) and whether it is the part's last; it returns false to stop.
    package func readWindows(part: Int, window: Int, lastRecordEnd: (ByteView) -> Int?,
                            _ body: (MutableByteView, Bool) -> Bool) throws(FileReadError) {
        var offset = bounds[part]
        let end = bounds[part + 1]
        var buffer = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: max(min(window, end - offset), 1))
        defer { buffer.deallocate() }
        var carried = 0
        while true {
            let n = try file.read(into: UnsafeMutableBufferPointer(rebasing: buffer[carried..<min(buffer.count, carried + end - offset)]), at: offset)
            offset += n
            let filled = carried + n
            let last = offset >= end || n == 0  // n == 0: the file shrank while it was read
            if last {
                _ = body(WorkerSlots(UnsafeMutableBufferPointer(rebasing: buffer[0..<filled])), true)
                return
            }
            guard let cut = lastRecordEnd(ByteView(UnsafeBufferPointer(rebasing: buffer[0..<filled]))), cut > 0 else {
                if filled == buffer.count {
                    // A record longer than the window: a window twice as large, with what was read.
                    let bigger = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: buffer.count * 2)
                    _ = bigger.initialize(from: buffer)
                    buffer.deallocate()
                    buffer = bigger
                }
                carried = filled
                continue
            }
            guard body(WorkerSlots(UnsafeMutableBufferPointer(rebasing: buffer[0..<cut])), false) else { return }
            carried = filled - cut
            if carried > 0 { memmove(buffer.baseAddress!, buffer.baseAddress! + cut, carried) }
        }
    }
}

/// Where `size` bytes split into (at most) `parts` parts: near each `parts`th, at the split point
/// `splitPoint(from)` finds from there on (an absolute offset, nil for none), each past the one before.
package func partBounds(size: Int, parts: Int, splitPoint: (Int) -> Int?) -> [Int] {
    var bounds = [0]
    for k in 1..<max(parts, 1) {
        guard let bound = splitPoint(max(bounds.last!, size * k / parts)), bound > bounds.last!, bound < size else { break }
        bounds.append(bound)
    }
    return bounds + [size]
}

/// Hands a file's bytes to `body` block by block: one pass over a large file (its fingerprint)
/// without holding it. Returns the bytes read. A regular file is mapped and each block handed
/// from its pages, let go once handed (read into a buffer, every byte was copied first: a
/// quarter of a fingerprint's time); a file that changes meanwhile is refused (`changed`). What
/// cannot be mapped is read into one buffer (Foundation's `FileHandle.read(upToCount:)` asks the
/// kernel for 4 KB at a time on Linux).
package func forEachBlock(ofFile path: String, blockSize: Int = 1 << 22, _ body: (UnsafeRawBufferPointer) -> Void) throws(FileReadError) -> Int {
    if let mapped = try MappedFile(path, limit: .max) {
        let size = mapped.bytes.count
        for start in stride(from: 0, to: size, by: blockSize) {
            let end = min(start + blockSize, size)
            body(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(mapped.bytes.buffer)[start..<end]))
            mapped.release(start..<end)
        }
        mapped.unmap()
        if let change = mapped.change() { throw change }
        return size
    }
    let file = try OpenFile(path, limit: .max)
    defer { close(file.fd) }
    let buffer = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: blockSize)
    defer { buffer.deallocate() }
    var offset = 0
    while true {
        let n = try file.read(into: buffer, at: offset)
        if n == 0 { return offset }
        body(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: buffer[..<n])))
        offset += n
    }
}

/// An open file checked against a size limit; reads ranges of it with pread.
struct OpenFile: Sendable {
    let path: String
    let fd: Int32
    let size: Int

    init(_ path: String, limit: Int) throws(FileReadError) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw FileReadError(path: path, reason: String(cString: strerror(errno))) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw FileReadError(path: path, reason: reason)
        }
        if (info.st_mode & S_IFMT) == S_IFDIR { close(fd); throw FileReadError(path: path, reason: "is a directory") }
        let size = Int(info.st_size)
        if size > limit {
            close(fd)
            throw FileReadError(path: path, reason: "it is \(size) bytes; this kind of file is read up to \(byteSize(limit))", tooLarge: true)
        }
        self.path = path
        self.fd = fd
        self.size = size
    }

    /// Fills `buffer` from `offset` (fewer bytes when the file ends first); returns how many.
    func read(into buffer: UnsafeMutableBufferPointer<UInt8>, at offset: Int) throws(FileReadError) -> Int {
        var filled = 0
        while filled < buffer.count {
            let n = pread(fd, buffer.baseAddress! + filled, buffer.count - filled, off_t(offset + filled))
            if n < 0 {
                if errno == EINTR { continue }
                throw FileReadError(path: path, reason: String(cString: strerror(errno)))
            }
            if n == 0 { break }
            filled += n
        }
        return filled
    }

    /// The bytes of `range` (fewer when the file shrank meanwhile), read straight into the array.
    func read(_ range: Range<Int>) throws(FileReadError) -> [UInt8] {
        var failure: FileReadError?
        let bytes = [UInt8](unsafeUninitializedCapacity: max(range.count, 1)) { buffer, count in
            do throws(FileReadError) { count = try read(into: UnsafeMutableBufferPointer(rebasing: buffer[0..<range.count]), at: range.lowerBound) } catch {
                failure = error
                count = 0
            }
        }
        if let failure { throw failure }
        return bytes
    }
}

/// A file read in sections at known offsets: a saved table's, each straight into the buffer
/// that keeps it (mapped and copied, the file's pages and the copy stood at once).
package final class FileSections {
    private let file: OpenFile
    package var size: Int { file.size }

    package init(_ path: String) throws(FileReadError) { file = try OpenFile(path, limit: .max) }

    deinit { close(file.fd) }

    /// `count` bytes from `offset`, nil when the file ends first.
    package func bytes(at offset: Int, count: Int) throws(FileReadError) -> [UInt8]? {
        let bytes = try file.read(offset..<(offset + count))
        return bytes.count == count ? bytes : nil
    }

    /// Appends `byteCount` bytes from `offset` to `buffer` (whole elements, in the machine's byte
    /// order); false when the file ends first.
    package func append<Element>(at offset: Int, byteCount: Int, to buffer: GrowingBuffer<Element>) throws(FileReadError) -> Bool {
        precondition(byteCount % MemoryLayout<Element>.stride == 0, "whole elements")
        let n = byteCount / MemoryLayout<Element>.stride
        buffer.reserve(n)
        let room = UnsafeMutableRawPointer(buffer.base + buffer.count).assumingMemoryBound(to: UInt8.self)
        guard try file.read(into: UnsafeMutableBufferPointer(start: room, count: byteCount), at: offset) == byteCount else { return false }
        _ = buffer.extend(by: n)
        return true
    }
}

/// Reads a whole file into a new buffer of exactly its size (one allocation, no copy), owned by
/// `owner`, to change in place. A large file is read in parts, one per core (the kernel's copy and
/// the first touch of each page are most of a read's time, and they go in parallel).
package func readFile(_ path: String, into owner: BufferArena, limit: Int = 1 << 30) throws(FileReadError) -> MutableByteView {
    let file = try OpenFile(path, limit: limit)
    defer { close(file.fd) }
    let buffer = owner.slots(uninitialized: file.size, of: UInt8.self).buffer
    let parts = file.size >= 8 << 20 ? Parallelism.threads : 1
    var filled = [Int](repeating: 0, count: parts)
    var failures = [FileReadError?](repeating: nil, count: parts)
    filled.withUnsafeMutableBufferPointer { filled in
        failures.withUnsafeMutableBufferPointer { failures in
            forEachRange(file.size, parts: parts) { i, range in
                do throws(FileReadError) {
                    filled[i] = try file.read(into: UnsafeMutableBufferPointer(rebasing: buffer[range]), at: range.lowerBound)
                } catch {
                    failures[i] = error
                }
            }
        }
    }
    if let failure = failures.lazy.compactMap({ $0 }).first { throw failure }
    // A file that shrank while it was read: what was read before the first short part.
    var size = 0
    for i in 0..<parts {
        size += filled[i]
        if filled[i] < file.size * (i + 1) / parts - file.size * i / parts { break }
    }
    return WorkerSlots(UnsafeMutableBufferPointer(rebasing: buffer[0..<size]))
}
