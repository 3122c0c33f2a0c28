import AppConfigCore
import Foundation

/// The generations beside a folder output (`OUT.generations/g<time>-<pid>`), and which of them this
/// tool made. Each generation has a marker beside it, `.NAME.appconfig` (outside the generation, so
/// that what is published is only the devices' files), written before the generation is made, with
/// its publication sequence number (one more than any before it): nothing is removed unless its
/// name and its marker (or, for a generation made before markers, its name and its manifest) prove
/// it one of ours, and `--keep` prunes by sequence, never by name or clock (a clock that ran ahead
/// named generations that sorted after every later night's).
package enum Generations {
    /// The marker of generation `name`, in the generations' folder.
    package static func markerName(of name: String) -> String { "." + name + ".appconfig" }

    /// One generation found in the folder.
    package struct Entry {
        package var name: String
        /// From its marker; 0 for one made before markers.
        package var sequence: Int
        package var complete: Bool
    }

    /// `g`, 14 digits, `-`, digits: the names `GenerationFolder` gives.
    package static func isGenerationName(_ name: String) -> Bool {
        let u = Array(name.utf8)
        guard u.count > 16, u[0] == UInt8(ascii: "g"), u[15] == UInt8(ascii: "-") else { return false }
        func digits(_ s: ArraySlice<UInt8>) -> Bool { !s.isEmpty && s.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } }
        return digits(u[1..<15]) && digits(u[16...])
    }

    /// The folder of generations: made if missing; refused when it is a symlink (planted to make
    /// the cleanup delete another folder's entries) or not the running user's.
    package static func prepareRoot(_ root: String) throws(Problem) {
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
        // Others who can write it can plant generations and markers, or swap a folder for a symlink
        // while it is removed.
        guard info.st_mode & (S_IWGRP | S_IWOTH) == 0 else {
            throw Problem(.outputExists, at: Location(file: root),
                          "\(root) can be written by its group or others (mode \(String(info.st_mode & 0o777, radix: 8))): the generations of an output are its owner's alone (chmod go-w); nothing was written")
        }
    }

    /// The highest publication sequence a marker may hold: far above any count of nights, far
    /// below where one more overflows.
    package static let maxSequence = 1 << 48

    /// The generations this tool made, as the folder holds them (symlinks, foreign entries and
    /// entries of another user aside).
    package static func list(in root: String) -> [Entry] {
        var entries: [Entry] = []
        for name in (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? [] where isGenerationName(name) {
            let folder = root + "/" + name
            var info = stat()
            guard lstat(folder, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR, info.st_uid == geteuid() else { continue }
            let complete = access(folder + "/" + OutputNames.manifestFile, F_OK) == 0
            if let sequence = markerSequence(root + "/" + markerName(of: name)) {
                entries.append(Entry(name: name, sequence: sequence, complete: complete))
            } else if complete {
                entries.append(Entry(name: name, sequence: 0, complete: true))  // before markers: its manifest vouches
            }
        }
        return entries
    }

    /// A marker's sequence: the job's user's file (no symlink), `appconfig-generation N` with N in
    /// 0...maxSequence; nil for anything else.
    package static func markerSequence(_ path: String) -> Int? {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_uid == geteuid() else { return nil }
        var bytes = [UInt8](repeating: 0, count: 64)
        let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard n > 0 else { return nil }
        let text = String(decoding: bytes[0..<n], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        let words = text.split(separator: " ")
        guard words.count == 2, words[0] == "appconfig-generation", words[1].count <= 15, words[1].allSatisfy({ $0.isASCII && $0.isNumber }),
              let sequence = Int(words[1]), sequence <= maxSequence else { return nil }
        return sequence
    }

    /// Writes the marker of a generation about to be made (exclusively: a planted file or symlink
    /// under its name is refused).
    package static func writeMarker(of name: String, sequence: Int, in root: String) throws(Problem) {
        let path = root + "/" + markerName(of: name)
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw Problem(.outputWrite, at: Location(file: path), "cannot create \(path): \(systemError())") }
        defer { close(fd) }
        try writeAll(fd, Array("appconfig-generation \(sequence)\n".utf8), path: path)
    }

    /// Removes a generation this tool made, and its marker: relative to descriptors of the folders
    /// opened without following a symlink, so that a folder swapped for a symlink while it is removed
    /// loses the symlink, never what it names.
    package static func remove(_ name: String, in root: String) {
        let rootFD = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard rootFD >= 0 else { return }
        defer { close(rootFD) }
        TreeRemoval.remove(name, in: rootFD)
        unlinkat(rootFD, markerName(of: name), 0)
    }

    /// Markers whose generation is gone (a run killed between the two): removed.
    package static func removeOrphanMarkers(in root: String) {
        for file in (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? [] where file.hasPrefix(".g") && file.hasSuffix(".appconfig") {
            let name = String(file.dropFirst().dropLast(".appconfig".count))
            var info = stat()
            var marker = stat()
            guard lstat(root + "/" + file, &marker) == 0, marker.st_uid == geteuid() else { continue }
            if isGenerationName(name) && lstat(root + "/" + name, &info) != 0 && errno == ENOENT { unlink(root + "/" + file) }
        }
    }

    /// Complete generations beyond `keep`, oldest first by sequence: never `current`, nor with
    /// `keep` of 2 or more `previous` (the one the output named before the switch: a reader may
    /// still be inside it; `--keep 1` asks for it to go).
    package static func prunable(in root: String, keep: Int, current: String, previous: String?) -> [String] {
        let complete = list(in: root).filter(\.complete).sorted { ($0.sequence, $0.name) < ($1.sequence, $1.name) }
        return complete.dropLast(max(keep, 1)).map(\.name).filter { $0 != current && (keep < 2 || $0 != previous) }
    }
}
