#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension Array where Element == UInt8 {
    /// Where each line is (without its line feed; a last line without one counts), found with
    /// `memchr`: a JSON-lines file of 1M lines split byte by byte cost a status run a second.
    package var lineRanges: [Range<Int>] { withUnsafeBytes { LineRanges.of($0) } }
}

package enum LineRanges {
    /// The lines of `bytes`, as ranges of offsets into it.
    package static func of(_ bytes: UnsafeRawBufferPointer) -> [Range<Int>] {
        var lines: [Range<Int>] = []
        guard let base = bytes.baseAddress else { return lines }
        var start = 0
        while start < bytes.count {
            guard let hit = memchr(base + start, 0x0A, bytes.count - start) else { break }
            let end = base.distance(to: UnsafeRawPointer(hit))
            lines.append(start..<end)
            start = end + 1
        }
        if start < bytes.count { lines.append(start..<bytes.count) }
        return lines
    }
}
