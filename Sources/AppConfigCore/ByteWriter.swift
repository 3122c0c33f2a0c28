/// The one way the engine writes bytes at an address: a cursor over room reserved beforehand (a
/// plist's exact size in the output buffer, a manifest line on the stack). The emitters, the
/// manifest, the index and the paths all write through it; what knows its size asks for that room
/// once and writes with no capacity check per byte, which is why it is not an array. Writing past
/// the room is a programming error, checked in debug builds.
@usableFromInline package struct ByteWriter {
    @usableFromInline let start: UnsafeMutablePointer<UInt8>
    @usableFromInline let limit: UnsafeMutablePointer<UInt8>
    @usableFromInline var position: UnsafeMutablePointer<UInt8>

    @inlinable
    init(_ room: UnsafeMutableBufferPointer<UInt8>) {
        start = room.baseAddress!
        limit = start + room.count
        position = start
    }

    /// Bytes written so far (an object's offset in a plist).
    @inlinable package var count: Int { position - start }

    @inlinable @inline(__always)
    package mutating func write(_ byte: UInt8) {
        assert(position < limit, "a write past the room reserved")
        position.pointee = byte
        position += 1
    }

    @inlinable @inline(__always)
    package mutating func write(_ text: StaticString) {
        write(UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// Short runs (a plist constant, a key) are copied by a loop: a call to memcpy cost more.
    @inlinable @inline(__always)
    package mutating func write(_ bytes: UnsafeBufferPointer<UInt8>) {
        assert(position + bytes.count <= limit, "a write past the room reserved")
        guard let from = bytes.baseAddress else { return }
        if bytes.count <= 16 {
            for i in 0..<bytes.count { position[i] = from[i] }
        } else {
            position.update(from: from, count: bytes.count)
        }
        position += bytes.count
    }

    @inlinable @inline(__always)
    package mutating func write(_ bytes: ByteView) { bytes.withUnsafeBufferPointer { write($0) } }

    /// `value`'s low `width` bytes, most significant first.
    @inlinable @inline(__always)
    package mutating func write(bigEndian value: UInt64, width: Int) {
        assert(position + width <= limit, "a write past the room reserved")
        var v = value
        var i = width - 1
        while i >= 0 {
            position[i] = UInt8(truncatingIfNeeded: v)
            v >>= 8
            i -= 1
        }
        position += width
    }

    /// `value`'s low `digits` hex digits, lowercase, most significant first.
    @inlinable @inline(__always)
    package mutating func write(hex value: UInt64, digits: Int) {
        assert(position + digits <= limit, "a write past the room reserved")
        if digits == 16 {
            // A whole word (a digest's quarter, an input digest), eight digits a store: digit by
            // digit it was most of writing a manifest's lines.
            UnsafeMutableRawPointer(position).storeBytes(of: Self.hexDigits(UInt32(truncatingIfNeeded: value >> 32)), as: UInt64.self)
            UnsafeMutableRawPointer(position + 8).storeBytes(of: Self.hexDigits(UInt32(truncatingIfNeeded: value)), as: UInt64.self)
            position += 16
            return
        }
        for i in 0..<digits {
            let d = UInt8(truncatingIfNeeded: value >> UInt64(4 * (digits - 1 - i))) & 0xF
            position[i] = d < 10 ? 0x30 + d : 0x57 + d
        }
        position += digits
    }
}

extension ByteWriter {
    /// `x`'s eight hex digits, lowercase, as the bytes of a little-endian word, most significant
    /// digit first: each nibble spread to a byte, the bytes reversed, then '0' added to each and
    /// 'a' - '0' - 10 more to each of 10 and above (no carry crosses a byte).
    @inlinable @inline(__always)
    static func hexDigits(_ x: UInt32) -> UInt64 {
        var n = UInt64(x)
        n = (n | n << 16) & 0x0000_FFFF_0000_FFFF
        n = (n | n << 8) & 0x00FF_00FF_00FF_00FF
        n = (n | n << 4) & 0x0F0F_0F0F_0F0F_0F0F
        n = n.byteSwapped
        let letters = ((n &+ 0x0606_0606_0606_0606) >> 4) & 0x0101_0101_0101_0101
        return (n &+ 0x3030_3030_3030_3030 &+ letters &* 0x27).littleEndian
    }
}

extension Array where Element == UInt8 {
    /// Hands `write` a writer over `room` bytes of stack (it writes no more), then appends what it
    /// wrote at once: a line of the index or the manifest took six to ten appends through the
    /// array (a uniqueness and capacity check, a call each), which cost more than its bytes.
    @inlinable @inline(__always)
    package mutating func append(room: Int, _ write: (inout ByteWriter) -> Void) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: room) { buffer in
            var writer = ByteWriter(buffer)
            write(&writer)
            precondition(writer.count <= room, "more bytes than their room")
            append(contentsOf: UnsafeBufferPointer(start: buffer.baseAddress!, count: writer.count))
        }
    }

    /// The bytes `write` writes in at most `room` bytes (a constant's encoding at compile time).
    @inlinable
    package init(room: Int, _ write: (inout ByteWriter) -> Void) {
        self.init()
        append(room: room, write)
    }
}

extension GrowingStorage where Element == UInt8 {
    @inlinable @inline(__always)
    package mutating func append(_ text: StaticString) {
        append(UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// Appends exactly `n` bytes that `write` writes in place (the binary emitter, which knows a
    /// plist's size before writing it): one reservation, no copy.
    @inlinable @inline(__always)
    package mutating func append(count n: Int, _ write: (inout ByteWriter) -> Void) {
        if _count + n > _capacity { grow(to: _count + n) }
        var writer = ByteWriter(UnsafeMutableBufferPointer(start: _base + _count, count: n))
        write(&writer)
        assert(writer.count == n, "the writer wrote another size than it reserved")
        _count += n
    }
}
