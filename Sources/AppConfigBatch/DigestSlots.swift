import AppConfigCore
import AppConfigCompiler
import AppConfigRender
import AppConfigSources
import Digest
import Dispatch
import Foundation
import Synchronization

/// One digest slot per device position, written by the workers at disjoint positions (each chunk
/// belongs to one worker), read after they are joined.
final class DigestSlots: @unchecked Sendable {
    private let slots: UnsafeMutableBufferPointer<SHA256Digest>
    private let present: UnsafeMutableBufferPointer<Bool>
    let count: Int

    init(count: Int) {
        self.count = count
        slots = .allocate(capacity: max(count, 1))
        present = .allocate(capacity: max(count, 1))
        present.initialize(repeating: false)
        slots.initialize(repeating: SHA256Digest(a: 0, b: 0, c: 0, d: 0))
    }

    @inline(__always)
    func set(_ position: Int, _ digest: SHA256Digest) {
        slots[position] = digest
        present[position] = true
    }

    subscript(position: Int) -> SHA256Digest { slots[position] }

    func values() -> [SHA256Digest?] {
        (0..<count).map { present[$0] ? slots[$0] : nil }
    }

    deinit {
        slots.deallocate()
        present.deallocate()
    }
}
