/// FNV-1a 64: small, no setup, good for short strings (device keys, resolved values, join keys) and
/// stable across runs and machines (output folders and shards depend on that). `foldingASCIICase`
/// hashes A-Z as a-z, for keys matched case-insensitively.
@inlinable @inline(__always)
public func fnv1a(_ bytes: UnsafeBufferPointer<UInt8>, seed: UInt64 = fnv1aSeed, foldingASCIICase: Bool = false) -> UInt64 {
    var h = seed
    for var b in bytes {
        if foldingASCIICase && b >= 0x41 && b <= 0x5A { b |= 0x20 }
        h = fnv1aStep(h, b)
    }
    return h
}

/// FNV-1a's starting value (the 64-bit offset basis).
public let fnv1aSeed: UInt64 = 0xcbf2_9ce4_8422_2325

/// One byte of FNV-1a, for scanners that hash while they look at each byte anyway.
@inlinable @inline(__always)
public func fnv1aStep(_ hash: UInt64, _ byte: UInt8) -> UInt64 {
    (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
}
