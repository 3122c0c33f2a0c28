/// ustar members, deterministic: mode 0644, owner 0, mtime 0 (the same inputs give the same
/// archive), names of at most 100 bytes with the folder in the prefix field.
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

    /// Appends the 512-byte header of a regular file whose path is `path` (`folder/name`, as
    /// OutputNames makes it): the name field, or the prefix field for the folder when longer than 100.
    static func appendHeader(path: ArraySlice<UInt8>, size: Int, to out: inout [UInt8]) {
        let start = out.count
        out += template
        var name = path
        if name.count > 100, let slash = name.firstIndex(of: UInt8(ascii: "/")) {
            let prefix = name[..<slash]
            precondition(prefix.count <= 155, "tar member prefix too long")
            for (i, b) in prefix.enumerated() { out[start + 345 + i] = b }
            name = name[(slash + 1)...]
        }
        precondition(name.count <= 100, "tar member name too long")
        for (i, b) in name.enumerated() { out[start + i] = b }
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
