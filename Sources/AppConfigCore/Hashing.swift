/// FNV-1a 64: small, no setup, good for short strings (device keys, resolved values, join keys) and
/// stable across runs and machines (output folders and shards depend on that). `foldingASCIICase`
/// hashes A-Z as a-z, for keys matched case-insensitively.
@inlinable @inline(__always)
package func fnv1a(_ bytes: ByteView, seed: UInt64 = fnv1aSeed, foldingASCIICase: Bool = false) -> UInt64 {
    var h = seed
    for var b in bytes {
        if foldingASCIICase && b >= 0x41 && b <= 0x5A { b |= 0x20 }
        h = fnv1aStep(h, b)
    }
    return h
}

/// FNV-1a's starting value (the 64-bit offset basis).
@usableFromInline package let fnv1aSeed: UInt64 = 0xcbf2_9ce4_8422_2325

/// One byte of FNV-1a, for scanners that hash while they look at each byte anyway.
@inlinable @inline(__always)
package func fnv1aStep(_ hash: UInt64, _ byte: UInt8) -> UInt64 {
    (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
}

/// A hash of bytes eight at a time, with `foldingASCIICase` A-Z taken as a-z: for tables built and
/// searched in one run (the inventory's duplicate check, the renderer's dedup of a device's
/// strings: FNV-1a's multiply per byte showed in both). Not stable across versions: what is stored
/// with it may only miss when it changes (a manifest's input digests, `InputDigest`: a device
/// rendered again, never a wrong output carried). Empty bytes hash alike whether or not they have
/// an address.
@inlinable @inline(__always)
package func wordHash(_ bytes: ByteView, foldingASCIICase: Bool) -> UInt64 {
    @inline(__always) func lowered(_ w: UInt64) -> UInt64 { foldingASCIICase ? asciiLowerWord(w) : w }
    @inline(__always) func mix(_ h: UInt64, _ w: UInt64) -> UInt64 {
        let m = (h ^ w) &* 0xBF58_476D_1CE4_E5B9
        return m ^ m >> 31
    }
    var h = UInt64(bytes.count) &* 0x9E37_79B9_7F4A_7C15
    var i = 0
    while i + 8 <= bytes.count {
        h = mix(h, lowered(bytes.word(at: i)))
        i += 8
    }
    if i < bytes.count {
        var tail: UInt64 = 0
        if bytes.count >= 8 {
            // The last eight bytes, those already mixed shifted out: the same word as byte by byte.
            tail = bytes.word(at: bytes.count - 8) &>> UInt64(8 * (8 - (bytes.count - i)))
        } else {
            for k in i..<bytes.count { tail |= UInt64(bytes[k]) << UInt64(8 * (k - i)) }
        }
        h = mix(h, lowered(tail))
    }
    return h
}

/// `wordHash` with A-Z taken as a-z: the users' join keys, DNs, the inventory's device keys.
@inlinable
package func foldedWordHash(_ bytes: ByteView) -> UInt64 { wordHash(bytes, foldingASCIICase: true) }
