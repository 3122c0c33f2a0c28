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
    let buffer = try readFileIntoBuffer(path, limit: limit)
    defer { UnsafeMutableBufferPointer(start: buffer.baseAddress, count: max(buffer.count, 1)).deallocate() }
    return Array(buffer)
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
