import AppConfigCore
import Foundation

/// Where a generation's files go: a folder generation, a tar archive (a file or a stream), or
/// nowhere (a dry run). What the files of a device are is its `DeviceEncoding`'s business; a
/// container places files, keeps the line files (`index.jsonl`, `declarations.jsonl`) an encoding
/// writes as devices come, and publishes the whole or discards it. `DeviceSink` joins the two.
protocol OutputContainer: AnyObject, Sendable {
    /// Files reach the output at all: false for a dry run, whose devices are only digested.
    var writesFiles: Bool { get }

    /// An archive: a device's files become members appended to its chunk (`appendMember`), written
    /// in key order by the chunk writer (`writeMembers`). Otherwise files are placed at once (`place`).
    var isArchive: Bool { get }

    /// Writes a file at its relative path now (a folder). `once`: a file there already is left as it
    /// is (content-addressed files hold the same bytes under the same name); `secret`: its owner's alone.
    func place(_ bytes: ByteView, at relative: String, once: Bool, secret: Bool) throws(Problem)

    /// Writes members made by `Tar.appendMember`, in the order given (an archive).
    func writeMembers(_ pieces: [ByteView]) throws(Problem)

    /// A file of the generation the run appends lines to as chunks are written.
    func lineFile(_ name: String) throws(Problem) -> LineFile

    /// The render is over and the run may be published: writes the line files and then the closing
    /// files (the manifest last), makes the output visible whole, and returns where it is.
    func publish(lines: [LineFile], closing files: [ClosingFile]) throws(Problem) -> String

    /// The run is not published: removes what was written.
    func discard()
}

extension OutputContainer {
    var writesFiles: Bool { true }
    var isArchive: Bool { false }
    func place(_ bytes: ByteView, at relative: String, once: Bool, secret: Bool) throws(Problem) {}
    func writeMembers(_ pieces: [ByteView]) throws(Problem) {}
}

/// A file of lines written as chunks come (the DDM index and declarations): in a folder, the
/// generation's own file; for an archive, an unlinked scratch file appended as a member at the end.
final class LineFile: @unchecked Sendable {
    /// Its name in the generation.
    let name: String
    /// Its name in errors.
    let path: String
    let descriptor: Int32
    /// Bytes written so far (the archive member's size). Touched by the chunk writer, then by
    /// the removals after it.
    private(set) var size = 0
    private var closed = false

    init(name: String, path: String, descriptor: Int32) {
        self.name = name
        self.path = path
        self.descriptor = descriptor
    }

    func append(_ bytes: [UInt8]) throws(Problem) {
        guard !bytes.isEmpty else { return }
        try writeAll(descriptor, bytes, path: path)
        size += bytes.count
    }

    /// Appends the pieces in order, gathered by the kernel (`writev`).
    func append(_ pieces: [ByteView]) throws(Problem) {
        let count = pieces.reduce(0) { $0 + $1.count }
        guard count > 0 else { return }
        try writeAllGathered(descriptor, pieces, path: path)
        size += count
    }

    /// Closes the descriptor (once; an error to write is the run's).
    func close() throws(Problem) {
        guard !closed, descriptor >= 0 else { return }
        closed = true
        if Glibc.close(descriptor) != 0 {
            throw Problem(.outputWrite, at: Location(file: path), "cannot write \(path): \(systemError())")
        }
    }

    /// An unlinked temporary file in `folder`: `mkstemp` makes it with O_EXCL and a random name,
    /// so nothing planted under a predictable name is opened.
    static func scratch(_ name: String, in folder: String, shownAs path: String) throws(Problem) -> LineFile {
        var template = Array((folder + "/.appconfig-scratch-XXXXXX").utf8CString)
        let fd = mkstemp(&template)
        guard fd >= 0 else { throw Problem(.outputWrite, at: Location(file: folder), "cannot create a temporary file in \(folder): \(systemError())") }
        _ = unlink(template)
        return LineFile(name: name, path: path, descriptor: fd)
    }
}

/// `--dry-run`: nothing is written; each device's digest is still the one its delivery would
/// have (for the change counts of `--dry-run --since`).
final class NoOutput: OutputContainer {
    var writesFiles: Bool { false }
    func lineFile(_ name: String) throws(Problem) -> LineFile { LineFile(name: name, path: name, descriptor: -1) }
    func publish(lines: [LineFile], closing files: [ClosingFile]) throws(Problem) -> String { "" }
    func discard() {}
}
