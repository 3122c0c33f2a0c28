import AppConfigCore
import AppConfigSpec
import Digest
import Foundation

/// `--delivery ddm`: for every device its data assets (`assets/<sha256>.plist`: the app's
/// configuration, and each extension's), its AppManaged configuration and activation, and its
/// declaration set. Layout `jsonl` (the default): every declaration once as a line of
/// `declarations.jsonl`, the sets as lines of `index.jsonl`; layout `files`: a file per declaration
/// (`declarations/<Identifier>.json`) and per set (at the device's folder path, `.json`), the sets
/// in `index.jsonl` too. Shared assets and their declarations are stored once. Into a generation
/// folder (published by the same symlink switch as plists) or a tar (the same temporary name and
/// rename). Devices come in key order and chunks are finished in order, so the files are the
/// same bytes on every run.
public final class DDMSink: OutputSink, @unchecked Sendable {
    private enum Container {
        case folder(FolderSink)
        case tar(AtomicFile?, descriptor: Int32, name: String)
    }

    private let container: Container
    private let builder: DeclarationBuilder
    private let layout: DDMLayout
    /// `--changed-only`: devices whose declarations are unchanged are not written.
    private let filter: ChangeFilter?
    /// Where the lines of `index.jsonl` and `declarations.jsonl` go as chunks are written: the
    /// generation's files, or for a tar unlinked temporary files copied in at the end.
    private let index: Int32
    private let declarations: Int32?
    /// Chunks written in order by a writer thread, with what is written so far.
    private let order: OrderedChunks<WriterState>
    /// By position in key order: each device's assets (the app's, then each extension's), for the
    /// manifest and `assets.live`.
    let assetsByPosition: [DigestSlots]
    /// By position: each device's credential documents (nil without credentials). Written by the
    /// worker of the device's chunk.
    let credentialAssets: AssetNameSlots?
    /// `index` and `declarations` were closed (by `publish`): `discard` must not close them again.
    private var descriptorsClosed = false

    struct WriterState: Sendable {
        /// The assets written (their files and declarations come once).
        var seen: Set<SHA256Digest>
        var indexBytes = 0
        var declarationBytes = 0
        /// A chunk's bytes for each destination, kept from chunk to chunk (fresh buffers were fresh
        /// pages to fault in and clear, a megabyte a chunk).
        var members: [UInt8] = []
        var lines: [UInt8] = []
        var declarationLines: [UInt8] = []

        init(devices: Int) {
            seen = Set(minimumCapacity: devices)
        }
    }

    /// Record kinds in a chunk: an asset (the members of its file and declaration, and its
    /// declarations.jsonl line, all written only the first time its data's digest comes), a
    /// device's own members (a tar in the files layout), declarations.jsonl lines, an index line.
    enum Record: UInt8 { case asset, members, declarations, index }

    public var wantsKeyOrder: Bool { true }

    /// The credentials' identifiers and kinds: per variant the app's, and each extension's.
    public typealias CredentialKinds = (app: [[(identifier: String, kind: Credential.Kind)]], extensions: [[(identifier: String, kind: Credential.Kind)]])

    /// Into a generation folder beside `path`.
    public init(folder path: String, keep: Int, delivery: ResolvedDelivery, devices: Int = 0, filter: ChangeFilter? = nil,
                credentials: CredentialKinds = ([[]], [])) throws(Problem) {
        let folder = try FolderSink(path: path, keep: keep)
        self.filter = filter
        layout = delivery.layout
        do {
            index = try folder.createAppending("index.jsonl")
            declarations = layout == .jsonl ? try folder.createAppending("declarations.jsonl") : nil
        } catch {
            folder.discard()
            throw error
        }
        container = .folder(folder)
        builder = DeclarationBuilder(delivery: delivery, credentials: credentials.app, extensionCredentials: credentials.extensions)
        assetsByPosition = (0...delivery.extensions.count).map { _ in DigestSlots(count: devices) }
        credentialAssets = AssetNameSlots.forCredentials(credentials, devices: devices)
        order = Self.writer(for: container, index: index, declarations: declarations, devices: devices,
                            clearsChunks: (credentials.app + credentials.extensions).joined().isEmpty == false)
    }

