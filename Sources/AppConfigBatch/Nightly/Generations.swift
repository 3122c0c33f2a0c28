import AppConfigCore
import AppConfigSpec
import Foundation

/// The generations beside a folder output (`OUT.generations/g<time>-<pid>`), and which of them this
/// tool made. Each generation has a marker beside it, `.NAME.appconfig` (outside the generation, so
/// that what is published is only the devices' files), written before the generation is made, with
/// its publication sequence number (one more than any before it): nothing is removed unless its
/// name and its marker (or, for a generation made before markers, its name and its manifest) prove
/// it one of ours, and `--keep` prunes by sequence, never by name or clock (a clock that ran ahead
/// named generations that sorted after every later night's).
enum Generations {
    /// The marker of generation `name`, in the generations' folder.
    static func markerName(of name: String) -> String { "." + name + ".appconfig" }

    /// One generation found in the folder.
    struct Entry {
        var name: String
        /// From its marker; 0 for one made before markers.
        var sequence: Int
        var complete: Bool
    }

    /// `g`, 14 digits, `-`, digits: the names `GenerationFolder` gives.
    static func isGenerationName(_ name: String) -> Bool {
        let u = Array(name.utf8)
        guard u.count > 16, u[0] == UInt8(ascii: "g"), u[15] == UInt8(ascii: "-") else { return false }
        func digits(_ s: ArraySlice<UInt8>) -> Bool { !s.isEmpty && s.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } }
        return digits(u[1..<15]) && digits(u[16...])
    }

    /// The folder of generations: made if missing; refused when it is a symlink (planted to make
    /// the cleanup delete another folder's entries) or not the running user's.
    static func prepareRoot(_ root: String) throws(Problem) {
        var info = stat()
        if lstat(root, &info) != 0 {
            guard mkdir(root, 0o755) == 0 || errno == EEXIST else {
                throw Problem(.outputWrite, at: Location(file: root), "cannot create \(root): \(systemError())")
            }
            guard lstat(root, &info) == 0 else { throw Problem(.outputWrite, at: Location(file: root), "cannot read \(root): \(systemError())") }
        }
        if (info.st_mode & S_IFMT) == S_IFLNK {
            throw Problem(.outputExists, at: Location(file: root), "\(root) is a symlink: the generations of an output are a folder of its own; nothing was written")
        }
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            throw Problem(.outputExists, at: Location(file: root), "\(root) is not a folder; give a new --out path")
        }
        guard info.st_uid == geteuid() else {
            throw Problem(.outputExists, at: Location(file: root), "\(root) belongs to another user (uid \(info.st_uid)); nothing was written")
        }
    }

    /// The generations this tool made, as the folder holds them (symlinks and foreign entries aside).
    static func list(in root: String) -> [Entry] {
        var entries: [Entry] = []
        for name in (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? [] where isGenerationName(name) {
            let folder = root + "/" + name
            var info = stat()
            guard lstat(folder, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else { continue }
            let complete = access(folder + "/" + Manifest.fileName, F_OK) == 0
            if let marker = try? String(contentsOfFile: root + "/" + markerName(of: name), encoding: .utf8),
               let sequence = Int(marker.split(separator: " ").last?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") {
                entries.append(Entry(name: name, sequence: sequence, complete: complete))
            } else if complete {
                entries.append(Entry(name: name, sequence: 0, complete: true))  // before markers: its manifest vouches
            }
        }
        return entries
    }

    /// Writes the marker of a generation about to be made (exclusively: a planted file or symlink
    /// under its name is refused).
    static func writeMarker(of name: String, sequence: Int, in root: String) throws(Problem) {
        let path = root + "/" + markerName(of: name)
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw Problem(.outputWrite, at: Location(file: path), "cannot create \(path): \(systemError())") }
        defer { close(fd) }
        try writeAll(fd, Array("appconfig-generation \(sequence)\n".utf8), path: path)
    }

    /// Removes a generation this tool made, and its marker.
    static func remove(_ name: String, in root: String) {
        try? FileManager.default.removeItem(atPath: root + "/" + name)
        unlink(root + "/" + markerName(of: name))
    }

    /// Markers whose generation is gone (a run killed between the two): removed.
    static func removeOrphanMarkers(in root: String) {
        for file in (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? [] where file.hasPrefix(".g") && file.hasSuffix(".appconfig") {
            let name = String(file.dropFirst().dropLast(".appconfig".count))
            var info = stat()
            if isGenerationName(name) && lstat(root + "/" + name, &info) != 0 && errno == ENOENT { unlink(root + "/" + file) }
        }
    }

    /// Complete generations beyond `keep`, oldest first by sequence: never `current`, nor with
    /// `keep` of 2 or more `previous` (the one the output named before the switch: a reader may
    /// still be inside it; `--keep 1` asks for it to go).
    static func prunable(in root: String, keep: Int, current: String, previous: String?) -> [String] {
        let complete = list(in: root).filter(\.complete).sorted { ($0.sequence, $0.name) < ($1.sequence, $1.name) }
        return complete.dropLast(max(keep, 1)).map(\.name).filter { $0 != current && (keep < 2 || $0 != previous) }
    }
}
