import AppConfigCore
import Foundation

/// Where a generation's files go: a folder generation, a tar archive (a file or a stream), or
/// nowhere (a dry run). What the files of a device are is its `DeviceEncoding`'s business; a
/// container places them, formatting them itself (a folder writes each at once, an archive makes
/// it a member for its chunk), keeps the line files an encoding writes as devices come, carries
/// the previous generation's files forward where it can, and publishes the whole or discards it.
/// `DeviceSink` joins the two. A new kind of output is a type conforming to this and an
/// `OutputDestination.Kind` that opens it: one file, no switch to edit.
public protocol OutputContainer: AnyObject, Sendable {
    /// Files reach the output at all: false for a dry run, whose devices are only digested.
    var writesFiles: Bool { get }

    /// A file of a device at the relative path `path` appends, from a worker. A folder writes it
    /// now; an archive appends it to `members` as a tar member, for the chunk writer to hand back to
    /// `writeMembers` in key order. `once`: a file there already is left as it is (content-addressed
    /// files hold the same bytes under the same name); `secret`: its owner's alone.
    func add(_ bytes: ByteView, path: (inout [UInt8]) -> Void, once: Bool, secret: Bool, members: inout [UInt8]) throws(Problem)

    /// Writes what `add` put into `members`, in the order given (the chunk writer, in key order).
    func writeMembers(_ pieces: [ByteView]) throws(Problem)

    /// A file of the generation the run appends lines to as chunks are written.
    func lineFile(_ name: String) throws(Problem) -> LineFile

    /// Whether `carry` can bring files of a previous generation into this one (a folder: by hard
    /// links). An archive holds only what tonight wrote.
    var carriesFilesForward: Bool { get }

    /// Brings the file `relative` of `previous` into this generation under the same name, as if
    /// written (`secret`: its owner's alone). False when it cannot: the previous generation has no
    /// such file, or is not one this container can take files from.
    func carry(_ relative: String, from previous: PublishedGeneration, secret: Bool) throws(Problem) -> Bool

    /// The render is over and the run may be published: writes the line files and then the closing
    /// files (the manifest last), makes the output visible whole, and returns where it is.
    func publish(lines: [LineFile], closing files: [ClosingFile]) throws(Problem) -> String

    /// The run is not published: removes what was written.
    func discard()
}

extension OutputContainer {
    public var writesFiles: Bool { true }
    public var carriesFilesForward: Bool { false }
    public func carry(_ relative: String, from previous: PublishedGeneration, secret: Bool) throws(Problem) -> Bool { false }
    public func writeMembers(_ pieces: [ByteView]) throws(Problem) {}
}

/// A file of lines written as chunks come (the DDM index and declarations): in a folder, the
/// generation's own file; for an archive, an unlinked scratch file appended as a member at the end.
public final class LineFile: @unchecked Sendable {
    /// Its name in the generation.
    public let name: String
    /// Its name in errors.
    public let path: String
    public let descriptor: Int32
    /// Bytes written so far (the archive member's size). Touched by the chunk writer, then by
    /// the removals after it.
    public private(set) var size = 0
    private var closed = false

    public init(name: String, path: String, descriptor: Int32) {
        self.name = name
        self.path = path
        self.descriptor = descriptor
    }

    public func append(_ bytes: [UInt8]) throws(Problem) {
        guard !bytes.isEmpty else { return }
        try writeAll(descriptor, bytes, path: path)
        size += bytes.count
    }

    /// Appends the pieces in order, gathered by the kernel (`writev`).
    public func append(_ pieces: [ByteView]) throws(Problem) {
        let count = pieces.reduce(0) { $0 + $1.count }
        guard count > 0 else { return }
        try writeAllGathered(descriptor, pieces, path: path)
        size += count
    }

    /// Closes the descriptor (once; an error to write is the run's).
    public func close() throws(Problem) {
        guard !closed, descriptor >= 0 else { return }
        closed = true
        if Glibc.close(descriptor) != 0 {
            throw Problem(.outputWrite, at: Location(file: path), "cannot write \(path): \(systemError())")
        }
    }

    /// An unlinked temporary file in `folder`: `mkstemp` makes it with O_EXCL and a random name,
    /// so nothing planted under a predictable name is opened.
    public static func scratch(_ name: String, in folder: String, shownAs path: String) throws(Problem) -> LineFile {
        var template = Array((folder + "/.appconfig-scratch-XXXXXX").utf8CString)
        let fd = mkstemp(&template)
        guard fd >= 0 else { throw Problem(.outputWrite, at: Location(file: folder), "cannot create a temporary file in \(folder): \(systemError())") }
        _ = unlink(template)
        return LineFile(name: name, path: path, descriptor: fd)
    }
}

/// `--dry-run`: nothing is written; each device's digest is still the one its delivery would
/// have (for the change counts of `--dry-run --since`).
package final class NoOutput: OutputContainer {
    package var writesFiles: Bool { false }
    package func add(_ bytes: ByteView, path: (inout [UInt8]) -> Void, once: Bool, secret: Bool, members: inout [UInt8]) throws(Problem) {}
    package func lineFile(_ name: String) throws(Problem) -> LineFile { LineFile(name: name, path: name, descriptor: -1) }
    package func publish(lines: [LineFile], closing files: [ClosingFile]) throws(Problem) -> String { "" }
    package func discard() {}
}

extension OutputDestination {
    /// Resolve and check every device, write nothing.
    public static let dryRun = OutputDestination(DryRun())

    struct DryRun: OutputDestination.Kind {
        var isDryRun: Bool { true }
        func open(holdsSecrets: Bool, keep: Int) throws(Problem) -> any OutputContainer { NoOutput() }
    }
}
