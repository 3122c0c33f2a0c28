#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A-Z as a-z, every other byte as it is: how directories and inventories fold names.
@inlinable @inline(__always)
package func asciiLower(_ b: UInt8) -> UInt8 { b >= 0x41 && b <= 0x5A ? b | 0x20 : b }

/// Eight bytes with each of A-Z as a-z (SWAR: 0x80 marks each byte >= 0x41 and not >= 0x5B,
/// ASCII only, and is moved to 0x20; no carry crosses a byte).
@inlinable @inline(__always)
package func asciiLowerWord(_ w: UInt64) -> UInt64 {
    let low = w & 0x7F7F_7F7F_7F7F_7F7F
    let upper = (low &+ 0x3F3F_3F3F_3F3F_3F3F) & ~(low &+ 0x2525_2525_2525_2525) & ~w & 0x8080_8080_8080_8080
    return w | upper >> 2
}

/// Byte equality; `foldingASCIICase` compares A-Z as a-z.
@inlinable @inline(__always)
package func bytesEqual(_ a: ByteView, _ b: ByteView, foldingASCIICase: Bool = false) -> Bool {
    guard a.count == b.count else { return false }
    guard let pa = a.elements.baseAddress, let pb = b.elements.baseAddress else { return a.count == 0 }
    return foldingASCIICase ? foldedBytesEqual(a, b) : memcmp(pa, pb, a.count) == 0
}

/// Two views of one length equal with A-Z taken as a-z, eight bytes at a time (the last eight
/// overlapping the ones before when the count is not a multiple of eight). Byte by byte it cost
/// what the callers do most: the join's user keys, the inventory's duplicate check, assignments'
/// matches.
@inlinable @inline(__always)
package func foldedBytesEqual(_ a: ByteView, _ b: ByteView) -> Bool {
    @inline(__always) func same(_ x: UInt64, _ y: UInt64) -> Bool { x == y || asciiLowerWord(x) == asciiLowerWord(y) }
    let count = a.count
    guard count >= 8 else {
        for i in 0..<count where a[i] != b[i] && asciiLower(a[i]) != asciiLower(b[i]) { return false }
        return true
    }
    var i = 0
    while i + 8 <= count {
        guard same(a.word(at: i), b.word(at: i)) else { return false }
        i += 8
    }
    return i == count || same(a.word(at: count - 8), b.word(at: count - 8))
}

/// Byte-wise order (memcmp, then length): how device keys sort in archives, indexes and manifests.
@inlinable @inline(__always)
package func bytesPrecede(_ a: ByteView, _ b: ByteView) -> Bool { bytesCompare(a, b) < 0 }

/// Byte-wise three-way order (memcmp's, then length): negative, zero or positive. Eight bytes at
/// a time, a word that differs compared in big-endian order (the last eight overlapping the ones
/// before, equal so far); shorter views byte by byte. A call to memcmp per comparison, two for
/// keys that are equal, was most of merging tonight's device keys with last night's.
@inlinable @inline(__always)
package func bytesCompare(_ a: ByteView, _ b: ByteView) -> Int {
    @inline(__always) func order(_ x: UInt64, _ y: UInt64) -> Int { x.byteSwapped < y.byteSwapped ? -1 : 1 }
    let n = min(a.count, b.count)
    if n >= 8 {
        var i = 0
        while i + 8 <= n {
            let (x, y) = (a.word(at: i), b.word(at: i))
            if x != y { return order(x, y) }
            i += 8
        }
        if i < n {
            let (x, y) = (a.word(at: n - 8), b.word(at: n - 8))
            if x != y { return order(x, y) }
        }
    } else {
        for i in 0..<n where a[i] != b[i] { return a[i] < b[i] ? -1 : 1 }
    }
    return a.count == b.count ? 0 : a.count < b.count ? -1 : 1
}

extension BufferView where Element == UInt8 {
    /// The first `byte` at or after `start` (memchr), nil when there is none.
    @inlinable
    package func firstIndex(of byte: UInt8, from start: Int) -> Int? {
        guard start < count, let base = elements.baseAddress else { return nil }
        return memchr(base + start, Int32(byte), count - start).map { Int(bitPattern: $0) - Int(bitPattern: base) }
    }
}

/// A hex digit's value (either case), nil for any other byte: DN escapes (`\4A`), a manifest's
/// `%XX` and its input digests.
@inlinable
package func hexDigitValue(_ c: UInt8) -> UInt8? {
    switch c {
    case 0x30...0x39: c - 0x30
    case 0x41...0x46: c - 0x41 + 10
    case 0x61...0x66: c - 0x61 + 10
    default: nil
    }
}

/// Bytes within `low...high` found eight at a time (SWAR): `marks(w)` has 0x80 in each byte of
/// `w` in the range, for a word whose bytes are all below 0x80 (test `w & 0x8080_8080_8080_8080`
/// first: a byte above carries into the next). `foldingCase` tests a byte with 0x20 set, so
/// that `a...z` takes the letters of either case (only `A-Z` and `a-z` land in `a-z` so).
/// An empty range (`low > high`) marks nothing. Public and inlinable: the loops of other modules
/// that test words with it (the export checks' shapes, the output names) inline `marks`, which
/// a package type's methods are not.
public struct ByteRangeMarks: Sendable {
    @usableFromInline let add: UInt64, limit: UInt64, fold: UInt64

    @inlinable
    public init(_ low: UInt8, _ high: UInt8, foldingCase: Bool = false) {
        assert(low <= 0x80 && high < 0x80, "a range of ASCII bytes")
        add = UInt64(0x80 &- low) &* 0x0101_0101_0101_0101
        limit = UInt64(0x7F &- high) &* 0x0101_0101_0101_0101
        fold = foldingCase ? 0x2020_2020_2020_2020 : 0
    }

    /// Whether `byte` is in the range (as `marks` tests it).
    @inlinable
    public func contains(_ byte: UInt8) -> Bool { byte < 0x80 && marks(UInt64(byte)) & 0x80 != 0 }

    @inlinable @inline(__always)
    public func marks(_ w: UInt64) -> UInt64 {
        let x = w | fold
        return (x &+ add) & ~(x &+ limit) & 0x8080_8080_8080_8080
    }
}
