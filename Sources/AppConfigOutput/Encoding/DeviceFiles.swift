import AppConfigCore
import Digest

/// What an encoding writes one device's files through (`DeviceSink.add`): the container places
/// each (a folder at once, an archive as members in the chunk); shared files and lines are
/// records in the chunk for the writer.
/// Its methods are inlinable: called per device and asset by the encodings in Batch with closures
/// that, called across the module boundary, had their contexts copied each time (perf on a 1M DDM
/// run: swift_retain and swift_release from 3.8% to 11.7% of the samples).
public struct DeviceFiles {
    @usableFromInline package let container: any OutputContainer
    @usableFromInline package let filter: ChangeFilter?
    /// The container's, asked once: asked per device, each question retained and released it.
    @usableFromInline package let writesFiles: Bool
    /// The chunk's records (the worker's, for the call).
    @usableFromInline package var records: [UInt8] = []

    package init(container: any OutputContainer, filter: ChangeFilter?) {
        self.container = container
        self.filter = filter
        writesFiles = container.writesFiles
    }

    /// Whether the device's files are written: not in a dry run, nor under `--changed-only` when
    /// its digest is last night's.
    @inlinable
    public func writes(_ device: RenderedDevice, _ digest: SHA256Digest) -> Bool { writes(entry: device.previousEntry, digest) }

    /// Whether the files of a device whose entry in the previous manifest is `entry` are written.
    @inlinable
    public func writes(entry: Int32, _ digest: SHA256Digest) -> Bool {
        writesFiles && filter?.skips(entry: entry, digest) != true
    }

    /// A file of the device's own at the path `path` appends.
    @inlinable
    public mutating func file(path: (inout [UInt8]) -> Void, bytes: ByteView, secret: Bool = false) throws(Problem) {
        let container = container
        try ChunkRecord.appendUnlessEmpty(.members, into: &records) { out throws(Problem) in
            try container.add(bytes, path: path, once: false, secret: secret, members: &out)
        }
    }

    /// A content-addressed file (`key` names its content), stored once whoever brings it first,
    /// with its line of `declarations.jsonl` (written with it, once).
    @inlinable
    public mutating func shared(_ key: SHA256Digest, path: (inout [UInt8]) -> Void, bytes: ByteView, secret: Bool = false,
                                line: ((inout [UInt8]) -> Void)? = nil) throws(Problem) {
        let container = container
        try ChunkRecord.append(.shared, key: key, into: &records) { out throws(Problem) in
            // The members' length, the members (none from a container that placed the file), the line.
            let lengthAt = out.count
            out += [0, 0, 0, 0]
            try container.add(bytes, path: path, once: true, secret: secret, members: &out)
            ChunkRecord.patchLength(at: lengthAt, in: &out)
            line?(&out)
        }
    }

    /// A line of one of the encoding's line files.
    @inlinable
    public mutating func line(_ kind: LineKind, _ body: (inout [UInt8]) -> Void) {
        ChunkRecord.append(kind == .index ? .indexLine : .declarationLine, into: &records, body)
    }
}

/// The records of a chunk: kind, 32-byte key (shared files only), 4-byte length, bytes.
@usableFromInline package enum ChunkRecord: UInt8 {
    case members, shared, indexLine, declarationLine

    @inlinable
    package static func append<E: Error>(_ kind: ChunkRecord, key: SHA256Digest? = nil, into out: inout [UInt8], _ body: (inout [UInt8]) throws(E) -> Void) throws(E) {
        out.append(kind.rawValue)
        if let key { withUnsafeBytes(of: key) { out += $0 } }
        let lengthAt = out.count
        out += [0, 0, 0, 0]
        try body(&out)
        patchLength(at: lengthAt, in: &out)
    }

    /// A record `body` may leave empty (a folder placed the file itself): then none is kept.
    @inlinable
    package static func appendUnlessEmpty(_ kind: ChunkRecord, into out: inout [UInt8], _ body: (inout [UInt8]) throws(Problem) -> Void) throws(Problem) {
        let start = out.count
        try append(kind, into: &out, body)
        if out.count == start + 5 { out.removeLast(5) }
    }

    /// Writes the number of bytes after the 4-byte field at `lengthAt` into it.
    @inlinable
    package static func patchLength(at lengthAt: Int, in out: inout [UInt8]) {
        let n = UInt32(out.count - lengthAt - 4)
        withUnsafeBytes(of: n) { for i in 0..<4 { out[lengthAt + i] = $0[i] } }
    }

    package static func forEach(in b: ByteView, _ body: (ChunkRecord, SHA256Digest?, ByteView) -> Void) {
        var i = 0
        while i < b.count {
            let kind = ChunkRecord(rawValue: b[i])!
            i += 1
            var key: SHA256Digest?
            if kind == .shared {
                key = SHA256Digest(storedBytes: b[view: i..<(i + MemoryLayout<SHA256Digest>.size)])
                i += MemoryLayout<SHA256Digest>.size
            }
            let n = Int(b.loadUnaligned(fromByteOffset: i, as: UInt32.self))
            i += 4
            body(kind, key, b[view: i..<(i + n)])
            i += n
        }
    }
}
