import AppConfigCore
import AppConfigOutput
import Digest

/// A worker's devices whose files (or, for DDM, plists) are made and wait for their digests: the
/// bytes one after another in one buffer, kept from batch to batch (no allocation once it has grown).
struct PendingFiles {
    /// What a device's file is written with (its key, place, entry in the previous manifest) and,
    /// for DDM, what its declarations are made with (its index fields and variant).
    struct Device {
        var key: ByteView
        var position: Int
        var previousEntry: Int32
        var indexFields: ByteView
        var variant: Int
    }

    private var bytes: [UInt8] = []
    private var ends: [Int] = []
    private var devices: [Device] = []
    private var digests: [SHA256Digest] = []

    var isFull: Bool { devices.count == SHA256.lanes }

    /// Adds a device whose file `file` appends.
    mutating func add(_ device: RenderedDevice, file: (inout [UInt8]) -> Void) {
        file(&bytes)
        ends.append(bytes.count)
        devices.append(Device(key: device.key, position: device.position, previousEntry: device.previousEntry,
                              indexFields: device.indexFields, variant: device.variant))
    }

    /// Digests the files waiting, hands each device with its digest and file to `body` in the
    /// order they came, and empties the batch.
    mutating func flush(inLanes: Bool = SHA256.hasLanes, _ body: (Device, SHA256Digest, ByteView) throws(Problem) -> Void) throws(Problem) {
        try flushAll(inLanes: inLanes) { devices, digests, file throws(Problem) in
            for i in devices.indices { try body(devices[i], digests[i], file(i)) }
        }
    }

    /// Digests the files waiting, hands them to `body` at once (the devices, their digests, and
    /// each one's file by its index there), and empties the batch.
    mutating func flushAll(inLanes: Bool = SHA256.hasLanes,
                           _ body: ([Device], [SHA256Digest], (Int) -> ByteView) throws(Problem) -> Void) throws(Problem) {
        guard !devices.isEmpty else { return }
        defer {
            bytes.removeAll(keepingCapacity: true)
            ends.removeAll(keepingCapacity: true)
            devices.removeAll(keepingCapacity: true)
            digests.removeAll(keepingCapacity: true)
        }
        bytes.withView { b in SHA256.digests(of: b, ends: ends, inLanes: inLanes) { _, d in digests.append(d) } }
        let stops = ends
        try bytes.withView { b throws(Problem) in
            try body(devices, digests) { i in b[view: (i == 0 ? 0 : stops[i - 1])..<stops[i]] }
        }
    }
}
