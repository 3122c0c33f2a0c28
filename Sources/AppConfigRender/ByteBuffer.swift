/// A growable byte buffer that the renderer owns and reuses: `count` resets per device, the memory
/// stays. Writes go through its `append` calls; a finished plist is read through `bytes`.
struct ByteBuffer {
    private(set) var base: UnsafeMutablePointer<UInt8>
    private(set) var capacity: Int
    var count = 0

    init(capacity: Int) {
        self.capacity = max(capacity, 64)
        base = .allocate(capacity: self.capacity)
    }

    /// Frees the memory; called once by the owner's deinit.
    func free() { base.deallocate() }

    /// Makes room for `n` more bytes past `count` (growth doubles, so it is rare once warm).
    @inline(__always)
    mutating func reserve(_ n: Int) {
        if count + n > capacity { grow(to: count + n) }
    }

    private mutating func grow(to needed: Int) {
        var newCapacity = capacity * 2
        while newCapacity < needed { newCapacity *= 2 }
        let newBase = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        newBase.update(from: base, count: count)
        base.deallocate()
        base = newBase
        capacity = newCapacity
    }

    @inline(__always)
    mutating func append(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let source = bytes.baseAddress, bytes.count > 0 else { return }
        reserve(bytes.count)
        (base + count).update(from: source, count: bytes.count)
        count += bytes.count
    }

    @inline(__always)
    mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { append($0) }
    }

    @inline(__always)
    mutating func append(_ byte: UInt8) {
        reserve(1)
        base[count] = byte
        count += 1
    }

    mutating func append(ascii: StaticString) {
        append(UnsafeBufferPointer(start: ascii.utf8Start, count: ascii.utf8CodeUnitCount))
    }

    @inline(__always)
    mutating func appendTabs(_ n: Int) {
        reserve(n)
        for i in 0..<n { base[count + i] = 0x09 }
        count += n
    }

    /// Appends exactly `n` bytes that `write` puts straight into the buffer from the pointer it is
    /// given, returning the pointer past the last byte written (asserted to be `n` bytes on). For
    /// writers that know their size beforehand (the binary emitter): one reservation, no copy.
    @inline(__always)
    mutating func append(count n: Int, _ write: (UnsafeMutablePointer<UInt8>) -> UnsafeMutablePointer<UInt8>) {
        reserve(n)
        let start = base + count
        let end = write(start)
        assert(end - start == n, "the writer wrote another size than it reserved")
        count += n
    }

    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }
}
