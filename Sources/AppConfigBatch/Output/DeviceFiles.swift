import AppConfigCore
import Digest

/// What an encoding writes one device's files through (`DeviceSink.add`): files are placed at once
/// in a folder, or become members in the chunk for an archive; shared files and lines are records
/// in the chunk for the writer.
struct DeviceFiles {
    let container: OutputContainer
    let filter: ChangeFilter?
    /// The container's, asked once: asked per device, each question retained and released it.
    let isArchive: Bool, writesFiles: Bool
    /// The chunk's records (the worker's, for the call).
    var records: [UInt8] = []

    init(container: OutputContainer, filter: ChangeFilter?) {
        self.container = container
        self.filter = filter
        isArchive = container.isArchive
        writesFiles = container.writesFiles
    }

    /// Whether the device's files are written: not in a dry run, nor under `--changed-only` when
    /// its digest is last night's.
    func writes(_ device: RenderedDevice, _ digest: SHA256Digest) -> Bool { writes(entry: device.previousEntry, digest) }

    /// Whether the files of a device whose entry in the previous manifest is `entry` are written.
    func writes(entry: Int32, _ digest: SHA256Digest) -> Bool {
        writesFiles && filter?.skips(entry: entry, digest) != true
    }

    /// A file of the device's own at the path `path` appends.
    mutating func file(path: (inout [UInt8]) -> Void, bytes: ByteView, secret: Bool = false) throws(Problem) {
        if isArchive {
            ChunkRecord.append(.members, into: &records) { out in
                Tar.appendMember(to: &out, path: path, body: { $0.append(bytes) }, mode: secret ? Tar.secretMode : nil)
            }
        } else {
            try container.place(bytes, at: Self.text(path), once: false, secret: secret)
        }
    }

    /// A content-addressed file (`key` names its content), stored once whoever brings it first,
    /// with its line of `declarations.jsonl` (written with it, once).
    mutating func shared(_ key: SHA256Digest, path: (inout [UInt8]) -> Void, bytes: ByteView, secret: Bool = false,
                         line: ((inout [UInt8]) -> Void)? = nil) throws(Problem) {
        if !isArchive { try container.place(bytes, at: Self.text(path), once: true, secret: secret) }
        let archive = isArchive
        ChunkRecord.append(.shared, key: key, into: &records) { out in
            // The members' length, the members (none in a folder: written already), the line.
            let lengthAt = out.count
            out += [0, 0, 0, 0]
            if archive { Tar.appendMember(to: &out, path: path, body: { $0.append(bytes) }, mode: secret ? Tar.secretMode : nil) }
            ChunkRecord.patchLength(at: lengthAt, in: &out)
            line?(&out)
        }
    }

    /// A line of one of the encoding's line files.
    mutating func line(_ kind: LineKind, _ body: (inout [UInt8]) -> Void) {
        ChunkRecord.append(kind == .index ? .indexLine : .declarationLine, into: &records, body)
    }

    private static func text(_ path: (inout [UInt8]) -> Void) -> String {
        var bytes: [UInt8] = []
        path(&bytes)
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// The records of a chunk: kind, 32-byte key (shared files only), 4-byte length, bytes.
enum ChunkRecord: UInt8 {
    case members, shared, indexLine, declarationLine

    static func append(_ kind: ChunkRecord, key: SHA256Digest? = nil, into out: inout [UInt8], _ body: (inout [UInt8]) -> Void) {
        out.append(kind.rawValue)
        if let key { withUnsafeBytes(of: key) { out += $0 } }
        let lengthAt = out.count
        out += [0, 0, 0, 0]
        body(&out)
        patchLength(at: lengthAt, in: &out)
    }

    /// Writes the number of bytes after the 4-byte field at `lengthAt` into it.
    static func patchLength(at lengthAt: Int, in out: inout [UInt8]) {
        let n = UInt32(out.count - lengthAt - 4)
        withUnsafeBytes(of: n) { for i in 0..<4 { out[lengthAt + i] = $0[i] } }
    }

    static func forEach(in b: ByteView, _ body: (ChunkRecord, SHA256Digest?, ByteView) -> Void) {
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
