import AppConfigCore
import Digest
import Dispatch
import Foundation
import Synchronization

/// The inputs' fingerprints (size and SHA-256) for the manifest's header. Started when the render
/// starts, on one thread beside it (hashing beside the inventory's load, or on every core beside
/// the render, slowed the job); or, by a night that must know them first, each file on a core.
final class FingerprintTask: @unchecked Sendable {
    /// Hashing on every core, for a night that waits for it at once.
    private let group = DispatchGroup()
    /// Hashing beside the render, yielding to it (`WorkBeside(yielding:)`).
    private var beside: WorkBeside<Void, Never>?
    private var result: [(String, String)] = []
    private let fixed: [(String, String)]
    private let started = Mutex(false)
    /// The header's input lines: each file by name (nil: none given), in order.
    let files: [(name: String, path: String?)]

    init(job: RenderJob) {
        var files: [(String, String?)] = [("spec", job.spec), ("values", job.values), ("inventory", job.sources.inventory)]
        var fixed: [(String, String)] = []
        switch job.sources.directory {
        case .ldif(let path): files.append(("directory", path))
        case .ldap(let c): fixed.append(("directory", "ldap " + c.url))
        case nil: files.append(("directory", nil))
        }
        self.files = files
        self.fixed = fixed
    }

    /// Fingerprints made before hashing started, by path (the directory's, by its image's check).
    private let known = Mutex<[String: String]>([:])

    /// The fingerprint of an input file, made now: the one the manifest gives, unless hashing
    /// already began (then that run's own).
    func fingerprint(of path: String) -> String {
        let fingerprint = Fingerprint.of(path)
        record(fingerprint, of: path)
        return fingerprint
    }

    /// A fingerprint known without hashing (a directory file as it was when its image was made):
    /// the one the manifest gives, unless hashing already began.
    func record(_ fingerprint: String, of path: String) { known.withLock { $0[path] = fingerprint } }

    /// Starts hashing (once): the files one after another, or each on a thread of its own.
    func start(concurrently: Bool = false) {
        guard started.withLock({ s in defer { s = true }; return !s }) else { return }
        let inputs = files, before = fixed, made = known.withLock { $0 }
        @Sendable func hashAll() {
            let prints = Mutex([String](repeating: "-", count: inputs.count))
            @Sendable func hash(_ i: Int) {
                if let path = inputs[i].1 {
                    let fingerprint = made[path] ?? Fingerprint.of(path)
                    prints.withLock { $0[i] = fingerprint }
                }
            }
            if concurrently { Parallelism.concurrentPerform(iterations: inputs.count, execute: hash) } else { inputs.indices.forEach(hash) }
            let values = prints.withLock { $0 }
            self.result = before + zip(inputs, values).map { ($0.0, $1) }
        }
        if concurrently { DispatchQueue.global().async(group: group, execute: hashAll) } else { beside = WorkBeside(yielding: true, hashAll) }
    }

    func wait() -> [(String, String)] {
        start(concurrently: true)
        finish()
        return result
    }

    /// Waits for hashing that was started; nothing when it was not.
    func finish() {
        guard started.withLock({ $0 }) else { return }
        group.wait()
        beside?.value()
    }

    /// Whether a fingerprint (`SIZE SHA256`) may be the file's as it is now: its size, read
    /// without hashing (an export that changed mostly changed its size).
    func mayBe(_ fingerprint: String?, of path: String?) -> Bool {
        guard let path else { return fingerprint == "-" }
        var info = stat()
        guard stat(path, &info) == 0, let fingerprint, let size = fingerprint.split(separator: " ").first else { return false }
        return size == String(info.st_size)
    }
}

extension RenderJob {
    /// The manifest's header: the program, format, delivery and shard, the inputs' fingerprints,
    /// and the fingerprint of every other setting that changes the output's bytes.
    func manifestHeader(_ compiled: CompiledJob, fingerprints: [(String, String)]) -> [(String, String)] {
        [("program", compiled.program.metadata.hashHex), ("format", batch.format.rawValue), ("delivery", compiled.delivery.delivery.rawValue),
         ("shard", batch.shard.description)] + fingerprints + [("options", compiled.optionsFingerprint), ("render", renderSettings(compiled.delivery))]
    }

    /// SHA-256 of what turns a device's inputs into its output besides its program (which its
    /// input digest holds): the digest's scheme, the format, the delivery as resolved. Two
    /// generations with the same line give equal outputs for equal input digests, whatever else
    /// (inputs, guards, `--changed-only`) differs: what lets a night carry a device unrendered.
    func renderSettings(_ delivery: ResolvedDelivery) -> String {
        let text = "inputs 1\nformat=\(batch.format.rawValue)\nnesting=\(delivery.xmlNesting)\ndelivery=\(delivery)"
        return SHA256Digest(of: Array(text.utf8)).hex
    }

    /// SHA-256 of the settings that change what is rendered and not already in the header: the
    /// delivery as resolved (an asset URL with or without its last `/` is the same delivery), the
    /// extensions' files with their fingerprints, how the inventory and the directory are read and
    /// joined, and whether the generation holds only the changes. Not the output's place, the
    /// guards, threads or report. A setting spelt another way
    /// for the same output (a column's case) costs a render, never a skipped change.
    func optionsFingerprint(_ delivery: ResolvedDelivery) -> String {
        var lines: [String] = []
        func add(_ name: String, _ value: Any?) { lines.append(name + "=" + (value.map { "\($0)" } ?? "-")) }
        add("delivery", delivery)
        for e in self.delivery.extensions {
            add("extension", e.composedID + " " + Fingerprint.of(e.values) + " " + (e.spec.map(Fingerprint.of) ?? "-"))
        }
        let i = sources.inventoryOptions
        add("delimiter", i.delimiter); add("device-key", i.deviceKeyColumn); add("user-key", i.userKeyColumn)
        add("preset", i.preset.map { "\($0)" }); add("strict", i.strict); add("strict-inventory", i.strictInventory)
        for (v, c) in i.columnMap.map({ ("\($0.key)", $0.value) }).sorted(by: { $0.0 < $1.0 }) { add("map " + v, c) }
        for (v, c) in i.userColumnMap.map({ ("\($0.key)", $0.value) }).sorted(by: { $0.0 < $1.0 }) { add("map " + v, c) }
        let a = sources.attributes
        add("user-attribute", a.joinAttribute)
        for (v, names) in a.sources.map({ ("\($0.key)", $0.value) }).sorted(by: { $0.0 < $1.0 }) { add("attribute " + v, names.joined(separator: ",")) }
        add("allow-unjoined", allowUnjoined)
        // A --changed-only generation holds only what changed: a whole night after it is another output.
        add("changed-only", nightly.changedOnly)
        return SHA256Digest(of: Array(lines.joined(separator: "\n").utf8)).hex
    }
}
