import AppConfigCore
import AppConfigOutput
import AppConfigSpec
import Digest
import Foundation

/// `--delivery ddm`: for every device its data assets (`assets/<sha256>.plist`: the app's
/// configuration, and each extension's; its credential documents), its AppManaged configuration
/// and activation, and its declaration set. Layout `jsonl` (the default): every declaration once
/// as a line of `declarations.jsonl`, the sets as lines of `index.jsonl`; layout `files`: a file
/// per declaration (`declarations/<Identifier>.json`) and per set (at the device's folder path,
/// `.json`), the sets in `index.jsonl` too. Assets and their declarations are shared files, stored
/// once. Devices come in key order and chunks are written in order, so the files are the same
/// bytes on every run, in a folder or an archive.
final class DDMEncoding: DeviceEncoding, @unchecked Sendable {
    private let builder: DeclarationBuilder
    private let layout: DDMLayout
    /// By position in key order: each device's assets (the app's, then each extension's), for the
    /// manifest and `assets.live`.
    let assetsByPosition: [DigestSlots]
    /// By position: each device's credential documents (nil without credentials). Written by the
    /// worker of the device's chunk.
    let credentialAssets: AssetNameSlots?
    let holdsSecrets: Bool
    /// What each written device's lines are made from at the generation's close, when they are
    /// made there (`closesLines`): nil when they are written as devices come.
    let records: DeclarationRecords?

    /// The credentials' identifiers and kinds: per variant the app's, and each extension's.
    typealias CredentialKinds = (app: [[(identifier: String, kind: Credential.Kind)]], extensions: [[(identifier: String, kind: Credential.Kind)]])

    /// `closesLines`: `declarations.jsonl` and `index.jsonl` may be made at the generation's close
    /// (`DeclarationRecords`), for an output that writes a closing file as it is made (a folder, a
    /// tar file; not a stream, which holds a closing file whole first). They are, in the layout
    /// `jsonl`, for devices with the app's data asset alone.
    init(delivery: ResolvedDelivery, devices: Int = 0, credentials: CredentialKinds = ([[]], []), closesLines: Bool = false) {
        layout = delivery.layout
        builder = DeclarationBuilder(delivery: delivery, credentials: credentials.app, extensionCredentials: credentials.extensions)
        assetsByPosition = (0...delivery.extensions.count).map { _ in DigestSlots(count: devices) }
        credentialAssets = AssetNameSlots.forCredentials(credentials, devices: devices)
        holdsSecrets = !(credentials.app + credentials.extensions).joined().isEmpty
        let appAssetAlone = assetsByPosition.count == 1 && credentialAssets == nil && !holdsSecrets
        records = closesLines && layout == .jsonl && appAssetAlone && devices > 0 ? DeclarationRecords(count: devices) : nil
    }

    var pathExtension: StaticString { ".json" }
    var lineFiles: [LineKind] { layout == .files ? [.index] : records == nil ? [.declarations, .index] : [] }

    /// The status subscription, once: the first line of `declarations.jsonl` (made at the close
    /// with the rest when `records` are kept), or its file.
    var opening: (lines: [(LineKind, [UInt8])], files: [(path: String, bytes: [UInt8])]) {
        guard let s = builder.statusSubscription else { return ([], []) }
        if layout == .files { return ([], [(s.path, s.line)]) }
        return records == nil ? ([(.declarations, s.line)], []) : ([], [])
    }

    /// The sink may digest the devices' plists in batches only with the app's plist alone: no
    /// extension's and no credential (a secret is not held in a batch).
    var batching: DigestBatching { assetsByPosition.count == 1 && credentialAssets == nil && !holdsSecrets ? .plists : .none }

    func encode(_ device: RenderedDevice, scratch text: inout [UInt8], files: inout DeviceFiles) throws(Problem) -> SHA256Digest {
        try encode(device, plistDigest: nil, scratch: &text, files: &files)
    }

    /// The device's digest is its declarations' (`DeviceDeclarations.digest`). `plistDigest`: its
    /// plist's, when the sink digested it with others.
    func encode(_ device: RenderedDevice, plistDigest: SHA256Digest?, scratch text: inout [UInt8], files: inout DeviceFiles) throws(Problem) -> SHA256Digest {
        try encode(device, declarations: builder.build([device], plistDigests: [plistDigest], inLanes: false)[0], scratch: &text, files: &files)
    }

