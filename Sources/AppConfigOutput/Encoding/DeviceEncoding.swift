import AppConfigCore
import Digest

/// What a delivery makes of one rendered device: its digest and its files (its own file at its
/// folder path, files shared by devices and stored once, lines of the generation's line files),
/// written through `DeviceFiles` into whatever container the run has; and, for the generation's
/// closing files, each device's `index.jsonl` line and manifest path, and the shared files its
/// live devices name. Plain plists, MDM commands and DDM declaration sets are encodings; a folder,
/// an archive and a dry run are containers. Called from the worker that rendered the device.
public protocol DeviceEncoding: Sendable {
    /// The ending of a device's own file (`.plist`; `.json` for a DDM set).
    var pathExtension: StaticString { get }

    /// The line files the encoding writes as devices come, in the order an archive holds them.
    /// With `.index` the encoding writes its `index.jsonl` lines as it encodes (a DDM set per
    /// line); without, the generation has it write them when it closes (`appendIndexLine`).
    var lineFiles: [LineKind] { get }

    /// What the output holds once before any device: lines at the start of line files, files
    /// (DDM: the status subscription every set names).
    var opening: (lines: [(LineKind, [UInt8])], files: [(path: String, bytes: [UInt8])]) { get }

    /// Returns the device's digest and, when `files.writes` says so, writes its files.
    /// `scratch` is the worker's to reuse.
    func encode(_ device: RenderedDevice, scratch: inout [UInt8], files: inout DeviceFiles) throws(Problem) -> SHA256Digest

    /// How the sink may digest devices together (sixteen at a time in the SHA-256 lanes) before
    /// they are encoded: the encoding that says so implements the matching method.
    var batching: DigestBatching { get }

    /// `.files`: appends the device's one file (its digest is the file's).
    func appendFile(of device: RenderedDevice, to out: inout [UInt8])

    /// `.plists`: encodes devices whose plists were digested together, handing each device's
    /// digest to `digest` (its index in `devices`) as it is made.
    func encode(_ devices: [RenderedDevice], plistDigests: [SHA256Digest], scratch: inout [UInt8], files: inout DeviceFiles,
                digest: (Int, SHA256Digest) -> Void) throws(Problem)

    /// A device's `index.jsonl` line, made when the generation closes (for an encoding whose
    /// `lineFiles` has no `.index`): device, path, SHA-256, and `fields` (JSON members with
    /// their leading commas). `name`: the key's path name, when it was made already.
    func appendIndexLine(key: ByteView, name: OutputNames.PathName?, digest: SHA256Digest, fields: ByteView, to index: inout [UInt8])

    /// What removes the configuration of a device gone from the fleet (`--remove-missing`): a
    /// file at its path and a line of `index.jsonl`, where the delivery has them.
    func removal(of key: ByteView) -> (file: [UInt8]?, indexLine: [UInt8]?)

    /// Whether `removal(of:)` gives a file (`changes.jsonl` then names it).
    var writesRemovalFiles: Bool { get }

    /// Documents that hold secrets pass through the chunks: they are cleared once written.
    var holdsSecrets: Bool { get }

    /// Whether the manifest names each device's path as `appendManifestPath` makes it (DDM: the
    /// assets its set names, what a server must keep serving), not its own file's.
    var namesManifestPaths: Bool { get }

    /// The manifest's path of the rendered device at `position` (`namesManifestPaths`).
    func appendManifestPath(position: Int, to out: inout [UInt8])

    /// The shared files the generation's live devices name (`visit` hands over each device in key
    /// order: rendered tonight at a position, or carried with its previous manifest path), each
    /// once; nil for an encoding that shares none.
    func liveFiles(reserving: Int, _ devices: (_ visit: (LiveDevice) -> Void) -> Void) -> (any LiveFiles)?
}

/// Which devices the sink may digest together before encoding them (`DeviceEncoding.batching`).
public enum DigestBatching: Sendable {
    /// One at a time (`encode(_:scratch:files:)`).
    case none
    /// Each device's one file (`appendFile`), digested with others', then written.
    case files
    /// Each device's plist, digested with others', then the devices encoded together.
    case plists
}

/// A device of a generation, as `DeviceEncoding.liveFiles` walks them.
public enum LiveDevice {
    /// Rendered tonight, at this position in key order.
    case rendered(Int)
    /// Carried from the previous generation: its manifest path there.
    case carried(ArraySlice<UInt8>)
}

/// The shared files a generation's live devices name (DDM: its assets): what the generation must
/// hold (carried from the previous one when tonight did not write them) and lists as a closing file.
public protocol LiveFiles {
    /// Each file once, in order: its relative path, the first half of the digest that names it
    /// (`SHA256Digest.firstHalf`, what the chunk writer records as written) and whether it holds a secret.
    func forEach(_ body: (_ relative: String, _ key: UInt128, _ secret: Bool) throws(Problem) -> Void) throws(Problem)
    /// The closing file that lists them.
    func closingFile() -> ClosingFile
}

