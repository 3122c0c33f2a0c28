import AppConfigCore
import AppConfigOutput
import Digest
import Foundation

/// `appconfig merge`: the outputs of shards `0/N` ... `N-1/N` of one run joined into the output a
/// single run over the whole fleet writes, byte for byte: device files in device-key order (an
/// archive), a DDM asset stored once where two shards share it, and the closing files (index,
/// declarations, live assets, the manifest with its end line) merged in key order. Archives merge
/// into an archive (written under a temporary name, renamed when complete), folder outputs into a
/// folder output (a new generation whose files are hard links to the shards', published by the
/// same symlink switch as a render). Nothing is written until every input is read and checked.
package struct ShardMerge {
    package enum Output: Sendable {
        case tar(String)
        case folder(String, keep: Int)

        var path: String { switch self { case .tar(let p), .folder(let p, _): p } }
    }

    /// What the merge made.
    package struct Summary: Sendable {
        package var shards = 0
        /// Devices in the merged manifest (rendered, and carried from an earlier generation).
        package var devices = 0
        /// Devices whose files the merged output holds (the index's device lines).
        package var written = 0
        /// Removal lines (`--remove-missing`) merged.
        package var removed = 0
        package var output = ""
    }

    package init() {}

    /// Merges `inputs` (every shard of one run, each once) into `output`. `cancelled` is asked
    /// between steps: true ends the merge with nothing published (`Problem` `.interrupted`).
    /// `beforePublish` runs once the merged output is written and before it is published, with its
    /// summary (the merged report: one that cannot be written publishes nothing).
    package func run(inputs paths: [String], into output: Output, cancelled: () -> Bool = { false },
                    beforePublish: (Summary) throws(Problem) -> Void = { _ in }) throws(Problem) -> Summary {
        let last = PathText.name(of: output.path)
        if output.path.isEmpty || last == "." || last == ".." || last == "/" {
            throw Problem(.outputPath, at: Location(file: output.path), "\"\(output.path)\" names no output of its own; give a path such as ./merged.tar")
        }
        guard !paths.isEmpty else { throw Problem(.mergeShards, "give the shard outputs to merge") }
        let outputs = try paths.map { p throws(Problem) in try ShardOutput(p) }
        try Self.check(outputs, into: output)
        let inputs = try outputs.sorted { $0.shard.index < $1.shard.index }.map { o throws(Problem) in try Input(o) }
        let ddm = inputs[0].output.manifest.header.first { $0.name == "delivery" }?.value == Delivery.ddm.rawValue
        let files = ddm && !inputs[0].output.closingNames.contains("declarations.jsonl")
        let lock = try OutputLock(output: output.path)
        defer { withExtendedLifetime(lock) {} }
        if cancelled() { throw Self.interrupted }

        // The devices in key order across the shards: each device's members and declaration lines
        // as the single run wrote them (its assets the first time one comes, in the whole fleet).
        var plan = Plan()
        var seen = Set<AssetName>()
        if ddm { Self.planOpening(inputs, files: files, into: &plan) }
        try Self.inKeyOrder(inputs, \.devices) { (s: Int, line: IndexLine) throws(Problem) in
            let input = inputs[s]
            let assets = try ddm ? Self.assets(of: input.key(line), in: input) : []
            var fresh: [AssetName] = []
            for a in assets where input.seen.insert(a).inserted { fresh.append(a) }
            let membersEach = files ? 2 : 1
            for a in fresh {
                let kept = seen.insert(a).inserted
                if !input.output.isTar { input.paths.append((Self.path(of: a), a.form >= 4 ? nil : a.digest)) }
                if input.output.isTar {
                    try Self.expectMember(input, named: a)
                    if kept { plan.members.append((s, input.member, membersEach)) }
                    input.member += membersEach
                }
                if ddm && !files {
                    if kept { plan.declarations.append((s, input.declaration, 1)) }
                    input.declaration += 1
                }
            }
            // The device's own members: its file (plist, command), or in the files layout its
            // configuration, activation and set; its configuration and activation lines otherwise.
            let own = ddm ? (files ? 3 : 0) : 1
            let ownPaths = try Self.ownPaths(of: line, in: input, files: files, count: own, fileDigest: !ddm)
            if !input.output.isTar { input.paths += ownPaths }
            if input.output.isTar && own > 0 {
                try Self.expectMembers(input, ownPaths)
                plan.members.append((s, input.member, own))
                input.member += own
            }
            if ddm && !files {
                guard input.declaration + 2 < input.declarationLines.count else {
                    throw Problem(.mergeInput, at: Location(file: input.output.path), "\(input.output.path): declarations.jsonl ends before the index's devices do")
                }
                plan.declarations.append((s, input.declaration, 2))
                input.declaration += 2
            }
            plan.index.append((s, line.line))
        }
        try Self.inKeyOrder(inputs, \.removals) { (s: Int, line: IndexLine) throws(Problem) in
            if line.hasFile {
                let paths = try Self.ownPaths(of: line, in: inputs[s], files: false, count: 1, fileDigest: !ddm)
                inputs[s].paths += paths
                if inputs[s].output.isTar {
                    try Self.expectMembers(inputs[s], paths)
                    plan.members.append((s, inputs[s].member, 1))
                    inputs[s].member += 1
                }
            }
            plan.index.append((s, line.line))
            plan.removed += 1
        }
        for input in inputs {
            if case .tar(let members) = input.output.container, input.member != members.count {
                throw Problem(.mergeInput, at: Location(file: input.output.path),
                              "\(input.output.path) holds \(members.count) device members, its index accounts for \(input.member): not an archive appconfig wrote")
            }
            if ddm && !files && input.declaration + 1 != input.declarationLines.count {
                throw Problem(.mergeInput, at: Location(file: input.output.path), "\(input.output.path): declarations.jsonl holds lines its index does not account for")
            }
        }
        if cancelled() { throw Self.interrupted }

        let closing = try closingFiles(inputs, plan: plan)
        var summary = Summary(shards: inputs.count, devices: inputs.reduce(0) { $0 + $1.output.manifest.count },
                              written: plan.index.count - plan.removed, removed: plan.removed)
        summary.output = output.path
        switch output {
        case .tar(let path):
            AtomicFile.removeStale(beside: path)
            let file = try AtomicFile(path: path, mode: inputs.contains { $0.output.holdsSecrets } ? 0o600 : 0o644)
            do {
                try Self.writeMembers(plan.members, of: inputs, to: file.descriptor, path: path, cancelled: cancelled)
                try beforePublish(summary)
                summary.output = try Tar.end(file.descriptor, name: path, closing: closing, file: file, copying: OutputNames.manifestFile)
            } catch {
                file.discard()
                throw error
            }
        case .folder(let path, let keep):
            let folder = try GenerationFolder(path: path, keep: keep)
            do {
                for input in inputs {
                    guard case .folder(let generation) = input.output.container else { continue }
                    try Self.linkFiles(input.paths, of: generation, into: folder, cancelled: cancelled)
                }
                try beforePublish(summary)
                summary.output = try folder.publish(closing: closing)
            } catch {
                folder.discard()
                throw error
            }
        }
        return summary
    }

    static let interrupted = Problem(.outputWrite, "interrupted: nothing was published")

    /// Every input an output of one run's settings, every shard of one count once, of the
    /// output's container.
    private static func check(_ outputs: [ShardOutput], into output: Output) throws(Problem) {
        let first = outputs[0]
        let count = first.shard.count
        var byIndex: [Int: ShardOutput] = [:]
        for o in outputs {
            switch (o.isTar, output) {
            case (true, .folder): throw Problem(.mergeInput, at: Location(file: o.path), "\(o.path) is an archive: archives merge into an archive (--tar)")
            case (false, .tar): throw Problem(.mergeInput, at: Location(file: o.path), "\(o.path) is a folder output: folder outputs merge into a folder output (--out)")
            default: break
            }
            guard o.shard.count == count else {
                throw Problem(.mergeShards, at: Location(file: o.path), "\(o.path) is shard \(o.shard) but \(first.path) is shard \(first.shard): the shards of one run have one count")
            }
            if let other = byIndex[o.shard.index] {
                throw Problem(.mergeShards, at: Location(file: o.path), "shard \(o.shard) is given twice: \(other.path) and \(o.path)")
            }
            byIndex[o.shard.index] = o
            for (name, value) in first.manifest.header where name != "shard" {
                let theirs = o.manifest.header.first { $0.name == name }?.value
                guard theirs == value else {
                    throw Problem(.mergeMismatch, at: Location(file: o.path),
                                  "\(o.path) was not made by the same run as \(first.path): its \(name) is \(theirs ?? "missing"), not \(value)")
                }
            }
            guard o.manifest.header.count == first.manifest.header.count else {
                throw Problem(.mergeMismatch, at: Location(file: o.path), "\(o.path) was not made by the same run as \(first.path): its manifest's header has other lines")
            }
            guard o.closingNames.sorted() == first.closingNames.sorted() else {
                throw Problem(.mergeMismatch, at: Location(file: o.path), "\(o.path) holds \(o.closingNames.joined(separator: ", ")), \(first.path) \(first.closingNames.joined(separator: ", ")): not one run's outputs")
            }
        }
        let missing = (0..<count).filter { byIndex[$0] == nil }
        if !missing.isEmpty {
            let names = missing.prefix(5).map { "\($0)/\(count)" }.joined(separator: ", ") + (missing.count > 5 ? " and \(missing.count - 5) more" : "")
            throw Problem(.mergeShards, "shard\(missing.count == 1 ? "" : "s") \(names) missing: a merge takes every shard of the run (given: \(outputs.count) of \(count))")
        }
    }

    /// What the merged output holds, in order: runs of members (shard, first member, count),
    /// runs of declaration lines (shard, first line, count), index lines (shard, bytes).
    private struct Plan {
        var members: [(Int, Int, Int)] = []
        var declarations: [(Int, Int, Int)] = []
        var index: [(Int, Range<Int>)] = []
        var removed = 0
    }

    /// The status subscription each DDM shard wrote before its devices (`DDMEncoding.opening`):
    /// passed over in every shard, kept once, first.
    private static func planOpening(_ inputs: [Input], files: Bool, into plan: inout Plan) {
        let status = StatusSubscription()
        var kept = false
        for (s, input) in inputs.enumerated() {
            let holds: Bool
            switch input.output.container {
            case .tar(let members) where files:
                holds = !members.isEmpty && input.output.name(of: members[0]).elementsEqual(status.path.utf8)
                if holds {
                    if !kept { plan.members.append((s, 0, 1)) }
                    input.member = 1
                }
            case .folder(let generation) where files:
                holds = access(generation + "/" + status.path, F_OK) == 0
                if holds && !kept { input.paths.append((status.path, nil)) }
            default:
                let lines = input.declarationLines
                holds = !files && lines.count > 1 && input.declarations[lines[0]..<lines[1]].elementsEqual(status.line)
                if holds {
                    if !kept { plan.declarations.append((s, 0, 1)) }
                    input.declaration = 1
                }
            }
            kept = kept || holds
        }
    }

    /// Calls `body` with each line of `lines` of every shard, in device-key order across the
    /// shards (each shard's lines are in key order already). A key in two shards is refused.
    private static func inKeyOrder(_ inputs: [Input], _ lines: KeyPath<Input, [IndexLine]>,
                                   _ body: (Int, IndexLine) throws(Problem) -> Void) throws(Problem) {
        try inKeyOrder(inputs, count: { inputs[$0][keyPath: lines].count }, key: { inputs[$0].key(inputs[$0][keyPath: lines][$1]) }) {
            (s: Int, i: Int) throws(Problem) in try body(s, inputs[s][keyPath: lines][i])
        }
    }

    /// The k-way merge: calls `body` with (shard, item) for the `count(shard)` items of every
    /// shard in the order of their keys, refusing a key that two shards hold.
    private static func inKeyOrder(_ inputs: [Input], count: (Int) -> Int, key: (Int, Int) -> [UInt8],
                                   _ body: (Int, Int) throws(Problem) -> Void) throws(Problem) {
        var heap = KeyHeap()
        for s in inputs.indices where count(s) > 0 { heap.push(s, 0, key(s, 0)) }
        var previous: (shard: Int, key: [UInt8])?
        while let (s, i, k) = heap.pop() {
            if let p = previous, !p.key.lexicographicallyPrecedes(k) {
                throw Problem(.mergeShards, at: Location(file: inputs[s].output.path),
                              "device \(Problem.printable(String(decoding: k, as: UTF8.self))) is in \(inputs[p.shard].output.path) and \(inputs[s].output.path): shards of one run hold each device once")
            }
            previous = (s, k)
            try body(s, i)
            if i + 1 < count(s) { heap.push(s, i + 1, key(s, i + 1)) }
        }
    }

    /// The assets a written device's set names (its manifest line's path), found by walking the
    /// shard's manifest in step with its index.
    private static func assets(of key: [UInt8], in input: Input) throws(Problem) -> [AssetName] {
        let manifest = input.output.manifest
        while input.entry < manifest.count, manifest.withKey(at: input.entry, { Array($0).lexicographicallyPrecedes(key) }) { input.entry += 1 }
        guard input.entry < manifest.count, manifest.withKey(at: input.entry, { $0.elementsEqual(key) }) else {
            throw Problem(.mergeInput, at: Location(file: input.output.path),
                          "\(input.output.path): device \(Problem.printable(String(decoding: key, as: UTF8.self))) is in index.jsonl but not in the manifest")
        }
        var names: [AssetName] = []
        for path in manifest.path(at: input.entry).split(separator: UInt8(ascii: " ")) {
            guard let name = AssetName(path: path) else {
                throw Problem(.mergeInput, at: Location(file: input.output.path), "\(input.output.path): the manifest names \(String(decoding: path, as: UTF8.self)), not an asset")
            }
            names.append(name)
        }
        return names
    }

    /// The archive's next member must be the asset's file: the shard and its index agree.
    private static func expectMember(_ input: Input, named asset: AssetName) throws(Problem) {
        guard case .tar(let members) = input.output.container else { return }
        var expected: [UInt8] = []
        asset.appendPath(to: &expected)
        guard input.member < members.count, input.output.name(of: members[input.member]).elementsEqual(expected) else {
            throw Problem(.mergeInput, at: Location(file: input.output.path),
                          "\(input.output.path): member \(input.member + 1) is not \(String(decoding: expected, as: UTF8.self)), which its index names next: not an archive appconfig wrote")
        }
        // An asset is named by its bytes' SHA-256 (a secret document by a keyed hash, not checked here).
        if asset.form < 4, SHA256Digest(of: input.output.body(of: members[input.member])) != asset.digest {
            throw Problem(.mergeInput, at: Location(file: input.output.path),
                          "\(input.output.path): member \(String(decoding: expected, as: UTF8.self)) does not hold the bytes its name is the SHA-256 of")
        }
    }

    /// The merged closing files, in the order the shards hold them (the manifest last).
    private func closingFiles(_ inputs: [Input], plan: Plan) throws(Problem) -> [ClosingFile] {
        inputs[0].output.closingNames.map { name in
            switch name {
            case "index.jsonl":
                return ClosingFile(name: name) { emit throws(Problem) in
                    try Self.emitPieces(plan.index.lazy.map { (s, r) in (inputs[s].index, r) }, emit)
                }
            case "declarations.jsonl":
                return ClosingFile(name: name) { emit throws(Problem) in
                    try Self.emitPieces(plan.declarations.lazy.map { (s, first, n) in
                        let lines = inputs[s].declarationLines
                        return (inputs[s].declarations, lines[first]..<lines[first + n])
                    }, emit)
                }
            case "assets.live":
                // Repeats across shards are dropped by `LiveAssets`, which sorts and keeps each once.
                var names: [AssetName] = []
                for input in inputs {
                    for line in input.output.file(name).split(separator: 0x0A) { if let n = AssetName(path: line) { names.append(n) } }
                }
                return LiveAssets(others: names).closingFile(named: name)
            default:
                return ClosingFile(name: OutputNames.manifestFile) { write throws(Problem) in
                    let header = inputs[0].output.manifest.header.map { ($0.name, $0.name == "shard" ? Shard.whole.description : $0.value) }
                    try ClosingFile.emit(Manifest.headerText(header), to: write)
                    let hasher = Manifest.LinesCheck()
                    var lines: [UInt8] = []
                    var count = 0
                    func flush() throws(Problem) {
                        lines.withView { hasher.update($0) }
                        try ClosingFile.emit(lines, to: write)
                        lines.removeAll(keepingCapacity: true)
                    }
                    let manifests = inputs.map(\.output.manifest)
                    try Self.inKeyOrder(inputs, count: { manifests[$0].count }, key: { s, i in manifests[s].withKey(at: i) { Array($0) } }) {
                        (s: Int, i: Int) throws(Problem) in
                        let m = manifests[s]
                        m.withKey(at: i) { Manifest.appendLine(key: $0, path: m.path(at: i), digest: m.digest(at: i), inputs: m.inputs(at: i), to: &lines) }
                        count += 1
                        if lines.count >= 1 << 20 { try flush() }
                    }
                    try flush()
                    try ClosingFile.emit(Manifest.trailer(count: count, check: hasher.finish()), to: write)
                }
            }
        }
    }

    /// Hands `emit` the byte ranges in order, gathered into pieces of about a megabyte.
    private static func emitPieces<S: Sequence<([UInt8], Range<Int>)>>(_ ranges: S, _ emit: ClosingFile.Emit) throws(Problem) {
        var piece: [UInt8] = []
        piece.reserveCapacity(1 << 20 + 4096)
        for (bytes, range) in ranges {
            piece += bytes[range]
            if piece.count >= 1 << 20 {
                try ClosingFile.emit(piece, to: emit)
                piece.removeAll(keepingCapacity: true)
            }
        }
        try ClosingFile.emit(piece, to: emit)
    }

    /// Copies the planned runs of members from the shards' archives, a run of adjacent members of
    /// one shard in one write.
    private static func writeMembers(_ runs: [(Int, Int, Int)], of inputs: [Input], to fd: Int32, path: String,
                                     cancelled: () -> Bool) throws(Problem) {
        var pending: (shard: Int, range: Range<Int>)?
        func flush() throws(Problem) {
            guard let p = pending else { return }
            try inputs[p.shard].output.copy(p.range, to: fd, path: path)
            pending = nil
        }
        for (n, (s, first, count)) in runs.enumerated() {
            guard case .tar(let members) = inputs[s].output.container else { continue }
            let range = members[first].offset..<(members[first + count - 1].offset + members[first + count - 1].length)
            if let p = pending, p.shard == s, p.range.upperBound == range.lowerBound, p.range.count < 64 << 20 {
                pending = (s, p.range.lowerBound..<range.upperBound)
            } else {
                try flush()
                pending = (s, range)
            }
            if n % 65536 == 0, cancelled() { throw interrupted }
        }
        try flush()
    }

    /// Hard-links every file of a shard's generation but its closing files into the merged one
    /// (`GenerationFolder.linkFiles`: its owner's regular files only), each with the digest the
    /// index or its name gives where one does (a plist's, a command's, an asset's).
    private static func linkFiles(_ paths: [(String, SHA256Digest?)], of generation: String, into folder: GenerationFolder,
                                  cancelled: () -> Bool) throws(Problem) {
        var digests: [String: SHA256Digest] = [:]
        for (path, digest) in paths { if let digest { digests[path] = digest } }
        try folder.linkFiles(of: generation, code: JobCode.mergeInput, cancelled: { cancelled() ? Self.interrupted : nil }) { (path: String, file: String) throws(Problem) in
            guard let digest = digests[path] else { return }
            let bytes: [UInt8]
            do throws(FileReadError) { bytes = try readFileBytes(file, limit: 1 << 30) } catch { throw error.problem }
            guard SHA256Digest(of: bytes) == digest else {
                throw Problem(.mergeInput, at: Location(file: file), "\(file) does not hold the bytes its index names (SHA-256 differs): not the file appconfig wrote")
            }
        }
    }

    static let declarationsField = Array(#""declarations":[""#.utf8)

    /// An asset's path in the output.
    static func path(of a: AssetName) -> String {
        var out: [UInt8] = []
        a.appendPath(to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// The files a device's index line names: its own file (`path`, with the index's `sha256` when
    /// that is the file's, `fileDigest`: a plist's or a command's; a DDM set's is the device's
    /// digest), and in DDM's files layout its activation's and configuration's declaration files.
    private static func ownPaths(of line: IndexLine, in input: Input, files: Bool, count: Int, fileDigest: Bool) throws(Problem) -> [(String, SHA256Digest?)] {
        guard count > 0 else { return [] }
        let text = input.index[line.line]
        /// The string value of `"name":"..."` in the line (index lines' paths and digests need no
        /// escape); searched byte by byte (Foundation's generic `firstRange` was most of a merge).
        func field(_ name: StaticString) -> String? {
            let key = name.withUTF8Buffer { Array($0) }
            var i = text.startIndex
            while i + key.count + 4 <= text.endIndex {
                if text[i] == UInt8(ascii: "\""), text[i + key.count + 1] == UInt8(ascii: "\""), text[i + key.count + 2] == UInt8(ascii: ":"),
                   text[i + key.count + 3] == UInt8(ascii: "\""), text[(i + 1)..<(i + 1 + key.count)].elementsEqual(key) {
                    let start = i + key.count + 4
                    guard let end = text[start...].firstIndex(of: UInt8(ascii: "\"")) else { return nil }
                    return String(decoding: text[start..<end], as: UTF8.self)
                }
                i += 1
            }
            return nil
        }
        // Only for a message: an escape per device was a fifth of a merge.
        var key: String { Problem.printable(String(decoding: input.key(line), as: UTF8.self)) }
        guard let path = field("path") else {
            throw Problem(.mergeInput, at: Location(file: input.output.path), "\(input.output.path): the index line of device \(key) names no file")
        }
        let digest = !fileDigest ? nil : field("sha256").flatMap { hex in Array(hex.utf8).withView { SHA256Digest(hex: $0) } }
        var out: [(String, SHA256Digest?)] = [(path, digest)]
        if files {
            guard let r = text.firstRange(of: Self.declarationsField) else {
                throw Problem(.mergeInput, at: Location(file: input.output.path), "\(input.output.path): the index line of device \(key) names no declarations")
            }
            let ids = String(decoding: text[r.upperBound...].prefix { $0 != UInt8(ascii: "]") }, as: UTF8.self)
                .split(separator: ",").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "\"")) }
            out += ids.prefix(2).map { ("declarations/\($0).json", nil) }
        }
        guard out.count == count else {
            throw Problem(.mergeInput, at: Location(file: input.output.path), "\(input.output.path): the index line of device \(key) does not name its files")
        }
        return out
    }

    /// The archive's next members must be the files the index names for the device (in any order
    /// among them), each with the bytes its digest names.
    private static func expectMembers(_ input: Input, _ paths: [(String, SHA256Digest?)]) throws(Problem) {
        guard case .tar(let members) = input.output.container else { return }
        // A device has one to three files: found by comparing bytes, no table per device.
        var expected = paths
        for k in 0..<paths.count {
            let i = input.member + k
            guard i < members.count else {
                throw Problem(.mergeInput, at: Location(file: input.output.path), "\(input.output.path) ends before the members its index names")
            }
            let name = input.output.name(of: members[i])
            guard let j = expected.firstIndex(where: { name.elementsEqual($0.0.utf8) }) else {
                throw Problem(.mergeInput, at: Location(file: input.output.path),
                              "\(input.output.path): member \(i + 1) is \(Problem.printable(String(decoding: name, as: UTF8.self))), which its index does not name there: not an archive appconfig wrote")
            }
            if let digest = expected.remove(at: j).1, SHA256Digest(of: input.output.body(of: members[i])) != digest {
                throw Problem(.mergeInput, at: Location(file: input.output.path),
                              "\(input.output.path): member \(Problem.printable(String(decoding: name, as: UTF8.self))) does not hold the bytes its index names (SHA-256 differs)")
            }
        }
    }
}