    /// Devices whose plists the sink digested together (`batching`): their declarations' names
    /// and tokens digested together too, then each device written by `encode(_:declarations:...)`.
    func encode(_ devices: [RenderedDevice], plistDigests: [SHA256Digest], scratch: inout [UInt8], files: inout DeviceFiles,
                digest: (Int, SHA256Digest) -> Void) throws(Problem) {
        for (i, d) in builder.build(devices, plistDigests: plistDigests).enumerated() {
            digest(i, try encode(devices[i], declarations: d, scratch: &scratch, files: &files))
        }
    }

    /// Writes the device's files and lines from its declarations `d`; returns its digest.
    func encode(_ device: RenderedDevice, declarations d: DeviceDeclarations, scratch text: inout [UInt8], files: inout DeviceFiles) throws(Problem) -> SHA256Digest {
        for (i, slots) in assetsByPosition.enumerated() where device.position < slots.count { slots.set(device.position, d.assets[i].data) }
        if let credentialAssets, device.position < credentialAssets.positions {
            for (k, a) in d.assets.dropFirst(assetsByPosition.count).enumerated() { credentialAssets.set(device.position, k, AssetName(a)) }
        }
        guard files.writes(device, d.digest) else { return d.digest }
        let separate = layout == .files
        // Lines made at the close: the asset's file goes now, its line (and the rest) then.
        let linesNow = !separate && records == nil
        records?.set(device.position, d)
        for (i, a) in d.assets.enumerated() {
            // Asset `i`'s bytes: the app's plist, an extension's, a credential document.
            let secret = a.credential?.secret == true
            func share(_ bytes: ByteView) throws(Problem) {
                try files.shared(a.data, path: { DeclarationBuilder.appendAssetPath(a, to: &$0) }, bytes: bytes, secret: secret,
                                 line: linesNow ? { self.builder.appendAssetDeclaration(a, to: &$0) } : nil)
            }
            if i == 0 {
                try share(device.plist)
            } else if i <= device.extensions.count {
                try share(device.extensions[i - 1])
            } else {
                try device.credentials[i - 1 - device.extensions.count].document.withView { b throws(Problem) in try share(b) }
            }
            if separate {
                text.removeAll(keepingCapacity: true)
                builder.appendAssetDeclaration(a, to: &text)
                try text.withView { b throws(Problem) in
                    try files.shared(a.name, path: { $0 += DeclarationBuilder.declarationPath(of: a).utf8 }, bytes: b)
                }
            }
        }
        if separate {
            func file(_ path: String, _ make: (inout [UInt8]) -> Void) throws(Problem) {
                text.removeAll(keepingCapacity: true)
                make(&text)
                try text.withView { b throws(Problem) in try files.file(path: { $0 += path.utf8 }, bytes: b) }
            }
            try file(DeclarationBuilder.declarationPath(DeclarationBuilder.configurationPrefix, d.identity)) { builder.appendConfiguration(d, to: &$0) }
            try file(DeclarationBuilder.declarationPath(DeclarationBuilder.activationPrefix, d.identity)) { builder.appendActivation(d, to: &$0) }
            text.removeAll(keepingCapacity: true)
            builder.appendSet(key: device.key, d, path: false, indexFields: .empty, to: &text)
            try text.withView { b throws(Problem) in
                try files.file(path: { OutputNames.appendRelativePath(device.key, extension: ".json", to: &$0) }, bytes: b)
            }
        } else if linesNow {
            files.line(.declarations) { out in
                builder.appendConfiguration(d, to: &out)
                builder.appendActivation(d, to: &out)
            }
        }
        if records == nil {
            files.line(.index) { builder.appendSet(key: device.key, d, path: separate, indexFields: device.indexFields, to: &$0) }
        }
        return d.digest
    }

    // MARK: Lines made at the close (`records`)

    /// The status subscription's line, which opens `declarations.jsonl`.
    var statusLine: [UInt8]? { builder.statusSubscription?.line }

    /// What the close makes the written devices' lines with (nil: they were written as devices
    /// came); one for each round of lines.
    var closingLines: ClosingLines? {
        records.map { ClosingLines(builder: builder, records: $0, assets: assetsByPosition[0]) }
    }

    /// Makes the lines of the devices written tonight from their `DeclarationRecords`: the same
    /// bytes `encode` would have written as they came. Taken once for a round of devices (its
    /// builder read per device through the encoding was copied and retained each time).
    struct ClosingLines {
        let builder: DeclarationBuilder
        let records: DeclarationRecords
        let assets: DigestSlots
        /// The declarations filled from a record for each device, with no allocation per device.
        private var d: DeviceDeclarations

