import AppConfigCore
import Foundation

/// Where a job's output goes, as its settings name it: a folder (`.directory`), a tar file
/// (`.tar`), a tar stream (`.tarStdout`) or nothing (`.dryRun`). Each kind says what path the run
/// locks and names, what the output holds now, what an earlier run left behind, and opens the
/// container a run writes into. The kinds are defined beside their containers; a job never
/// switches over them.
public struct OutputDestination: Sendable, Equatable, CustomStringConvertible {
    /// One kind of output. Only `open` is required.
    public protocol Kind: Sendable {
        /// The file or folder the run writes, locks (`OutputLock`) and keeps its side files
        /// beside (`sideFile`); nil for a stream or nothing.
        var path: String? { get }
        /// The option that names it (`--out`, `--tar`), for messages; nil when none does.
        var option: String? { get }
        /// Nothing is written (a dry run).
        var isDryRun: Bool { get }
        /// A closing file is written as it is made, its size set after (a folder, a tar file);
        /// false where it would be held whole first (a stream) or nothing is written.
        var writesClosingFilesAsMade: Bool { get }
        /// The generation the output holds now, when a later run can read it (a folder's
        /// published generation); nil for a first run, or a kind nothing is read back from.
        var current: PublishedGeneration? { get }
        /// Holds the output for one run (released when the value goes): nil when nothing needs
        /// holding (a stream, nothing written). Another run holding it is `output.locked`.
        func lock() throws(Problem) -> AnyObject?
        /// Removes what an earlier run that died left (the caller holds the output's lock).
        func removeStale()
        /// The container a run writes into (creating it makes the new generation folder or the
        /// temporary file). `holdsSecrets`: some file is its owner's alone; `keep`: the
        /// generations a folder keeps.
        func open(holdsSecrets: Bool, keep: Int) throws(Problem) -> any OutputContainer
    }

    public let kind: any Kind

    public init(_ kind: any Kind) { self.kind = kind }

    public var path: String? { kind.path }
    public var option: String? { kind.option }
    public var isDryRun: Bool { kind.isDryRun }
    public var writesClosingFilesAsMade: Bool { kind.writesClosingFilesAsMade }
    public var current: PublishedGeneration? { kind.current }
    public func lock() throws(Problem) -> AnyObject? { try kind.lock() }
    public func removeStale() { kind.removeStale() }
    public func open(holdsSecrets: Bool = false, keep: Int = 2) throws(Problem) -> any OutputContainer {
        try kind.open(holdsSecrets: holdsSecrets, keep: keep)
    }

    /// A file kept beside the output (`OUT.users`, `OUT.secret-asset-key`), nil when the output
    /// has no path.
    public func sideFile(_ suffix: String) -> String? { path.map { PathText.trimmed($0) + suffix } }

    public static func == (a: OutputDestination, b: OutputDestination) -> Bool {
        type(of: a.kind) == type(of: b.kind) && a.path == b.path
    }

    public var description: String { path.map { "\(option ?? "") \($0)" } ?? (isDryRun ? "--dry-run" : "-") }
}

extension OutputDestination.Kind {
    public var path: String? { nil }
    public var option: String? { nil }
    public var isDryRun: Bool { false }
    public var writesClosingFilesAsMade: Bool { !isDryRun }
    public var current: PublishedGeneration? { nil }
    /// An exclusive `flock` on `PATH.lock` beside the output's path, where it has one.
    public func lock() throws(Problem) -> AnyObject? { try path.map { p throws(Problem) in try OutputLock(output: p) } }
    public func removeStale() {}
}

/// A generation a run published, as a later run reads it back: where its manifest is and, for a
/// folder, where its files are (what a folder output carries forward from).
public struct PublishedGeneration: Sendable, Equatable {
    /// Where its manifest is read from.
    public enum ManifestSource: Sendable, Equatable {
        /// A manifest file: a folder's, a tar's copy beside it, or one given on its own.
        case file(String)
        /// The manifest member of an archive that has no copy beside it.
        case archiveMember(String)
    }

    /// As given or found: what messages name.
    public let path: String
    /// The folder that holds its files, when it is a folder generation.
    public let folder: String?
    public let manifest: ManifestSource

    public init(path: String, folder: String?, manifest: ManifestSource) {
        self.path = path
        self.folder = folder
        self.manifest = manifest
    }

    /// What is at `path`: a generation folder, an archive (its manifest beside it, or inside it)
    /// or a manifest file; nil when nothing is there.
    public init?(at path: String) {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) else { return nil }
        if isFolder.boolValue {
            self.init(path: path, folder: path, manifest: .file(path + "/" + OutputNames.manifestFile))
        } else if path.hasSuffix(".tar") {
            let beside = path + "." + OutputNames.manifestFile
            self.init(path: path, folder: nil, manifest: FileManager.default.fileExists(atPath: beside) ? .file(beside) : .archiveMember(path))
        } else {
            self.init(path: path, folder: nil, manifest: .file(path))
        }
    }

    /// The manifest file, when it is one (not an archive's member).
    public var manifestFile: String? {
        if case .file(let f) = manifest { return f }
        return nil
    }
}
