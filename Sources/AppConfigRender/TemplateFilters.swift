import AppConfigCore

/// The template filters (`$(ou|lower)`...), applied by the VM to the bytes of the variable just
/// appended: `text[from..<count]` of the device's string buffer. ASCII work happens in place;
/// filters that change the length write past the end and move the result down, so the buffer's
/// memory is reused from device to device. Only `lower`/`upper` on non-ASCII letters go through a
/// `String` (Unicode's case mapping), which allocates; ASCII, the common case, does not.
extension GrowingStorage where Element == UInt8 {
    @inline(__always)
    private func hasNonASCII(from start: Int) -> Bool {
        var i = start
        while i < count { if self[at: i] >= 0x80 { return true }; i += 1 }
        return false
    }

    mutating func lowercase(from start: Int) {
        guard !hasNonASCII(from: start) else { return recase(from: start) { $0.lowercased() } }
        for i in start..<count where self[at: i] >= 0x41 && self[at: i] <= 0x5A { self[at: i] |= 0x20 }
    }

    mutating func uppercase(from start: Int) {
        guard !hasNonASCII(from: start) else { return recase(from: start) { $0.uppercased() } }
        for i in start..<count where self[at: i] >= 0x61 && self[at: i] <= 0x7A { self[at: i] &= ~0x20 }
    }

    private mutating func recase(from start: Int, _ transform: (String) -> String) {
        let text = transform(String(decoding: view(start: start, count: count - start), as: UTF8.self))
        truncate(to: start)
        var t = text
        t.withUTF8 { _ = append($0) }
    }

    /// Space, tab, LF, CR, vertical tab and form feed.
    @inline(__always)
    private static func isSpace(_ b: UInt8) -> Bool { b == 0x20 || (b >= 0x09 && b <= 0x0D) }

    mutating func trim(from start: Int) {
        var lo = start, hi = count
        while lo < hi && Self.isSpace(self[at: lo]) { lo += 1 }
        while hi > lo && Self.isSpace(self[at: hi - 1]) { hi -= 1 }
        keep(from: start, lo, hi)
    }

    @inline(__always)
    private static func isUnreserved(_ b: UInt8) -> Bool {
        (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || (b >= 0x30 && b <= 0x39)
            || b == 0x2D || b == 0x2E || b == 0x5F || b == 0x7E
    }

    /// RFC 3986 percent-encoding, filled from the back so that nothing is copied twice.
    mutating func percentEncode(from start: Int) {
        var escaped = 0
        for i in start..<count where !Self.isUnreserved(self[at: i]) { escaped += 1 }
        guard escaped > 0 else { return }
        let oldEnd = count
        _ = extend(by: 2 * escaped)
        let hex: StaticString = "0123456789ABCDEF"
        var write = count
        var read = oldEnd
        while read > start {
            read -= 1
            let b = self[at: read]
            if Self.isUnreserved(b) {
                write -= 1
                self[at: write] = b
            } else {
                write -= 3
                self[at: write] = 0x25
                self[at: write + 1] = hex.utf8Start[Int(b >> 4)]
                self[at: write + 2] = hex.utf8Start[Int(b & 0x0F)]
            }
        }
    }

    /// Every occurrence of `old` (not empty) replaced by `new`, left to right. The result is built
    /// past the end of the buffer, then moved down over the original.
    mutating func replace(from start: Int, _ old: ByteView, with new: ByteView) {
        let end = count, n = old.count
        guard n > 0, end - start >= n else { return }
        var i = start
        while i + n <= end {
            if self[at: i] == old[0] && view(start: i, count: n).equals(old) { break }
            i += 1
        }
        guard i + n <= end else { return }  // no occurrence: nothing moves
        var read = start
        while read < end {
            if read + n <= end && self[at: read] == old[0] && view(start: read, count: n).equals(old) {
                append(new)
                read += n
            } else {
                append(self[at: read])
                read += 1
            }
        }
        let length = count - end
        move(from: end, to: start, count: length)
        truncate(to: start + length)
    }

    /// `text[from..<count]` becomes `text[lo..<hi]` (of the same bytes): moved down, nothing copied twice.
    private mutating func keep(from start: Int, _ lo: Int, _ hi: Int) {
        if lo > start { move(from: lo, to: start, count: hi - lo) }
        truncate(to: start + (hi - lo))
    }

    /// `substr`/`last`: the characters (Unicode scalars: UTF-8 lead bytes) from `first` (negative:
    /// from the end), `length` of them or to the end.
    @inline(never)  // rare filters stay out of the VM loop (inlined, they slowed every device)
    mutating func slice(from start: Int, start first: Int, length: Int?) {
        var scalars = 0
        for i in start..<count where self[at: i] & 0xC0 != 0x80 { scalars += 1 }
        let lo = first >= 0 ? min(first, scalars) : max(0, scalars + first)
        let hi = length.map { min(scalars, lo + $0) } ?? scalars
        // Byte offsets of scalars lo and hi.
        var scalar = 0, loByte = count, hiByte = count
        for i in start..<count where self[at: i] & 0xC0 != 0x80 {
            if scalar == lo { loByte = i }
            if scalar == hi { hiByte = i; break }
            scalar += 1
        }
        keep(from: start, loByte, hiByte)
    }

    /// `split`: the `index`-th piece (negative: from the end) of the value cut at each
    /// `separator` (not empty); empty when there is no such piece.
    @inline(never)
    mutating func piece(from start: Int, separator: ByteView, index: Int) {
        let n = separator.count
        var cuts: [Int] = []  // the byte offset of each separator, in order
        var i = start
        while n > 0 && i + n <= count {
            if self[at: i] == separator[0] && view(start: i, count: n).equals(separator) {
                cuts.append(i)
                i += n
            } else {
                i += 1
            }
        }
        let pieces = cuts.count + 1
        let k = index >= 0 ? index : pieces + index
        guard k >= 0 && k < pieces else { truncate(to: start); return }
        keep(from: start, k == 0 ? start : cuts[k - 1] + n, k == cuts.count ? count : cuts[k])
    }
}
