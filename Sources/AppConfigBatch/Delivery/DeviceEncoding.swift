import AppConfigCore
import Digest

/// What a delivery makes of one rendered device: its digest and its files (its own file at its
/// folder path, files shared by devices and stored once, lines of the generation's line files),
/// written through `DeviceFiles` into whatever container the run has. Plain plists, MDM commands
/// and DDM declaration sets are encodings; a folder, an archive and a dry run are containers.
/// Called from the worker that rendered the device.
protocol DeviceEncoding: Sendable {
    /// The ending of a device's own file (`.plist`; `.json` for a DDM set).
    var pathExtension: StaticString { get }

    /// The line files the encoding writes as devices come, in the order an archive holds them.
    /// With `.index` the encoding writes `index.jsonl` itself (a DDM set per line); without, the
    /// generation writes it from the devices' digests.
    var lineFiles: [LineKind] { get }

    /// Returns the device's digest and, when `files.writes` says so, writes its files.
    /// `scratch` is the worker's to reuse.
    func encode(_ device: RenderedDevice, scratch: inout [UInt8], files: inout DeviceFiles) throws(Problem) -> SHA256Digest

    /// What removes the configuration of a device gone from the fleet (`--remove-missing`): a
    /// file at its path and a line of `index.jsonl`, where the delivery has them.
    func removal(of key: ByteView) -> (file: [UInt8]?, indexLine: [UInt8]?)

    /// Whether `removal(of:)` gives a file (`changes.jsonl` then names it).
    var writesRemovalFiles: Bool { get }

    /// Documents that hold secrets pass through the chunks: they are cleared once written.
    var holdsSecrets: Bool { get }
}

extension DeviceEncoding {
    var pathExtension: StaticString { ".plist" }
    var lineFiles: [LineKind] { [] }
    func removal(of key: ByteView) -> (file: [UInt8]?, indexLine: [UInt8]?) { (nil, nil) }
    var writesRemovalFiles: Bool { false }
    var holdsSecrets: Bool { false }
}

/// The line files a generation may have besides its closing files.
enum LineKind: UInt8, CaseIterable {
    case index, declarations

    var fileName: String {
        switch self {
        case .index: "index.jsonl"
        case .declarations: "declarations.jsonl"
        }
    }
}

/// `--delivery plist`: the device's file is its rendered plist.
struct PlistEncoding: SingleFileEncoding {
    func appendFile(of device: RenderedDevice, to out: inout [UInt8]) { out.append(device.plist) }
}

/// `--delivery mdm-settings|mdm-install`: the device's file is the command around its plist.
extension MDMCommand: SingleFileEncoding {
    func appendFile(of device: RenderedDevice, to out: inout [UInt8]) { encode(key: device.key, plist: device.plist, into: &out) }

    func removal(of key: ByteView) -> (file: [UInt8]?, indexLine: [UInt8]?) { (removal(key: key), nil) }
    var writesRemovalFiles: Bool { true }
}

extension ResolvedDelivery {
    /// How deep the renderer nests the dictionary (an MDM command's body; XML only).
    public var xmlNesting: Int {
        switch delivery {
        case .mdmSettings: MDMCommand(kind: .settings, delivery: self).nesting
        case .mdmInstall: MDMCommand(kind: .install, delivery: self).nesting
        case .plist, .ddm: 0
        }
    }
}
