import AppConfigCore
import AppConfigOutput
import AppConfigCompiler
import AppConfigRender
import AppConfigSources
import AppConfigSpec
import Digest
import Foundation

extension RenderJob {
    /// The output's and the report's paths name something this run can make beside its folder:
    /// `--out .` would lock `..lock` and publish a symlink over the working folder, `--out ""`
    /// rendered the whole fleet before failing. Checked before anything is read.
    func checkPaths() throws(Problem) {
        var named: [(String, String)] = []
        if let path = output.path { named.append((output.option ?? "--out", path)) }
        if let report { named.append(("--report", report)) }
        for (option, path) in named {
            let last = PathText.name(of: path)
            if path.isEmpty || last == "." || last == ".." || last == "/" {
                throw Problem(.outputPath, at: Location(file: path),
                              "\(option) \"\(path)\" names no \(option == "--report" ? "folder" : "output") of its own; give a path such as ./out")
            }
        }
        // A previous generation is a folder, its manifest or its tar: a FIFO, a device or a socket
        // would block the night or feed it anything, refused before it is opened.
        if let since = nightly.since {
            var info = stat()
            if stat(since, &info) == 0, ![S_IFREG, S_IFDIR].contains(info.st_mode & S_IFMT) {
                throw Problem(.manifestSyntax, at: Location(file: since),
                              "--since \(since) is not a file or a folder (a FIFO, a device or a socket): give a generation folder, its manifest.tsv or its tar")
            }
        }
    }

    /// The folder or archive the run writes (locked for the run), nil for a stream or a dry run.
    var outputPath: String? { output.path }

    /// The generation a night compares with: `--since`'s, else the one the output holds now (nil
    /// for a first night, or an output nothing is read back from). Its folder, when it is one, is
    /// where a folder output carries the files it did not write from.
    var previousGeneration: PublishedGeneration? {
        if let since = nightly.since { return PublishedGeneration(at: since) }
        return output.current
    }

    /// `since`, or for a folder output the generation published now; nil when there is none (a
    /// first night, when `--changed-only` writes every device).
    /// For DDM its paths are kept: they name the assets each device's set names.
    /// The generation to compare with: `--since`'s (refused when it was made another way), else
    /// the output's current one (when it was made another way, a night with nothing to compare
    /// with: a warning).
    func previousManifest(warning: (Problem) -> Void = { _ in }) throws(Problem) -> Manifest? {
        let paths = delivery.delivery == .ddm
        if let since = nightly.since {
            let manifest = try Manifest.load(since, keepsPaths: paths)
            if let difference = difference(from: manifest) {
                throw Problem(.sinceMismatch, at: Location(file: since), "the previous generation (\(since)) \(difference): compared, its devices would "
                              + "read as removed or changed; give --since a generation made the same way, or none")
            }
            return manifest
        }
        guard let current = output.current else { return nil }
        let manifest = try Manifest.load(current, keepsPaths: paths)
        if let difference = difference(from: manifest) {
            var note = Problem(.sinceMismatch, at: Location(file: current.path),
                               "the output's current generation (\(current.path)) \(difference): not compared; every device is written, none is removed")
            note.severity = .warning
            warning(note)
            return nil
        }
        return manifest
    }

    /// How a previous generation was made otherwise than this run makes its own, nil when it was
    /// not: a manifest without its program, format, delivery or shard line (a header with lines
    /// deleted read as every device unchanged), or another format, delivery or shard (another
    /// shard's manifest made live devices removals). The program may differ: that is a change of
    /// values, and the digests say which devices it changed.
    func difference(from manifest: Manifest) -> String? {
        let expected = [("format", batch.format.rawValue), ("delivery", delivery.delivery.rawValue), ("shard", batch.shard.description)]
        let header = Dictionary(manifest.header.map { ($0.name, $0.value) }, uniquingKeysWith: { a, _ in a })
        for name in ["program"] + expected.map(\.0) where header[name] == nil { return "has no \(name) line in its manifest" }
        for (name, value) in expected where header[name] != value { return "was made with \(name) \(header[name]!), this run's is \(value)" }
        return nil
    }
}
