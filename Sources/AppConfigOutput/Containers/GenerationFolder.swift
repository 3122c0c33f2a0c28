import AppConfigCore
import CFileSync
import Digest
import Foundation

/// A directory output, crash-safe: plists are written into a new generation folder beside the
/// output (`OUT.generations/g<time>-<pid>`), and `OUT` is a symlink switched to it in one atomic
/// rename once every device is written and the generation's manifest (written last) marks it
/// complete. Until then readers see the previous generation whole; after a crash, an interrupt or
/// a SIGKILL no partial file stands under a final name, and the next run removes the unmarked
/// generation. (Replacing each file through a temporary name costs several times creating it;
/// one switch per run costs nothing per file.) Each device's file is written
/// as soon as it is rendered. The caller holds the output's lock (`OutputLock`).
package final class GenerationFolder: OutputContainer, @unchecked Sendable {
    package let path: String
    package let root: String
    package let generation: String
    /// The generation the output named when this run began (kept by the pruning: a reader may be in it).
    private var previous: String?
    /// Complete generations kept: the current one and the ones before it (a reader still inside one
    /// is not pulled from under its feet).
    package let keep: Int
    /// Files this run created in its generation (all threads): what the generation must hold when
    /// it is published.
    private var created = 0
    private let createdLock = NSLock()

    package init(path: String, keep: Int = 2) throws(Problem) {
        // `./out` and `out` are one output: the symlink's target is compared with the folder.
        let p = PathText.normalized(path)
        self.path = p
        self.keep = keep
        var info = stat()
        if lstat(p, &info) == 0 && (info.st_mode & S_IFMT) != S_IFLNK {
            // An empty folder made for the output is taken (the symlink replaces it); anything else is refused.
            let isEmptyFolder = (info.st_mode & S_IFMT) == S_IFDIR && ((try? FileManager.default.contentsOfDirectory(atPath: p)) ?? ["?"]).isEmpty
            guard isEmptyFolder, rmdir(p) == 0 else {
                throw Problem(.outputExists, at: Location(file: p),
                              "\(p) exists and is not an appconfig output (a symlink to a generation) or an empty folder; give a new --out path")
            }
        }
        root = p + ".generations"
        if (info.st_mode & S_IFMT) == S_IFLNK, let target = try? FileManager.default.destinationOfSymbolicLink(atPath: p) {
            // Only a symlink this output made is replaced: one to `OUT.generations/g...`. A symlink an
            // admin made to some folder is not ours to repoint.
            let full = PathText.normalized(PathText.resolve(target, besideLink: p))
            let name = PathText.name(of: full)
            guard PathText.folder(of: full) == root || PathText.folder(of: full) == (root as NSString).standardizingPath,
                  name.hasPrefix("g") else {
                throw Problem(.outputExists, at: Location(file: p),
                              "\(p) is a symlink to \(target), which is not a generation of this output; give a new --out path")
            }
        }
        try Generations.prepareRoot(root)
        Self.removeIncomplete(in: root)
        let sequence = (Generations.list(in: root).map(\.sequence).max() ?? 0) + 1
        previous = GenerationFolder.published(p).map { PathText.name(of: $0) }
        var t = timespec()
        clock_gettime(CLOCK_REALTIME, &t)
        let stamp = String(Int(t.tv_sec) * 1000 + Int(t.tv_nsec) / 1_000_000)
        generation = root + "/g" + String(repeating: "0", count: max(0, 14 - stamp.count)) + stamp + "-" + String(getpid())
        try Generations.writeMarker(of: PathText.name(of: generation), sequence: sequence, in: root)
        if mkdir(generation, 0o755) != 0 {
            throw Problem(.outputWrite, at: Location(file: generation), "cannot create \(generation): \(systemError())")
        }
    }

    /// The generation the output's symlink names, when it is a complete one.
    package static func published(_ path: String) -> String? {
        let p = PathText.trimmed(path)
        guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: p) else { return nil }
        let full = PathText.resolve(target, besideLink: p)
        return FileManager.default.fileExists(atPath: full + "/" + OutputNames.manifestFile) ? full : nil
    }

    /// Generations without a manifest were left by a run that died (the caller holds the lock: no
    /// live run owns them): removed, and never counted toward `keep`.
    package static func removeIncomplete(in root: String) {
        for entry in Generations.list(in: root) where !entry.complete { Generations.remove(entry.name, in: root) }
        Generations.removeOrphanMarkers(in: root)
    }

    package static func reason(_ error: any Error) -> String {
        ((error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError).map { String(cString: strerror(Int32($0.code))) } ?? "\(error.localizedDescription)"
    }

    /// Written now: a folder's files need no order.
    package func add(_ bytes: ByteView, path: (inout [UInt8]) -> Void, once: Bool, secret: Bool, members: inout [UInt8]) throws(Problem) {
        var relative: [UInt8] = []
        path(&relative)
        try write(bytes, to: String(decoding: relative, as: UTF8.self), once: once, secret: secret)
    }

    package var carriesFilesForward: Bool { true }

    /// Hard-linked from the previous generation's folder (the same file, not a copy).
    package func carry(_ relative: String, from previous: PublishedGeneration, secret: Bool) throws(Problem) -> Bool {
        guard let folder = previous.folder else { return false }
        return try link(folder + "/" + relative, to: relative, secret: secret)
    }

    /// Writes one file under its relative path (`folder/name.plist`). A missing folder is made on
    /// the first ENOENT; threads racing to make the same one all succeed (EEXIST counts as made).
    /// With `once`, a file that exists already is left as it is (content-addressed files: the same
    /// name holds the same bytes); otherwise two writers of one name are an error.
    /// A `secret` file is its owner's alone (0600, its folder 0700): a credential document.
    package func write(_ bytes: ByteView, to relative: String, once: Bool = false, secret: Bool = false) throws(Problem) {
        let full = generation + "/" + relative
        let mode: mode_t = secret ? 0o600 : 0o644
        var fd = open(full, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode)
        if fd < 0 && errno == ENOENT, let slash = relative.firstIndex(of: "/") {
            let folder = generation + "/" + relative[..<slash]
            if mkdir(folder, secret ? 0o700 : 0o755) != 0 && errno != EEXIST {
                throw Problem(.outputWrite, at: Location(file: folder), "cannot create \(folder): \(systemError())")
            }
            fd = open(full, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode)
        }
        guard fd >= 0 else {
            if errno == EEXIST && once { return }
            if errno == EEXIST { throw Problem(.outputCollision, at: Location(file: full), "cannot write \(full): two devices map to this file name") }
            throw Problem(.outputWrite, at: Location(file: full), "cannot write \(full): \(systemError())")
        }
        defer { close(fd) }
        try writeAll(fd, bytes, path: full)
        createdLock.withLock { created += 1 }
    }

    /// Hard-links `source` (a file of an earlier generation) into this one as `relative`, counted
    /// like a file `write` makes. False when `source` is not there.
    package func link(_ source: String, to relative: String, secret: Bool = false) throws(Problem) -> Bool {
        let full = generation + "/" + relative
        if Foundation.link(source, full) != 0 {
            if errno == ENOENT, let slash = relative.firstIndex(of: "/"), access(source, F_OK) == 0 {
                let folder = generation + "/" + relative[..<slash]
                if mkdir(folder, secret ? 0o700 : 0o755) != 0 && errno != EEXIST {
                    throw Problem(.outputWrite, at: Location(file: folder), "cannot create \(folder): \(systemError())")
                }
                if Foundation.link(source, full) == 0 {
                    createdLock.withLock { created += 1 }
                    return true
                }
            }
            if errno == ENOENT { return false }
            if errno == EEXIST { return true }
            throw Problem(.outputWrite, at: Location(file: full), "cannot link \(source) to \(full): \(systemError())")
        }
        createdLock.withLock { created += 1 }
        return true
    }

    /// A file of the generation the run appends lines to (the DDM index), counted like the files
    /// `write` makes.
    package func lineFile(_ name: String) throws(Problem) -> LineFile {
        LineFile(name: name, path: generation + "/" + name, descriptor: try createAppending(name))
    }

    /// Creates a file of the generation to be appended to, counted like the files `write` makes;
    /// the caller closes the descriptor.
    package func createAppending(_ relative: String) throws(Problem) -> Int32 {
        let full = generation + "/" + relative
        let fd = open(full, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw Problem(.outputWrite, at: Location(file: full), "cannot create \(full): \(systemError())") }
        createdLock.withLock { created += 1 }
        return fd
    }

    package func write(_ bytes: [UInt8], to relative: String, once: Bool = false) throws(Problem) {
        try bytes.withView { b throws(Problem) in try write(b, to: relative, once: once) }
    }

    /// Writes the closing files (the manifest last: it marks the generation complete), switches
    /// `path` to this generation in one rename, then removes complete generations beyond `keep`.
    package func publish(lines: [LineFile], closing files: [ClosingFile]) throws(Problem) -> String {
        for line in lines { try line.close() }
        return try publish(closing: files)
    }

    /// Hard-links every file below `source` (another generation) but its top level's (the closing
    /// files, which the caller writes) into this one: regular files and folders of `source`'s owner
    /// only, never a symlink or another user's file (a planted hard link to one); `check(path,
    /// file)` vets each file first. Problems carry `code` (the caller's: a merge's input, a
    /// rollback's output); `cancelled` is asked every 65,536 files: a problem it gives stops the walk.
    package func linkFiles(of source: String, code: some ProblemCodeCatalog, cancelled: () -> Problem? = { nil },
                   check: (_ relative: String, _ file: String) throws(Problem) -> Void = { _, _ in }) throws(Problem) {
        var top = stat()
        guard lstat(source, &top) == 0, top.st_mode & S_IFMT == S_IFDIR else {
            throw Problem(code, at: Location(file: source), "cannot read \(source): not a folder")
        }
        var linked = 0
        func walk(_ relative: String) throws(Problem) {
            let full = relative.isEmpty ? source : source + "/" + relative
            guard let dir = opendir(full) else { throw Problem(code, at: Location(file: full), "cannot read \(full): \(systemError())") }
            defer { closedir(dir) }
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
                if name == "." || name == ".." { continue }
                let path = relative.isEmpty ? name : relative + "/" + name
                let file = source + "/" + path
                var info = stat()
                guard lstat(file, &info) == 0 else { continue }
                let kind = info.st_mode & S_IFMT
                guard kind == S_IFDIR || kind == S_IFREG else {
                    throw Problem(code, at: Location(file: file), "\(file) is not a file or a folder (a symlink?): not an output appconfig wrote")
                }
                guard info.st_uid == top.st_uid else {
                    throw Problem(code, at: Location(file: file), "\(file) belongs to another user than its generation (a link to another's file?): not a file appconfig wrote")
                }
                if kind == S_IFDIR { try walk(path); continue }
                if relative.isEmpty { continue }  // the closing files: the caller's
                try check(path, file)
                guard try link(file, to: path, secret: path.hasPrefix("secret-assets/")) else {
                    throw Problem(code, at: Location(file: file), "cannot link \(file): it went while it was read")
                }
                linked += 1
                if linked % 65536 == 0, let stop = cancelled() { throw stop }
            }
        }
        try walk("")
    }

    package func publish(closing files: [ClosingFile]) throws(Problem) -> String {
        for file in files {
            // The manifest marks the generation complete: it is written under another name,
            // flushed with everything the generation holds, and only then renamed (written in
            // place, a run killed while writing it left a short manifest taken as complete).
            let isManifest = file.name == OutputNames.manifestFile
            let name = isManifest ? file.name + ".partial" : file.name
            let fd = try createAppending(name)
            defer { close(fd) }
            let path = generation + "/" + name
            try file.write { piece throws(Problem) in try writeAll(fd, piece, path: path) }
            if isManifest {
                guard appconfig_syncfs(fd) == 0, fsync(fd) == 0, rename(path, generation + "/" + file.name) == 0 else {
                    throw Problem(.outputWrite, at: Location(file: path), "cannot complete \(generation + "/" + file.name): \(systemError())")
                }
            }
        }
        // What is on disk must be what this run wrote: a generation that lost files to anything
        // else (a cleanup outside the lock, an operator) is refused, never published short.
        // Counting with readdir costs little beside creating the files.
        let onDisk = Self.countFiles(in: generation), wrote = createdLock.withLock { created }
        guard onDisk == wrote else {
            throw Problem(.outputIncomplete, at: Location(file: generation),
                          "\(generation) holds \(onDisk) files but this run wrote \(wrote); it is not published")
        }
        let target = PathText.name(of: root) + "/" + PathText.name(of: generation)
        let temporary = path + ".switch-\(getpid())"
        unlink(temporary)
        guard symlink(target, temporary) == 0 else {
            throw Problem(.outputWrite, at: Location(file: temporary), "cannot create \(temporary): \(systemError())")
        }
        guard rename(temporary, path) == 0 else {
            let reason = systemError()
            unlink(temporary)
            throw Problem(.outputWrite, at: Location(file: path), "cannot publish \(path): \(reason)")
        }
        for old in Generations.prunable(in: root, keep: keep, current: PathText.name(of: generation), previous: previous) {
            Generations.remove(old, in: root)
        }
        return path
    }

    /// Regular files under a folder, its subfolders included (readdir: no Foundation per entry).
    package static func countFiles(in folder: String) -> Int {
        guard let dir = opendir(folder) else { return 0 }
        defer { closedir(dir) }
        var count = 0
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
            if name == "." || name == ".." { continue }
            switch Int32(entry.pointee.d_type) {
            case Int32(DT_DIR): count += countFiles(in: folder + "/" + name)
            case Int32(DT_REG): count += 1
            default:
                var info = stat()
                if lstat(folder + "/" + name, &info) == 0 {
                    if (info.st_mode & S_IFMT) == S_IFDIR { count += countFiles(in: folder + "/" + name) }
                    else if (info.st_mode & S_IFMT) == S_IFREG { count += 1 }
                }
            }
        }
        return count
    }

    /// Removes this unpublished generation.
    package func discard() {
        Generations.remove(PathText.name(of: generation), in: root)
    }
}

extension OutputDestination {
    /// A folder tree, published whole: a new generation folder beside it, then one atomic symlink switch.
    public static func directory(_ path: String) -> OutputDestination { OutputDestination(Directory(folder: path)) }

    struct Directory: OutputDestination.Kind {
        let folder: String
        var path: String? { folder }
        var option: String? { "--out" }
        var current: PublishedGeneration? {
            GenerationFolder.published(folder).map { PublishedGeneration(path: $0, folder: $0, manifest: .file($0 + "/" + OutputNames.manifestFile)) }
        }
        func removeStale() { GenerationFolder.removeIncomplete(in: PathText.trimmed(folder) + ".generations") }
        func open(holdsSecrets: Bool, keep: Int) throws(Problem) -> any OutputContainer { try GenerationFolder(path: folder, keep: keep) }
    }
}