    /// Into a tar archive at `path`, or streamed to `descriptor` when `path` is nil. The index and
    /// the declarations are gathered in unlinked temporary files beside it (made exclusively, with
    /// random names) and appended as the last members.
    public init(tar path: String?, descriptor stream: Int32 = 1, delivery: ResolvedDelivery, devices: Int = 0, filter: ChangeFilter? = nil,
                credentials: CredentialKinds = ([[]], [])) throws(Problem) {
        self.filter = filter
        layout = delivery.layout
        if let path { AtomicFile.removeStale(beside: path) }
        let file = try path.map { p throws(Problem) in try AtomicFile(path: p) }
        // Beside the archive, or in the temporary folder for a stream.
        let folder = path.map { PathText.folder(of: $0) } ?? FileManager.default.temporaryDirectory.path
        do {
            index = try Self.scratchFile(in: folder.isEmpty ? "." : folder)
            declarations = layout == .jsonl ? try Self.scratchFile(in: folder.isEmpty ? "." : folder) : nil
        } catch {
            file?.discard()
            throw error
        }
        container = .tar(file, descriptor: file?.descriptor ?? stream, name: path ?? "-")
        builder = DeclarationBuilder(delivery: delivery, credentials: credentials.app, extensionCredentials: credentials.extensions)
        assetsByPosition = (0...delivery.extensions.count).map { _ in DigestSlots(count: devices) }
        credentialAssets = AssetNameSlots.forCredentials(credentials, devices: devices)
        order = Self.writer(for: container, index: index, declarations: declarations, devices: devices,
                            clearsChunks: (credentials.app + credentials.extensions).joined().isEmpty == false)
    }

