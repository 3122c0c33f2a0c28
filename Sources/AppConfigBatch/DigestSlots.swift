import AppConfigCore
import AppConfigCompiler
import AppConfigRender
import AppConfigSources
import Digest
import Dispatch
import Foundation
import Synchronization

/// One digest slot per device position, written by the workers at disjoint positions (each chunk
/// belongs to one worker), read after they are joined: by position, the digest, nil where none was
/// set (a device that failed). Kept as it is for the publish: made into an array of optionals it
/// was 40 bytes a device more, made while these 33 were still held.
package final class DigestSlots: RandomAccessCollection, @unchecked Sendable {
    private let arena = BufferArena()
    private let slots: WorkerSlots<SHA256Digest>
    private let present: WorkerSlots<Bool>
    package let count: Int

    init(count: Int) {
        self.count = count
        slots = arena.slots(count: count, repeating: SHA256Digest(a: 0, b: 0, c: 0, d: 0))
        present = arena.slots(count: count, repeating: false)
    }

    @inline(__always)
    func set(_ position: Int, _ digest: SHA256Digest) {
        slots[position] = digest
        present[position] = true
    }

    /// The digest set at `position` (one that is known to be set: an asset's).
    func digest(at position: Int) -> SHA256Digest { slots[position] }

    package var startIndex: Int { 0 }
    package var endIndex: Int { count }
    package subscript(position: Int) -> SHA256Digest? { present[position] ? slots[position] : nil }
}
