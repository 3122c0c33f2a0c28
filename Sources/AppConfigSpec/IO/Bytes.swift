#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// FNV-1a 64: small, no setup, good for short strings (device keys, resolved values, join keys) and
/// stable across runs and machines (output folders and shards depend on that). `foldingASCIICase`
/// hashes A-Z as a-z, for keys matched case-insensitively.
@inlinable @inline(__always)
public func fnv1a(_ bytes: UnsafeBufferPointer<UInt8>, seed: UInt64 = 0xcbf2_9ce4_8422_2325, foldingASCIICase: Bool = false) -> UInt64 {
    var h = seed
    for var b in bytes {
        if foldingASCIICase && b >= 0x41 && b <= 0x5A { b |= 0x20 }
        h = (h ^ UInt64(b)) &* 0x0000_0100_0000_01B3
    }
    return h
}

/// Byte equality; `foldingASCIICase` compares A-Z as a-z.
@inlinable @inline(__always)
public func bytesEqual(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>, foldingASCIICase: Bool = false) -> Bool {
    guard a.count == b.count else { return false }
    if !foldingASCIICase {
        guard let pa = a.baseAddress, let pb = b.baseAddress else { return a.count == 0 }
        return memcmp(pa, pb, a.count) == 0
    }
    for i in 0..<a.count {
        var x = a[i], y = b[i]
        if x >= 0x41 && x <= 0x5A { x |= 0x20 }
        if y >= 0x41 && y <= 0x5A { y |= 0x20 }
        if x != y { return false }
    }
    return true
}

/// Seconds on the monotonic clock, for phase timings.
public func monotonicSeconds() -> Double {
    var t = timespec()
    clock_gettime(CLOCK_MONOTONIC, &t)
    return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
}