    /// An unlinked temporary file in `folder`: `mkstemp` makes it with O_EXCL and a random name,
    /// so nothing planted under a predictable name is opened.
    static func scratchFile(in folder: String) throws(Problem) -> Int32 {
        var template = Array((folder + "/.appconfig-scratch-XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else { throw Problem(.outputWrite, at: Location(file: folder), "cannot create a temporary file in \(folder): \(systemError())") }
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        return fd
    }

    public var pathExtension: StaticString { ".json" }

    public func add(key: UnsafeBufferPointer<UInt8>, plist: UnsafeRawBufferPointer, to chunk: inout [UInt8]) throws(Problem) -> SHA256Digest {
        try add(RenderedDevice(key: key, plist: plist), to: &chunk)
    }

    /// The device's digest is its declarations' (`DeviceDeclarations.digest`).
    public func add(_ device: RenderedDevice, to chunk: inout [UInt8]) throws(Problem) -> SHA256Digest {
        let d = builder.build(key: device.key, plist: device.plist, extensions: device.extensions, credentials: device.credentials, variant: device.variant)
        for (i, slots) in assetsByPosition.enumerated() where device.position < slots.count { slots.set(device.position, d.assets[i].data) }
        if let credentialAssets, device.position < credentialAssets.positions {
            for (k, a) in d.assets.dropFirst(assetsByPosition.count).enumerated() { credentialAssets.set(device.position, k, AssetName(a)) }
        }
        /// Asset `i`'s bytes: the app's plist, an extension's, a credential document.
        func withData<R>(_ i: Int, _ body: (UnsafeRawBufferPointer) -> R) -> R {
            if i == 0 { return body(device.plist) }
            if i <= device.extensions.count { return body(device.extensions[i - 1]) }
            return device.credentials[i - 1 - device.extensions.count].document.withUnsafeBytes(body)
        }
        if filter?.skips(device.key, d.digest) == true { return d.digest }
        let files = layout == .files
        switch container {
        case .folder(let folder):
            for (i, a) in d.assets.enumerated() {
                let failure: Problem? = withData(i) { b in
                    do throws(Problem) { try folder.write(b, to: DeclarationBuilder.assetPath(a), once: true, secret: a.credential?.secret == true) } catch { return error }
                    return nil
                }
                if let failure { throw failure }
                // No members (the file is written): its declarations.jsonl line, the first time it
                // comes (and in any layout, the writer's note that it is in this generation).
                Self.record(.asset, a.data, into: &chunk) { out in
                    out += [0, 0, 0, 0]
                    if !files { builder.appendAssetDeclaration(a, to: &out) }
                }
            }
            if files {
                var text: [UInt8] = []
                for a in d.assets {
                    builder.appendAssetDeclaration(a, to: &text)
                    try folder.write(text, to: DeclarationBuilder.declarationPath(of: a), once: true)
                    text.removeAll(keepingCapacity: true)
                }
                builder.appendConfiguration(d, to: &text)
                try folder.write(text, to: DeclarationBuilder.declarationPath(DeclarationBuilder.configurationPrefix, d.identity))
                text.removeAll(keepingCapacity: true)
                builder.appendActivation(d, to: &text)
                try folder.write(text, to: DeclarationBuilder.declarationPath(DeclarationBuilder.activationPrefix, d.identity))
                text.removeAll(keepingCapacity: true)
                builder.appendSet(key: device.key, d, path: false, indexFields: UnsafeBufferPointer(start: nil, count: 0), to: &text)
                try folder.write(text, to: OutputNames.relativePath(device.key, extension: ".json"))
            } else {
                Self.record(.declarations, nil, into: &chunk) { out in
                    builder.appendConfiguration(d, to: &out)
                    builder.appendActivation(d, to: &out)
                }
            }
        case .tar:
            for (i, a) in d.assets.enumerated() {
                Self.record(.asset, a.data, into: &chunk) { out in
                    // The members' length, the members, then the declarations.jsonl line.
                    let lengthAt = out.count
                    out += [0, 0, 0, 0]
                    withData(i) { bytes in
                        Tar.appendMember(to: &out, path: { DeclarationBuilder.appendAssetPath(a, to: &$0) }, body: { $0.append(contentsOf: bytes) },
                                         mode: a.credential?.secret == true ? Tar.secretMode : nil)
                    }
                    if files {
                        var text: [UInt8] = []
                        builder.appendAssetDeclaration(a, to: &text)
                        text.withUnsafeBytes { Tar.appendMember(named: DeclarationBuilder.declarationPath(of: a), bytes: $0, to: &out) }
                    }
                    Self.patchLength(at: lengthAt, in: &out)
                    if !files { builder.appendAssetDeclaration(a, to: &out) }
                }
            }
            if files {
                Self.record(.members, nil, into: &chunk) { out in
                    var text: [UInt8] = []
                    builder.appendConfiguration(d, to: &text)
                    text.withUnsafeBytes { Tar.appendMember(named: DeclarationBuilder.declarationPath(DeclarationBuilder.configurationPrefix, d.identity), bytes: $0, to: &out) }
                    text.removeAll(keepingCapacity: true)
                    builder.appendActivation(d, to: &text)
                    text.withUnsafeBytes { Tar.appendMember(named: DeclarationBuilder.declarationPath(DeclarationBuilder.activationPrefix, d.identity), bytes: $0, to: &out) }
                    Tar.appendMember(to: &out, path: { OutputNames.appendRelativePath(device.key, extension: ".json", to: &$0) },
                                     body: { builder.appendSet(key: device.key, d, path: false, indexFields: UnsafeBufferPointer(start: nil, count: 0), to: &$0) })
                }
            } else {
                Self.record(.declarations, nil, into: &chunk) { out in
                    builder.appendConfiguration(d, to: &out)
                    builder.appendActivation(d, to: &out)
                }
            }
        }
        Self.record(.index, nil, into: &chunk) { builder.appendSet(key: device.key, d, path: files, indexFields: device.indexFields, to: &$0) }
        return d.digest
    }

    /// A device gone from the fleet (`--remove-missing`): its set is written empty.
    public var writesRemovalFiles: Bool { layout == .files }

    public func addRemoved(key: UnsafeBufferPointer<UInt8>) throws(Problem) {
        var line: [UInt8] = []
        DeclarationBuilder.appendEmptySet(key: key, path: layout == .files, to: &line)
        switch container {
        case .folder(let folder):
            if layout == .files {
                var set: [UInt8] = []
                DeclarationBuilder.appendEmptySet(key: key, path: false, to: &set)
                try folder.write(set, to: OutputNames.relativePath(key, extension: ".json"))
            }
            try writeAll(index, line, path: "index.jsonl")
        case .tar(_, let fd, let name):
            if layout == .files {
                var member: [UInt8] = []
                Tar.appendMember(to: &member, path: { OutputNames.appendRelativePath(key, extension: ".json", to: &$0) },
                                 body: { DeclarationBuilder.appendEmptySet(key: key, path: false, to: &$0) })
                try writeAll(fd, member, path: name)
            }
            try writeAll(index, line, path: name + " (index)")
            try order.withState { $0.indexBytes += line.count }
        }
    }

    public func finish(chunk index: Int, _ chunk: inout [UInt8]) throws(Problem) { try order.finish(index, &chunk) }
    public func closeChunks() throws(Problem) { try order.close() }
    public func abandonChunks() { order.abandon() }

    /// What the writer thread does with each chunk in turn: members go to the archive (an asset's
    /// the first time it comes), lines to the index and declarations.
    private static func writer(for container: Container, index: Int32, declarations: Int32?, devices: Int, clearsChunks: Bool) -> OrderedChunks<WriterState> {
        let archive: (fd: Int32, name: String)?
        let names: (index: String, declarations: String)
        switch container {
        case .folder(let folder):
            archive = nil
            names = (folder.generation + "/index.jsonl", folder.generation + "/declarations.jsonl")
        case .tar(_, let fd, let name):
            archive = (fd, name)
            names = (name + " (index)", name + " (declarations)")
        }
        return OrderedChunks(WriterState(devices: devices), clearsChunks: clearsChunks) { state, records throws(Problem) in
            if clearsChunks { state.members.withUnsafeMutableBufferPointer { $0.update(repeating: 0) } }
            state.members.removeAll(keepingCapacity: true)
            state.lines.removeAll(keepingCapacity: true)
            state.declarationLines.removeAll(keepingCapacity: true)
            forEachRecord(records) { kind, key, body in
                switch kind {
                case .asset:
                    guard state.seen.insert(key!).inserted else { return }
                    let n = Int(body.loadUnaligned(as: UInt32.self))
                    state.members.append(contentsOf: UnsafeRawBufferPointer(rebasing: body[4..<(4 + n)]))
                    state.declarationLines.append(contentsOf: UnsafeRawBufferPointer(rebasing: body[(4 + n)...]))
                case .members: state.members.append(contentsOf: body)
                case .declarations: state.declarationLines.append(contentsOf: body)
                case .index: state.lines.append(contentsOf: body)
                }
            }
            if let archive, !state.members.isEmpty { try writeAll(archive.fd, state.members, path: archive.name) }
            if let declarations, !state.declarationLines.isEmpty { try writeAll(declarations, state.declarationLines, path: names.declarations) }
            try writeAll(index, state.lines, path: names.index)
            state.indexBytes += state.lines.count
            state.declarationBytes += state.declarationLines.count
        }
    }

    /// The closing files but `index.jsonl` (this sink writes its own, with each device's set),
    /// then the archive's end or the folder's switch.
    public func publish(closing files: [ClosingFile]) throws(Problem) -> String {
        let closing = files.filter { $0.name != "index.jsonl" }
        try order.close()
        switch container {
        case .folder(let folder):
            descriptorsClosed = true
            for fd in [index] + (declarations.map { [$0] } ?? []) where close(fd) != 0 {
                throw Problem(.outputWrite, at: Location(file: folder.generation), "cannot write the index: \(systemError())")
            }
            return try folder.publish(closing: closing)
        case .tar(let file, let fd, let name):
            let (indexBytes, declarationBytes) = try order.withState { ($0.indexBytes, $0.declarationBytes) }
            if let declarations { try Self.appendMember("declarations.jsonl", from: declarations, size: declarationBytes, to: fd, name: name) }
            try Self.appendMember("index.jsonl", from: index, size: indexBytes, to: fd, name: name)
            descriptorsClosed = true
            close(index)
            if let declarations { close(declarations) }
            return try Tar.end(fd, name: name, closing: closing, file: file, copying: Manifest.fileName)
        }
    }

    public func discard() {
        order.abandon()
        if !descriptorsClosed {
            close(index)
            if let declarations { close(declarations) }
        }
        switch container {
        case .folder(let folder): folder.discard()
        case .tar(let file, _, _): file?.discard()
        }
    }

    /// A device's digest as this sink computes it, for a dry run.
    static func digest(_ delivery: ResolvedDelivery, credentials: CredentialKinds = ([[]], [])) -> DryRunSink.Digester {
        let builder = DeclarationBuilder(delivery: delivery, credentials: credentials.app, extensionCredentials: credentials.extensions)
        return { builder.build(key: $0.key, plist: $0.plist, extensions: $0.extensions, credentials: $0.credentials, variant: $0.variant).digest }
    }

    /// The manifest's path of the device at `position`: the assets its set names (what a server
    /// must keep serving while the device has this set), space-separated.
    func appendManifestPath(position: Int, to out: inout [UInt8]) {
        for (i, slots) in assetsByPosition.enumerated() {
            if i > 0 { out.append(UInt8(ascii: " ")) }
            out += "assets/".utf8
            slots[position].appendHex(to: &out)
            out += ".plist".utf8
        }
        credentialAssets?.forEach(position) { name in
            out.append(UInt8(ascii: " "))
            name.appendPath(to: &out)
        }
    }

    /// A folder generation: hard-links each live asset it did not write from `previousFolder`'s
    /// `assets/` (linked, not copied: the same file). Returns how many it could not (no previous
    /// folder, or not there); 0 for a tar, which holds what tonight wrote (`assets.live` lists all).
    func link(_ live: LiveAssets, from previousFolder: String?) throws(Problem) -> Int {
        guard case .folder(let folder) = container else { return 0 }
        try order.close()
        let written = try order.withState { $0.seen }
        var notLinked = 0
        func link(_ relative: String) throws(Problem) {
            guard let previousFolder, try folder.link(previousFolder + "/" + relative, to: relative, secret: relative.hasPrefix("secret-assets/")) else {
                notLinked += 1
                return
            }
        }
        for name in live.names where !written.contains(name.digest) {
            var path: [UInt8] = []
            name.appendPath(to: &path)
            try link(String(decoding: path, as: UTF8.self))
        }
        return notLinked
    }

    /// A member from a temporary file, copied into the archive by the kernel (`sendfile`;
    /// through a buffer where it cannot: a stream, another file system on an old kernel).
    private static func appendMember(_ member: String, from source: Int32, size: Int, to fd: Int32, name: String) throws(Problem) {
        try writeAll(fd, Tar.header(named: member, size: size), path: name)
        guard lseek(source, 0, SEEK_SET) == 0 else { throw Problem(.outputWrite, at: Location(file: name), "cannot read \(member) back: \(systemError())") }
        var left = size
        while left > 0 {
            let n = sendfile(fd, source, nil, left)
            if n > 0 { left -= n; continue }
            if n < 0 && errno == EINTR { continue }
            break
        }
        var buffer = [UInt8](repeating: 0, count: left > 0 ? 1 << 20 : 0)
        while left > 0 {
            let n = buffer.withUnsafeMutableBytes { read(source, $0.baseAddress, min($0.count, left)) }
            guard n > 0 else { throw Problem(.outputWrite, at: Location(file: name), "cannot read \(member) back: \(systemError())") }
            try writeAll(fd, n == buffer.count ? buffer : Array(buffer[0..<n]), path: name)
            left -= n
        }
        try writeAll(fd, [UInt8](repeating: 0, count: Tar.padding(for: size)), path: name)
    }
}
