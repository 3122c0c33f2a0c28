/// Appends `bytes` with the bytes `needsEscape(byte, index)` selects written by `escape`, and the
/// runs between them appended whole (one copy each). Every device's name, quoted key and manifest
/// line goes through it: appended byte by byte they were a large share of a device's instructions.
@inlinable @inline(__always)
package func appendEscapingRuns(_ bytes: ByteView, to out: inout [UInt8], where needsEscape: (UInt8, Int) -> Bool,
                               escape: (UInt8, inout [UInt8]) -> Void) {
    var run = 0
    for (i, b) in bytes.enumerated() where needsEscape(b, i) {
        out.append(bytes[view: run..<i])
        escape(b, &out)
        run = i + 1
    }
    out.append(bytes[view: run...])
}

/// `%XX`, upper-case hex: how names and manifest keys write a byte they cannot hold.
@inlinable @inline(__always)
package func appendPercentEscaped(_ b: UInt8, to out: inout [UInt8]) {
    func digit(_ d: UInt8) -> UInt8 { d < 10 ? 0x30 + d : 0x37 + d }
    out.append(UInt8(ascii: "%"))
    out.append(digit(b >> 4))
    out.append(digit(b & 0xF))
}
