import AppConfigCore
import AppConfigOutput
import Digest

extension Manifest {
    /// The last line of a manifest: `end`, the number of device lines and the check of their
    /// bytes, tab-separated. A manifest cut short, even at a line's end, does not match it.
    static func trailer(count: Int, check: EndCheck) -> [UInt8] { Array("end\t\(count)\t\(check.text)\n".utf8) }

    /// The check of device lines, taken as they go by: what an end line holds, SHA-256 for a
    /// version 2 or 3 manifest, XXH3-128 for version 4 (the one written).
    final class LinesCheck {
        private let sha256: SHA256.Hasher?
        private let xxh3: XXH3Hasher?

        init(version: Int = 4) {
            (sha256, xxh3) = version >= 4 ? (nil, XXH3Hasher()) : (SHA256.Hasher(), nil)
        }

        func update(_ bytes: ByteView) {
            sha256?.update(bytes)
            xxh3?.update(bytes)
        }

        func finish() -> EndCheck { xxh3.map { .xxh3($0.finish()) } ?? .sha256(sha256!.finish()) }
    }

    /// The manifest's first lines: its version, `NAME VALUE` per header field, a blank line.
    static func headerText(_ header: [(String, String)]) -> [UInt8] {
        var out = Array((versionLines.last! + "\n").utf8)
        for (name, value) in header { out += Array("\(name) \(value)\n".utf8) }
        out.append(0x0A)
        return out
    }

    /// One device's line: digest, path, key (bytes below 0x21, `%` and DEL %-escaped), input
    /// digest. A key that is its own file name (most) needs no escape: its line is made on the
    /// stack and appended at once (piece by piece, six appends a line).
    /// `name`: the key's path name, when it was made already.
    @inline(__always)
    static func appendLine(key: ByteView, name: OutputNames.PathName? = nil, extension ending: StaticString, digest: SHA256Digest,
                           inputs: UInt64, to out: inout [UInt8]) {
        let name = name ?? OutputNames.PathName(key: key)
        if name.isOwn {
            out.append(room: 89 + 2 * OutputNames.maxNameLength + ending.utf8CodeUnitCount) { line in
                line.write(hex: digest)
                line.write(0x09)
                line.writeSafeRelativePath(key, folder: name.folder, extension: ending)
                line.write(0x09)
                line.write(key)
                line.write(0x09)
                line.write(inputDigest: inputs)
                line.write(0x0A)
            }
            return
        }
        appendLineByPieces(key: key, extension: ending, digest: digest, inputs: inputs, to: &out)
    }

    /// A line with its path given (DDM: the assets the device's set names).
    static func appendLine(key: ByteView, path: some Collection<UInt8>, digest: SHA256Digest, inputs: UInt64, to out: inout [UInt8]) {
        appendLine(key: key, digest: digest, inputs: inputs, to: &out) { $0 += path }
    }

    /// A line whose path `path` appends in its place (a DDM device's assets: no array of its own
    /// per line).
    static func appendLine(key: ByteView, digest: SHA256Digest, inputs: UInt64, to out: inout [UInt8], path: (inout [UInt8]) -> Void) {
        digest.appendHex(to: &out)
        out.append(0x09)
        path(&out)
        out.append(0x09)
        appendEscapingRuns(key, to: &out, where: { b, _ in b < 0x21 || b == UInt8(ascii: "%") || b == 0x7F }, escape: appendPercentEscaped)
        out.append(0x09)
        out.append(room: 16) { $0.write(inputDigest: inputs) }
        out.append(0x0A)
    }

    /// `appendLine` piece by piece, for any key (the tests' reference too).
    static func appendLineByPieces(key: ByteView, extension ending: StaticString, digest: SHA256Digest, inputs: UInt64, to out: inout [UInt8]) {
        var path: [UInt8] = []
        OutputNames.appendRelativePath(key, extension: ending, to: &path)
        appendLine(key: key, path: path, digest: digest, inputs: inputs, to: &out)
    }
}
