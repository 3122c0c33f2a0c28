import AppConfigCore
import AppConfigSpec
import Digest
import Foundation

extension DDMSink {
    // MARK: Chunk records: kind, 32-byte digest (assets only), 4-byte length, bytes.

    static func record(_ kind: Record, _ key: SHA256Digest?, into out: inout [UInt8], _ body: (inout [UInt8]) -> Void) {
        out.append(kind.rawValue)
        if let key { withUnsafeBytes(of: key) { out += $0 } }
        let lengthAt = out.count
        out += [0, 0, 0, 0]
        body(&out)
        patchLength(at: lengthAt, in: &out)
    }

    /// Writes the bytes after the 4-byte field at `lengthAt` as its value.
    static func patchLength(at lengthAt: Int, in out: inout [UInt8]) {
        let n = UInt32(out.count - lengthAt - 4)
        withUnsafeBytes(of: n) { for i in 0..<4 { out[lengthAt + i] = $0[i] } }
    }

    static func forEachRecord(_ records: [UInt8], _ body: (Record, SHA256Digest?, UnsafeRawBufferPointer) -> Void) {
        records.withUnsafeBytes { b in
            var i = 0
            while i < b.count {
                let kind = Record(rawValue: b[i])!
                i += 1
                var key: SHA256Digest?
                if kind == .asset {
                    key = b.loadUnaligned(fromByteOffset: i, as: SHA256Digest.self)
                    i += MemoryLayout<SHA256Digest>.size
                }
                let n = Int(b.loadUnaligned(fromByteOffset: i, as: UInt32.self))
                i += 4
                body(kind, key, UnsafeRawBufferPointer(rebasing: b[i..<(i + n)]))
                i += n
            }
        }
    }
}
