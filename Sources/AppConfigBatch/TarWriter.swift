/// ustar members, deterministic: mode 0644, owner 0, mtime 0 (the same inputs give the same
/// archive), names of at most 100 bytes.
enum Tar {
    static let blockSize = 512

    /// The fixed part of every header: mode, owner, mtime, type and magic (all members share them).
    private static let template: [UInt8] = {
        var h = [UInt8](repeating: 0, count: blockSize)
        func put(_ text: String, _ offset: Int) { for (i, b) in text.utf8.enumerated() { h[offset + i] = b } }
        put("0000644", 100); put("0000000", 108); put("0000000", 116); put("00000000000", 136)
        h[156] = UInt8(ascii: "0")
        put("ustar", 257); put("00", 263)
        return h
    }()

    /// Appends the 512-byte header of a device's member: its path (`folder/name.plist`, as
    /// OutputNames makes it: at most 100 bytes, so it always fits the name field) and its size.
    /// The path is built past the header and moved into it: nothing is allocated.
    static func appendHeader(key: UnsafeBufferPointer<UInt8>, size: Int, to out: inout [UInt8]) {
        let start = out.count
        out += template
        OutputNames.appendRelativePath(key, to: &out)
        let n = out.count - start - blockSize
        precondition(n <= 100, "tar member name too long")
        out.withUnsafeMutableBufferPointer { b in
            for i in 0..<n { b[start + i] = b[start + blockSize + i] }
        }
        out.removeLast(n)
        writeOctal(size, width: 11, at: start + 124, in: &out)
        // The checksum: the header's bytes with the checksum field as eight spaces.
        var sum = 8 * 0x20
        for i in 0..<blockSize where i < 148 || i >= 156 { sum += Int(out[start + i]) }
        writeOctal(sum, width: 6, at: start + 148, in: &out)
        out[start + 154] = 0
        out[start + 155] = 0x20
    }

    private static func writeOctal(_ value: Int, width: Int, at offset: Int, in out: inout [UInt8]) {
        var v = value
        for i in stride(from: width - 1, through: 0, by: -1) {
            out[offset + i] = UInt8(ascii: "0") + UInt8(v & 7)
            v >>= 3
        }
    }

    static func padding(for size: Int) -> Int { (blockSize - size % blockSize) % blockSize }

    /// Two zero blocks end an archive.
    static let trailer = [UInt8](repeating: 0, count: 2 * blockSize)
}