extension DeviceEncoding {
    public var pathExtension: StaticString { ".plist" }
    public var lineFiles: [LineKind] { [] }
    public var opening: (lines: [(LineKind, [UInt8])], files: [(path: String, bytes: [UInt8])]) { ([], []) }
    public var batching: DigestBatching { .none }
    public func appendFile(of device: RenderedDevice, to out: inout [UInt8]) {
        preconditionFailure("an encoding that batches files appends them")
    }
    public func encode(_ devices: [RenderedDevice], plistDigests: [SHA256Digest], scratch: inout [UInt8], files: inout DeviceFiles,
                       digest: (Int, SHA256Digest) -> Void) throws(Problem) {
        preconditionFailure("an encoding that batches plists encodes them")
    }
    public func removal(of key: ByteView) -> (file: [UInt8]?, indexLine: [UInt8]?) { (nil, nil) }
    public var writesRemovalFiles: Bool { false }
    public var holdsSecrets: Bool { false }
    public var namesManifestPaths: Bool { false }
    public func appendManifestPath(position: Int, to out: inout [UInt8]) {}
    public func liveFiles(reserving: Int, _ devices: (_ visit: (LiveDevice) -> Void) -> Void) -> (any LiveFiles)? { nil }

    /// `{"device":KEY,"path":PATH,"sha256":HEX` and the fields. A key that is its own file name
    /// (most) needs no JSON escape either: its line is made on the stack and appended at once
    /// (piece by piece, ten appends a line).
    @inline(__always)
    public func appendIndexLine(key k: ByteView, name: OutputNames.PathName?, digest: SHA256Digest, fields: ByteView, to index: inout [UInt8]) {
        let ending = pathExtension
        let name = name ?? OutputNames.PathName(key: k)
        if name.isOwn {
            index.append(room: 128 + 2 * OutputNames.maxNameLength + ending.utf8CodeUnitCount + fields.count) { line in
                line.write(#"{"device":""#)
                line.write(k)
                line.write(#"","path":""#)
                line.writeSafeRelativePath(k, folder: name.folder, extension: ending)
                line.write(#"","sha256":""#)
                line.write(hex: digest)
                line.write(UInt8(ascii: "\""))
                line.write(fields)
                line.write("}\n")
            }
            return
        }
        Self.appendIndexLineByPieces(key: k, extension: ending, digest: digest, fields: fields, to: &index)
    }

    /// `appendIndexLine` piece by piece, for any key (the tests' reference too).
    public static func appendIndexLineByPieces(key k: ByteView, extension ending: StaticString, digest: SHA256Digest,
                                               fields: ByteView, to index: inout [UInt8]) {
        JSONText.append(#"{"device":"#, to: &index)
        JSONText.appendString(k, to: &index)
        JSONText.append(#","path":""#, to: &index)
        OutputNames.appendRelativePath(k, extension: ending, to: &index)
        JSONText.append(#"","sha256":""#, to: &index)
        digest.appendHex(to: &index)
        index.append(UInt8(ascii: "\""))
        index.append(fields)
        JSONText.append("}\n", to: &index)
    }

    /// The `index.jsonl` line of a removal file (`--remove-missing`, an encoding that writes one):
    /// `{"device":KEY,"path":PATH,"removed":true}`.
    public func removalIndexLine(key: ByteView) -> [UInt8] {
        var line: [UInt8] = []
        JSONText.append(#"{"device":"#, to: &line)
        JSONText.appendString(key, to: &line)
        JSONText.append(#","path":""#, to: &line)
        OutputNames.appendRelativePath(key, extension: pathExtension, to: &line)
        JSONText.append("\",\"removed\":true}\n", to: &line)
        return line
    }
}

/// An encoding whose output for a device is one file of its own and nothing else (a plist, an MDM
/// command). The sink digests such files sixteen at a time (`SHA256.digests(of:ends:)`) before it
/// writes them: digested one by one as they came, they were most of the render pass's CPU.
public protocol SingleFileEncoding: DeviceEncoding {}

extension SingleFileEncoding {
    public var batching: DigestBatching { .files }

    /// One device on its own (`DeliveryPreview`): its file made in `scratch`, digested, written.
    public func encode(_ device: RenderedDevice, scratch: inout [UInt8], files: inout DeviceFiles) throws(Problem) -> SHA256Digest {
        scratch.removeAll(keepingCapacity: true)
        appendFile(of: device, to: &scratch)
        let digest = SHA256Digest(of: scratch)
        if files.writes(entry: device.previousEntry, digest) {
            try scratch.withView { b throws(Problem) in
                try files.file(path: { OutputNames.appendRelativePath(device.key, extension: pathExtension, to: &$0) }, bytes: b)
            }
        }
        return digest
    }
}

/// The line files a generation may have besides its closing files.
public enum LineKind: UInt8, CaseIterable, Sendable {
    case index, declarations

    public var fileName: String {
        switch self {
        case .index: "index.jsonl"
        case .declarations: "declarations.jsonl"
        }
    }
}

/// `--delivery plist`: the device's file is its rendered plist.
public struct PlistEncoding: SingleFileEncoding {
    public init() {}
    public func appendFile(of device: RenderedDevice, to out: inout [UInt8]) { out.append(device.plist) }
}