        init(builder: DeclarationBuilder, records: DeclarationRecords, assets: DigestSlots) {
            (self.builder, self.records, self.assets) = (builder, records, assets)
            let none = SHA256Digest(a: 0, b: 0, c: 0, d: 0)
            d = DeviceDeclarations(assets: [.init(data: none, size: 0, name: none)], identity: none)
        }

        /// Whether the device at `position` was written tonight (its lines are made).
        @inline(__always)
        func written(_ position: Int) -> Bool { records.record(at: position).written }

        /// Fills `d` with the declarations of the device written at `position` (and its set's
        /// `digest`, which only its set names).
        @inline(__always)
        private mutating func fill(_ position: Int, variant: Int, digest: SHA256Digest? = nil) -> DeclarationRecords.Record {
            let r = records.record(at: position)
            d.identity = DeclarationRecords.digest(r.identity)
            d.configurationToken = DeclarationRecords.digest(r.configurationToken)
            d.activationToken = DeclarationRecords.digest(r.activationToken)
            d.variant = builder.templates.count == 1 ? 0 : variant
            if let digest { d.digest = digest }
            d.assets[0].data = assets.digest(at: position)
            d.assets[0].size = Int(r.assetSize)
            d.assets[0].name = r.assetName
            return r
        }

        /// The device's `declarations.jsonl` lines, as they came when it was written: its asset's
        /// declaration (when it brought that data first), its configuration, its activation.
        mutating func appendDeclarations(position: Int, variant: Int, to out: inout [UInt8]) {
            let r = fill(position, variant: variant)
            if r.firstOfAsset { builder.appendAssetDeclaration(d.assets[0], to: &out) }
            builder.appendConfiguration(d, to: &out)
            builder.appendActivation(d, to: &out)
        }

        /// The device's `index.jsonl` line: its set, with its digest and the assignments' `fields`.
        mutating func appendSet(position: Int, key: ByteView, digest: SHA256Digest, variant: Int, fields: ByteView, to out: inout [UInt8]) {
            _ = fill(position, variant: variant, digest: digest)
            builder.appendSet(key: key, d, path: false, indexFields: fields, to: &out)
        }
    }

    /// A device gone from the fleet (`--remove-missing`): its set is written empty.
    var writesRemovalFiles: Bool { layout == .files }

    func removal(of key: ByteView) -> (file: [UInt8]?, indexLine: [UInt8]?) {
        var line: [UInt8] = []
        DeclarationBuilder.appendEmptySet(key: key, path: layout == .files, to: &line)
        guard layout == .files else { return (nil, line) }
        var set: [UInt8] = []
        DeclarationBuilder.appendEmptySet(key: key, path: false, to: &set)
        return (set, line)
    }

    /// The manifest's path of the device at `position`: the assets its set names (what a server
    /// must keep serving while the device has this set), space-separated.
    var namesManifestPaths: Bool { true }

    func appendManifestPath(position: Int, to out: inout [UInt8]) {
        for i in assetsByPosition.indices {
            let digest = assetsByPosition[i].digest(at: position)
            out.append(room: 78) { path in
                if i > 0 { path.write(UInt8(ascii: " ")) }
                path.write("assets/")
                path.write(hex: digest)
                path.write(".plist")
            }
        }
        credentialAssets?.forEach(position) { name in
            out.append(UInt8(ascii: " "))
            name.appendPath(to: &out)
        }
    }

    /// Every asset a live set names (tonight's devices', and those carried from the previous
    /// generation), once each: what an asset store must keep serving.
    func liveFiles(reserving count: Int, _ devices: (_ visit: (LiveDevice) -> Void) -> Void) -> (any LiveFiles)? {
        let slots = assetsByPosition
        var live = LiveAssets(digests: slots, reservingRendered: count * slots.count)
        devices { device in
            switch device {
            case .carried(let path):
                for part in path.split(separator: UInt8(ascii: " ")) {
                    if let name = AssetName(path: part) { live.addOther(name) }
                }
            case .rendered(let position):
                for k in slots.indices { live.addRendered(position: position, slots: k) }
                credentialAssets?.forEach(position) { live.addOther($0) }
            }
        }
        live.sortKeepingEachOnce()
        return live
    }
}
