import AppConfigCore
import AppConfigOutput
import Digest

/// Where rendered devices go: a container (folder generation, tar file or stream, nothing for a
/// dry run) and a delivery's encoding, joined. The batch renderer hands each device over from the
/// worker thread that rendered it, chunk by chunk: the encoding makes its digest and files, files
/// are placed at once (a folder) or appended to the chunk as archive members, and content-addressed
/// files and lines go into the chunk as records. A writer thread takes the chunks in key order
/// (`OrderedChunks`): members are written, a shared file only the first time it comes, lines to
/// their line files. The job then publishes the whole with the generation's closing files (the
/// index, then the manifest that marks it complete), or discards it.
package final class DeviceSink: @unchecked Sendable {
    let container: any OutputContainer
    let encoding: any DeviceEncoding
    /// `--changed-only`: devices whose output is unchanged are not written.
    private let filter: ChangeFilter?
    /// The manifest a `--changed-only` filter compares with: `RenderedDevice.previousEntry` is in it.
    package let changedOnlyManifest: Manifest?
    /// The encoding's line files, by `LineKind` (nil: not written by this encoding).
    private let lines: [LineFile?]
    /// Chunks written in key order by a writer thread, with what was written.
    private let order: OrderedChunks<WriterState>
    /// The line files were closed (by `publish`).
    private var published = false

    struct WriterState: Sendable {
        /// The content-addressed files written (each comes once), by the first 128 bits of the
        /// SHA-256 that names each (`SHA256Digest.firstHalf`): half the memory of whole digests
        /// (a quarter of a gigabyte at 10M DDM devices), and two of 10M files whose names differ
        /// agree there with a chance below 1e-24.
        var seen: Set<UInt128>
        /// Per shared file taken, in order, whether it was the first of its content, where an
        /// encoding makes its lines at the close (`DeclarationRecords.markFirstOfAsset`: the line of
        /// each shared file goes with the device that brought it first); nil where none does.
        var firstShared: [Bool]?
        /// A chunk's lines for each line file, as views of its records (written from there with
        /// `writev`: copied into a buffer per file first, they were the writer's largest cost);
        /// the lists kept from chunk to chunk.
        var lines: [[ByteView]] = LineKind.allCases.map { _ in [] }
        init(devices: Int, marksFirstShared: Bool) {
            seen = Set(minimumCapacity: devices)
            if marksFirstShared { firstShared = [] }
        }
    }

    /// `previous`: the manifest a night compares with, whose unchanged devices are not written
    /// when `changedOnly`.
    init(container: any OutputContainer, encoding: any DeviceEncoding, previous: Manifest? = nil, changedOnly: Bool = false,
         devices: Int = 0) throws(Problem) {
        self.container = container
        self.encoding = encoding
        precondition(encoding.batching == .none || !encoding.holdsSecrets, "a batch's files are not cleared")
        filter = previous.map { ChangeFilter(previous: $0, skipsUnchanged: changedOnly) }
        changedOnlyManifest = changedOnly ? previous : nil
        var lines = [LineFile?](repeating: nil, count: LineKind.allCases.count)
        do {
            for kind in encoding.lineFiles { lines[Int(kind.rawValue)] = try container.lineFile(kind.fileName) }
            if container.writesFiles {
                let opening = encoding.opening
                for (kind, line) in opening.lines { try lines[Int(kind.rawValue)]?.append(line) }
                var members: [UInt8] = []
                for file in opening.files {
                    try file.bytes.withView { b throws(Problem) in
                        try container.add(b, path: { $0 += file.path.utf8 }, once: false, secret: false, members: &members)
                    }
                }
                if !members.isEmpty { try members.withView { m throws(Problem) in try container.writeMembers([m]) } }
            }
        } catch {
            for line in lines { try? line?.close() }
            container.discard()
            throw error
        }
        self.lines = lines
        let marksFirstShared = (encoding as? DDMEncoding)?.records != nil
        order = Self.writer(container, lines, state: WriterState(devices: devices, marksFirstShared: marksFirstShared), clearsChunks: encoding.holdsSecrets)
    }

    /// The ending of a device's own file: its path in the generation is
    /// `OutputNames.appendRelativePath(key, extension:)`.
    package var pathExtension: StaticString { encoding.pathExtension }

    /// Whether `addRemoved` writes a file of its own at the device's path: `changes.jsonl` then names it.
    package var writesRemovalFiles: Bool { encoding.writesRemovalFiles }

    /// Takes one rendered device and sets the SHA-256 of the output that stands for it in
    /// `digests` at its position: at once, or where the sink batches (`DeviceEncoding.batching`) when its batch
    /// is full or its chunk finishes. A device the change filter finds unchanged is not written (`--changed-only`).
    package func add(_ device: RenderedDevice, to chunk: inout ChunkBuffers, digests: DigestSlots) throws(Problem) {
        let encoding = encoding
        switch encoding.batching {
        case .files: chunk.pending.add(device) { encoding.appendFile(of: device, to: &$0) }
        case .plists: chunk.pending.add(device) { $0.append(device.plist) }
        case .none:
            var files = DeviceFiles(container: container, filter: filter)
            swap(&files.records, &chunk.records)
            defer { swap(&files.records, &chunk.records) }
            digests.set(device.position, try encoding.encode(device, scratch: &chunk.scratch, files: &files))
            return
        }
        if chunk.pending.isFull { try writePending(&chunk, digests: digests) }
    }

    /// Chunk `index` is complete: its devices waiting for digests are digested and written, and the
    /// writer takes its records (leaving them empty for reuse).
    package func finish(chunk index: Int, _ chunk: inout ChunkBuffers, digests: DigestSlots) throws(Problem) {
        try writePending(&chunk, digests: digests)
        try order.finish(index, &chunk.records)
    }

    /// The chunk's waiting bytes digested together; in the order they came, each device's file
    /// written unless its digest leaves it out (or its plist encoded, for DDM), its digest set.
    private func writePending(_ chunk: inout ChunkBuffers, digests: DigestSlots) throws(Problem) {
        var files = DeviceFiles(container: container, filter: filter)
        swap(&files.records, &chunk.records)
        defer { swap(&files.records, &chunk.records) }
        let encoding = encoding, ending = encoding.pathExtension
        switch encoding.batching {
        case .files:
            try chunk.pending.flush { device, digest, bytes throws(Problem) in
                let name = OutputNames.PathName(key: device.key)
                digests.set(device.position, digest, name: name)
                if files.writes(entry: device.previousEntry, digest) {
                    try files.file(path: { OutputNames.appendRelativePath(device.key, name: name, extension: ending, to: &$0) }, bytes: bytes)
                }
            }
        case .plists:
            try chunk.pending.flushAll { devices, plistDigests, plist throws(Problem) in
                let rendered = devices.indices.map { i in
                    var r = RenderedDevice(key: devices[i].key, plist: plist(i), indexFields: devices[i].indexFields, position: devices[i].position)
                    r.variant = devices[i].variant
                    r.previousEntry = devices[i].previousEntry
                    return r
                }
                try encoding.encode(rendered, plistDigests: plistDigests, scratch: &chunk.scratch, files: &files) { i, digest in
                    digests.set(rendered[i].position, digest)
                }
            }
        case .none: return  // nothing waits without batching
        }
    }

    /// Every chunk is handed over: returns when they are written, with the first write error.
    package func closeChunks() throws(Problem) { try order.close() }

    /// A worker failed: chunks not yet written are dropped, workers waiting in `finish` return.
    package func abandonChunks() { order.abandon() }

    /// A device gone since the previous generation (`--remove-missing`): what removes its
    /// configuration, where the delivery has it (an MDM removal command, an empty DDM set).
    package func addRemoved(key: ByteView) throws(Problem) {
        guard container.writesFiles else { return }
        let removal = encoding.removal(of: key)
        if let file = removal.file {
            let ending = encoding.pathExtension
            var member: [UInt8] = []
            try file.withView { bytes throws(Problem) in
                try container.add(bytes, path: { OutputNames.appendRelativePath(key, extension: ending, to: &$0) }, once: false, secret: false, members: &member)
            }
            if !member.isEmpty { try member.withView { m throws(Problem) in try container.writeMembers([m]) } }
        }
        if let line = removal.indexLine { try lines[Int(LineKind.index.rawValue)]?.append(line) }
    }

    /// Every device is rendered and the run may be published: the line files, then the closing
    /// files (the manifest last); the output made visible whole. Returns where it is.
    package func publish(closing files: [ClosingFile]) throws(Problem) -> String {
        try order.close()
        published = true
        return try container.publish(lines: encoding.lineFiles.compactMap { lines[Int($0.rawValue)] }, closing: files)
    }

    /// The run is not published (an interrupt, too many failures, an error): removes what was written.
    package func discard() {
        order.abandon()
        if !published { for line in lines { try? line?.close() } }
        container.discard()
    }

    /// Once every chunk is written: the content-addressed files written tonight, for a container
    /// that carries the others from the previous generation (empty for any other). The
    /// writer's own record of them goes: at 10M DDM devices it was half a gigabyte held through
    /// the publish, beside the live assets.
    func takeSharedWritten() throws(Problem) -> Set<UInt128> {
        try order.close()
        let taken = try order.withState { state in
            var taken = Set<UInt128>()
            swap(&taken, &state.seen)
            return taken
        }
        return container.carriesFilesForward ? taken : []
    }

    /// Once every chunk is written: per shared file the writer took, in order, whether it was the
    /// first of its content (`WriterState.firstShared`).
    func takeFirstShared() throws(Problem) -> [Bool] {
        try order.close()
        return try order.withState { state in
            let taken = state.firstShared ?? []
            if state.firstShared != nil { state.firstShared = [] }
            return taken
        }
    }

    /// The shared files the generation's live devices name that tonight did not write
    /// (`written`: `takeSharedWritten()`), carried from `previous` by a container that can (a
    /// folder hard-links them: the same file). Returns how many it could not (no previous
    /// generation, or not there); 0 for a container that holds only what tonight wrote.
    func carry(_ live: any LiveFiles, written: Set<UInt128>, from previous: PublishedGeneration?) throws(Problem) -> Int {
        guard container.carriesFilesForward else { return 0 }
        var notCarried = 0
        try live.forEach { relative, key, secret throws(Problem) in
            if written.contains(key) { return }
            guard let previous, try container.carry(relative, from: previous, secret: secret) else {
                notCarried += 1
                return
            }
        }
        return notCarried
    }

    /// What the writer thread does with each chunk in turn: members go to the archive (a shared
    /// file's the first time it comes), lines to their files.
    private static func writer(_ container: OutputContainer, _ files: [LineFile?], state: WriterState, clearsChunks: Bool) -> OrderedChunks<WriterState> {
        OrderedChunks(state, clearsChunks: clearsChunks) { state, records throws(Problem) in
            guard !records.isEmpty else { return }
            let failure: Problem? = records.withView { bytes in
                // The views go with the records: none is kept past the chunk.
                defer { for k in state.lines.indices { state.lines[k].removeAll(keepingCapacity: true) } }
                var pieces: [ByteView] = []
                ChunkRecord.forEach(in: bytes) { kind, key, body in
                    switch kind {
                    case .members: pieces.append(body)
                    case .shared:
                        let first = state.seen.insert(key!.firstHalf).inserted
                        state.firstShared?.append(first)
                        guard first else { return }
                        let n = Int(body.loadUnaligned(fromByteOffset: 0, as: UInt32.self))
                        pieces.append(body[view: 4..<(4 + n)])
                        state.lines[Int(LineKind.declarations.rawValue)].append(body[view: (4 + n)...])
                    case .indexLine: state.lines[Int(LineKind.index.rawValue)].append(body)
                    case .declarationLine: state.lines[Int(LineKind.declarations.rawValue)].append(body)
                    }
                }
                do throws(Problem) {
                    try container.writeMembers(pieces)
                    for (k, file) in files.enumerated() { try file?.append(state.lines[k]) }
                } catch { return error }
                return nil
            }
            if let failure { throw failure }
        }
    }
}

/// A worker's buffers: the records of the chunk it renders, scratch for an encoding, the files
/// waiting for their digests.
package struct ChunkBuffers {
    var records: [UInt8] = []
    var scratch: [UInt8] = []
    var pending = PendingFiles()
    package init() {}
}

