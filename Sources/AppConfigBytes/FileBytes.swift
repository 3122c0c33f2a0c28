import Dispatch
import Synchronization
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

/// A file's parts as separate arrays, read in parallel, split near each `parts`th of the file
/// where `splitPoint` finds one in the bytes from there on (the index just past a record's end), so
/// that each part can be parsed on its own core. A reader of one array shared by every core pays
/// for its shared reference count on every slice (measured: a third of an LDIF read's time).
public func readFileInParts(_ path: String, parts: Int, limit: Int = 1 << 30,
                            splitPoint: (UnsafeBufferPointer<UInt8>) -> Int?) throws(FileReadError) -> [[UInt8]] {
    let file = try OpenFile(path, limit: limit)
    defer { close(file.fd) }
    var window = [UInt8](repeating: 0, count: 1 << 16)
    let bounds = partBounds(size: file.size, parts: parts) { start in
        var offset = start
        while offset < file.size {
            let n = window.withUnsafeMutableBytes { pread(file.fd, $0.baseAddress, $0.count, off_t(offset)) }
            guard n > 0 else { return nil }
            if let i = window.withUnsafeBufferPointer({ splitPoint(UnsafeBufferPointer(rebasing: $0[0..<n])) }) { return offset + i }
            offset += max(n - 2, 1)  // a separator may straddle two windows
        }
        return nil
    }
    let results = PartArrays(count: bounds.count - 1)
    DispatchQueue.concurrentPerform(iterations: bounds.count - 1) { [bounds] i in
        results.set(i, Result { () throws(FileReadError) in try file.read(bounds[i]..<bounds[i + 1]) })
    }
    return try results.all()
}

/// Where `size` bytes split into (at most) `parts` parts: near each `parts`th, at the split point
/// `splitPoint(from)` finds from there on (an absolute offset, nil for none), each past the one before.
public func partBounds(size: Int, parts: Int, splitPoint: (Int) -> Int?) -> [Int] {
    var bounds = [0]
    for k in 1..<max(parts, 1) {
        guard let bound = splitPoint(max(bounds.last!, size * k / parts)), bound > bounds.last!, bound < size else { break }
        bounds.append(bound)
    }
    return bounds + [size]
}

/// An open file checked against a size limit; reads ranges of it with pread.
private struct OpenFile: Sendable {
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

    /// The bytes of `range` (fewer when the file shrank meanwhile), read straight into the array.
    func read(_ range: Range<Int>) throws(FileReadError) -> [UInt8] {
        var failure: Int32 = 0
        let bytes = [UInt8](unsafeUninitializedCapacity: max(range.count, 1)) { buffer, count in
            var filled = 0
            while filled < range.count {
                let n = pread(fd, buffer.baseAddress! + filled, range.count - filled, off_t(range.lowerBound + filled))
                if n < 0 {
                    if errno == EINTR { continue }
                    failure = errno
                    break
                }
                if n == 0 { break }
                filled += n
            }
            count = filled
        }
        if failure != 0 { throw FileReadError(path: path, reason: String(cString: strerror(failure))) }
        return bytes
    }
}

/// The parts' arrays as the workers read them.
private final class PartArrays: Sendable {
    private let results: Mutex<[Result<[UInt8], FileReadError>?]>

    init(count: Int) { results = Mutex(Array(repeating: nil, count: count)) }

    func set(_ i: Int, _ result: sending Result<[UInt8], FileReadError>) {
        results.withLock { $0[i] = result }
    }

    func all() throws(FileReadError) -> [[UInt8]] {
        let all = results.withLock { $0 }
        return try all.map { r throws(FileReadError) in try r!.get() }
    }
}

/// Reads a whole file into a new buffer of exactly its size (one allocation, no copy); the caller
/// owns the buffer and deallocates it.
public func readFileIntoBuffer(_ path: String, limit: Int = 1 << 30) throws(FileReadError) -> UnsafeMutableBufferPointer<UInt8> {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw FileReadError(path: path, reason: String(cString: strerror(errno))) }
    defer { close(fd) }
    var info = stat()
    guard fstat(fd, &info) == 0 else { throw FileReadError(path: path, reason: String(cString: strerror(errno))) }
    if (info.st_mode & S_IFMT) == S_IFDIR { throw FileReadError(path: path, reason: "is a directory") }
    let size = Int(info.st_size)
    if size > limit {
        throw FileReadError(path: path, reason: "it is \(size) bytes; this kind of file is read up to \(byteSize(limit))", tooLarge: true)
    }
    let buffer = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: max(size, 1))
    var filled = 0
    while filled < size {
        let n = read(fd, buffer.baseAddress! + filled, size - filled)
        if n < 0 {
            if errno == EINTR { continue }
            let reason = String(cString: strerror(errno))
            buffer.deallocate()
            throw FileReadError(path: path, reason: reason)
        }
        if n == 0 { break }
        filled += n
    }
    return UnsafeMutableBufferPointer(rebasing: buffer[0..<filled])
}
