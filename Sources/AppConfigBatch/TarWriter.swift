/// ustar members, deterministic: mode 0644, owner 0, mtime 0 (the same inputs give the same
/// archive), names of at most 100 bytes with the folder in the prefix field.
enum Tar {
    static let blockSize = 512

    /// The 512-byte header of a regular file. `path` is `folder/name` as OutputNames makes it.
    static func header(path: String, size: Int) -> [UInt8] {
        var h = [UInt8](repeating: 0, count: blockSize)
        var name = Array(path.utf8)
        var prefix: [UInt8] = []
        if name.count > 100, let slash = name.firstIndex(of: UInt8(ascii: "/")) {
            prefix = Array(name[..<slash])
            name = Array(name[(slash + 1)...])
        }
        precondition(name.count <= 100 && prefix.count <= 155, "tar member name too long: \(path)")
        func put(_ bytes: [UInt8], _ offset: Int) { for (i, b) in bytes.enumerated() { h[offset + i] = b } }
        func octal(_ value: Int, _ width: Int) -> [UInt8] {
            let digits = String(value, radix: 8)
            return Array((String(repeating: "0", count: max(0, width - 1 - digits.count)) + digits).utf8) + [0]
        }
        put(name, 0)
        put(octal(0o644, 8), 100)
        put(octal(0, 8), 108)
        put(octal(0, 8), 116)
        put(octal(size, 12), 124)
        put(octal(0, 12), 136)
        put(Array("        ".utf8), 148)  // checksum field counts as spaces
        h[156] = UInt8(ascii: "0")
        put(Array("ustar\u{0}00".utf8), 257)
        put(prefix, 345)
        let sum = h.reduce(0) { $0 + Int($1) }
        put(octal(sum, 7) + [0x20], 148)
        return h
    }

    static func padding(for size: Int) -> Int { (blockSize - size % blockSize) % blockSize }

    /// Two zero blocks end an archive.
    static let trailer = [UInt8](repeating: 0, count: 2 * blockSize)
}
