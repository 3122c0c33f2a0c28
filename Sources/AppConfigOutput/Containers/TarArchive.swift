import AppConfigCore
import Foundation
import Synchronization

/// A ustar archive of the generation: the devices' members in device-key order (the chunk writer
/// writes each chunk once every chunk before it is written), then the line files and the closing
/// files (the manifest last). To a file (written under a temporary name and renamed when complete,
/// its manifest then also beside it as `FILE.manifest.tsv` for a quick `--since`) or to a stream
/// (standard output: the consumer sees it as it is written).
package final class TarArchive: OutputContainer, @unchecked Sendable {
    private let file: AtomicFile?
    private let descriptor: Int32
    package let name: String
    /// Where line files wait to be appended: beside the archive, or the temporary folder for a stream.
    private let scratchFolder: String
    /// The members, then the line files, past the page cache where the file system takes that
    /// (`DirectWrites`); ended before the closing files, whose headers are written in place.
    private let direct: Mutex<DirectWrites?>

    /// An archive written to `path`, published by a rename. Temporaries that died with their run
    /// (`FILE.tmp-PID`, the caller holding the output's lock) are removed first. An archive that
    /// will hold secret documents is its owner's alone (0600), from its temporary on.
    package init(path: String, holdsSecrets: Bool = false) throws(Problem) {
        AtomicFile.removeStale(beside: path)
        let file = try AtomicFile(path: path, mode: holdsSecrets ? 0o600 : 0o644)
        self.file = file
        descriptor = file.descriptor
        name = path
        let folder = PathText.folder(of: path)
        scratchFolder = folder.isEmpty ? "." : folder
        direct = Mutex(DirectWrites(path: file.temporary, shownAs: path))
    }

    /// An archive streamed to a descriptor (standard output); publishing only ends it.
    package init(streamingTo descriptor: Int32, name: String = "-") {
        file = nil
        self.descriptor = descriptor
        self.name = name
        scratchFolder = FileManager.default.temporaryDirectory.path
        direct = Mutex(nil)
    }

    /// A member for the chunk writer: an archive's members go in key order.
    package func add(_ bytes: ByteView, path: (inout [UInt8]) -> Void, once: Bool, secret: Bool, members: inout [UInt8]) throws(Problem) {
        Tar.appendMember(to: &members, path: path, body: { $0.append(bytes) }, mode: secret ? Tar.secretMode : nil)
    }

    package func writeMembers(_ pieces: [ByteView]) throws(Problem) {
        try direct.withLock { direct throws(Problem) in
            if let direct { try direct.write(pieces) } else { try writeAllGathered(descriptor, pieces, path: name) }
        }
    }

    /// Direct writing ended: what is staged written, the descriptor at the archive's end.
    private func endDirect() throws(Problem) {
        try direct.withLock { direct throws(Problem) in
            defer { direct = nil }
            try direct?.finish(through: descriptor)
        }
    }

    package func lineFile(_ member: String) throws(Problem) -> LineFile {
        try LineFile.scratch(member, in: scratchFolder, shownAs: name + " (\(member))")
    }

    package func publish(lines: [LineFile], closing files: [ClosingFile]) throws(Problem) -> String {
        for line in lines {
            try direct.withLock { direct throws(Problem) in
                if let direct { try appendMember(line, direct: direct) } else { try appendMember(line) }
            }
            try line.close()
        }
        try endDirect()
        return try Tar.end(descriptor, name: name, closing: files, file: file, copying: OutputNames.manifestFile)
    }

    package func discard() {
        direct.withLock { $0 = nil }
        file?.discard()
    }

    /// A line file as a member, read into the direct writes' blocks (a 10M manifest is 1.4 GB:
    /// copied by the kernel, it was as many bytes of pages to find and write back at the commit).
    private func appendMember(_ line: LineFile, direct: DirectWrites) throws(Problem) {
        let size = line.size
        try Tar.header(named: line.name, size: size).withView { header throws(Problem) in try direct.write([header]) }
        guard lseek(line.descriptor, 0, SEEK_SET) == 0 else { throw Problem(.outputWrite, at: Location(file: name), "cannot read \(line.name) back: \(systemError())") }
        try direct.copy(from: line.descriptor, count: size, shownAs: line.name)
        try [UInt8](repeating: 0, count: Tar.padding(for: size)).withView { padding throws(Problem) in try direct.write([padding]) }
    }

    /// A line file as a member, copied by the kernel (`sendfile`; through a buffer where it
    /// cannot: a stream, another file system on an old kernel).
    private func appendMember(_ line: LineFile) throws(Problem) {
        let source = line.descriptor, size = line.size
        try writeAll(descriptor, Tar.header(named: line.name, size: size), path: name)
        guard lseek(source, 0, SEEK_SET) == 0 else { throw Problem(.outputWrite, at: Location(file: name), "cannot read \(line.name) back: \(systemError())") }
        var left = size
        while left > 0 {
            let n = sendfile(descriptor, source, nil, left)
            if n > 0 { left -= n; continue }
            if n < 0 && errno == EINTR { continue }
            break
        }
        var buffer = [UInt8](repeating: 0, count: left > 0 ? 1 << 20 : 0)
        while left > 0 {
            let n = buffer.withUnsafeMutableBytes { read(source, $0.baseAddress, min($0.count, left)) }
            guard n > 0 else { throw Problem(.outputWrite, at: Location(file: name), "cannot read \(line.name) back: \(systemError())") }
            try writeAll(descriptor, n == buffer.count ? buffer : Array(buffer[0..<n]), path: name)
            left -= n
        }
        try writeAll(descriptor, [UInt8](repeating: 0, count: Tar.padding(for: size)), path: name)
    }
}

extension OutputDestination {
    /// A tar archive, written under a temporary name and renamed when complete.
    public static func tar(_ path: String) -> OutputDestination { OutputDestination(ArchiveFile(file: path)) }
    /// A tar stream on standard output (no atomicity: the consumer sees it as it is written).
    public static let tarStdout = OutputDestination(ArchiveStream())

    struct ArchiveFile: OutputDestination.Kind {
        let file: String
        var path: String? { file }
        var option: String? { "--tar" }
        func removeStale() { AtomicFile.removeStale(beside: file) }
        func open(holdsSecrets: Bool, keep: Int) throws(Problem) -> any OutputContainer { try TarArchive(path: file, holdsSecrets: holdsSecrets) }
    }

    struct ArchiveStream: OutputDestination.Kind {
        var writesClosingFilesAsMade: Bool { false }
        func open(holdsSecrets: Bool, keep: Int) throws(Problem) -> any OutputContainer { TarArchive(streamingTo: 1) }
    }
}
