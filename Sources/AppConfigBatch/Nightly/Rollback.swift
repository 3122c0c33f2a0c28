import AppConfigCore
import AppConfigOutput
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// `appconfig rollback OUT [--to GENERATION]`: a generation before the current one published
/// again, as a new generation (a step forward: the next night's `--since` compares with it, and
/// a push sends what differs from tonight's). Its files are hard links to the earlier
/// generation's, its closing files copies; published by the same symlink switch as a render,
/// under the output's lock, held back past `--max-change-ratio` unless `--force`.
package struct Rollback {
    /// What the rollback published.
    package struct Summary: Sendable {
        /// The generation the output named before, and the one published again.
        package var from = "", to = ""
        package var output = ""
        /// Devices whose configuration differs between the two (added, removed or changed).
        package var changed = 0
        package var devices = 0
    }

    package var output: String
    /// The generation to publish again (its folder name, `g…`); nil: the one before the current.
    package var target: String?
    package var keep = 2
    package var maxChangeRatio = 0.5
    package var force = false

    package init(output: String) { self.output = output }

    package func run() throws(Problem) -> Summary {
        let path = PathText.normalized(output)
        guard let current = GenerationFolder.published(path) else {
            throw Problem(.outputExists, at: Location(file: path), "\(path) is not a published folder output: nothing to roll back")
        }
        let lock = try OutputLock(output: path)
        defer { withExtendedLifetime(lock) {} }
        let root = path + ".generations"
        let currentName = PathText.name(of: current)
        let complete = Generations.list(in: root).filter(\.complete).sorted { ($0.sequence, $0.name) < ($1.sequence, $1.name) }
        let names = complete.map(\.name)
        let chosen: String
        if let target {
            guard names.contains(target), target != currentName else {
                throw Problem(.outputExists, at: Location(file: root),
                              "\(target) is not a complete earlier generation of \(path); they are: " + names.filter { $0 != currentName }.joined(separator: ", "))
            }
            chosen = target
        } else {
            guard let i = names.firstIndex(of: currentName), i > 0 else {
                throw Problem(.outputExists, at: Location(file: root), "\(path) keeps no generation before its current one (\(currentName)): nothing to roll back to")
            }
            chosen = names[i - 1]
        }
        let source = root + "/" + chosen
        var summary = Summary(from: currentName, to: chosen, output: path)
        (summary.changed, summary.devices) = try Self.difference(try Manifest.load(current), try Manifest.load(source))
        let share = Double(summary.changed) / Double(max(summary.devices, 1))
        if share > maxChangeRatio && !force {
            throw Problem(.outputExists, at: Location(file: path),
                          "rolling back to \(chosen) changes \(summary.changed) of \(summary.devices) devices, more than --max-change-ratio \(maxChangeRatio): --force rolls back anyway; nothing was published")
        }
        let folder = try GenerationFolder(path: path, keep: max(keep, 2))
        do throws(Problem) {
            var closing: [ClosingFile] = []
            try folder.linkFiles(of: source, code: OutputCode.outputExists)
            for name in ["index.jsonl", "declarations.jsonl", "assets.live"] where access(source + "/" + name, F_OK) == 0 {
                do { closing.append(ClosingFile(name, try readFileBytes(source + "/" + name, limit: 1 << 34))) } catch { throw error.problem }
            }
            do { closing.append(ClosingFile(OutputNames.manifestFile, try readFileBytes(source + "/" + OutputNames.manifestFile, limit: 1 << 34))) } catch { throw error.problem }
            _ = try folder.publish(closing: closing)
        } catch {
            folder.discard()
            throw error
        }
        return summary
    }

    /// Devices added, removed or of another digest between two manifests (both in key order), and
    /// how many the larger has.
    static func difference(_ a: Manifest, _ b: Manifest) throws(Problem) -> (changed: Int, devices: Int) {
        var i = 0, j = 0, changed = 0
        while i < a.count || j < b.count {
            if i == a.count { changed += 1; j += 1; continue }
            if j == b.count { changed += 1; i += 1; continue }
            let order = a.withKey(at: i) { ka in b.withKey(at: j) { kb in ka.elementsEqual(kb) ? 0 : (Array(ka).lexicographicallyPrecedes(Array(kb)) ? -1 : 1) } }
            if order == 0 {
                if a.digest(at: i) != b.digest(at: j) { changed += 1 }
                i += 1; j += 1
            } else if order < 0 { changed += 1; i += 1 } else { changed += 1; j += 1 }
        }
        return (changed, max(a.count, b.count))
    }
}
