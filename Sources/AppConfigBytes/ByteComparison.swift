#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A-Z as a-z, every other byte as it is: how directories and inventories fold names.
@inlinable @inline(__always)
public func asciiLower(_ b: UInt8) -> UInt8 { b >= 0x41 && b <= 0x5A ? b | 0x20 : b }

/// Byte equality; `foldingASCIICase` compares A-Z as a-z.
@inlinable @inline(__always)
public func bytesEqual(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>, foldingASCIICase: Bool = false) -> Bool {
    guard a.count == b.count else { return false }
    if !foldingASCIICase {
        guard let pa = a.baseAddress, let pb = b.baseAddress else { return a.count == 0 }
        return memcmp(pa, pb, a.count) == 0
    }
    for i in 0..<a.count where asciiLower(a[i]) != asciiLower(b[i]) { return false }
    return true
}

/// Byte-wise order (memcmp, then length): how device keys sort in archives, indexes and manifests.
@inlinable @inline(__always)
public func bytesPrecede(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
    let n = min(a.count, b.count)
    if n > 0, let pa = a.baseAddress, let pb = b.baseAddress {
        let c = memcmp(pa, pb, n)
        if c != 0 { return c < 0 }
    }
    return a.count < b.count
}
