import AppConfigCore
import AppConfigOutput
import AppConfigCompiler
import AppConfigRender
import AppConfigSources
import Digest
import Dispatch
import Foundation
import Synchronization

/// One digest slot per device position, written by the workers at disjoint positions (each chunk
/// belongs to one worker), read after they are joined: by position, the digest, nil where none was
/// set (a device that failed), and the device's path name (`OutputNames.PathName`, made once for
/// its file, its index and manifest lines). Kept as it is for the publish: made into an array of
/// optionals it was 40 bytes a device more, made while these 34 were still held.
package final class DigestSlots: RandomAccessCollection, @unchecked Sendable {
    private let arena = BufferArena()
    private let slots: WorkerSlots<SHA256Digest>
    /// `PathName.bits`; `unnamed` where a digest was set without it, 0 where none was set.
    private let names: WorkerSlots<UInt16>
    private static let unnamed: UInt16 = 0x2000
    package let count: Int

    init(count: Int) {
        self.count = count
        slots = arena.slots(count: count, repeating: SHA256Digest(a: 0, b: 0, c: 0, d: 0))
        names = arena.slots(count: count, repeating: 0)
    }

    @inline(__always)
    func set(_ position: Int, _ digest: SHA256Digest, name: OutputNames.PathName? = nil) {
        slots[position] = digest
        names[position] = name?.bits ?? Self.unnamed
    }

    /// The digest set at `position` (one that is known to be set: an asset's).
    func digest(at position: Int) -> SHA256Digest { slots[position] }

    /// The path name of the device whose digest was set at `position`, when it was set with it.
    @inline(__always)
    func name(at position: Int) -> OutputNames.PathName? { OutputNames.PathName(bits: names[position]) }

    package var startIndex: Int { 0 }
    package var endIndex: Int { count }
    package subscript(position: Int) -> SHA256Digest? { names[position] != 0 ? slots[position] : nil }
}
