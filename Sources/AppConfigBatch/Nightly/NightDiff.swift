import AppConfigCompiler
import AppConfigCore
import AppConfigOutput
import AppConfigRender
import AppConfigSources
import AppConfigSpec
import Foundation
import LibPlist

/// A night's changes as a person reads them: per changed device, which keys go from what to what
/// (a secret's value masked), and why (an assignment that no longer matches, new values, the
/// device's own inputs); devices with the same change for the same cause grouped. `diff.jsonl` in
/// the report holds a line per device; `--plan` prints the groups and the removals. Tonight's
/// values are rendered again for the changed devices only; last night's come from the previous
/// generation's files when it is a folder (a tar's or a bare manifest's are not read: their
/// devices' changes are listed without the values they had).
struct NightDiff {
    struct KeyChange: Hashable {
        var key: String
        /// nil: the key was not there (or its earlier value is not known).
        var from: String?
        var to: String?
    }

    struct DeviceDiff {
        var device: String
        var keys: [KeyChange]
        var cause: String
    }

    var devices: [DeviceDiff] = []
    /// Devices changed past the limit, counted but not diffed.
    var undiffed = 0
    var counts = ChangeCounts()
    var removals: [String] = []
    /// Devices diffed at most: each is rendered again and decoded twice (about 30 µs): a night that
    /// changes a whole large fleet lists its first 20,000 and counts the rest.
    static let limit = 20_000

    /// `changed`: each changed device (its row) with its entry in the previous manifest, in
    /// device-key order (an added device has none: it is in changes.jsonl, with nothing to diff);
    /// `program(row)`: the device's program; `assignmentsOf(row)`: the names of its assignments;
    /// `baseProgram`: the program of devices without assignments.
    init(changes: ChangeSet, previous: Manifest, changed: [(row: Int, entry: Int)], previousFolder: String?, fleet: Fleet, spec: Spec, delivery: Delivery,
         baseProgram: Program, program: (Int) -> Program, assignmentsOf: (Int) -> [String]) {
        counts = changes.counts
        removals = changes.removedKeys.map { Problem.printable(String(decoding: $0, as: UTF8.self)) }
        let inventory = fleet.inventory
        undiffed = max(0, changed.count - Self.limit)
        let previousProgram = previous.header.first { $0.name == "program" }?.value
        let diffed = changed.prefix(Self.limit)
        let previousAssignments = previousFolder.map { Self.assignments(inIndex: $0 + "/index.jsonl", of: Set(diffed.map { inventory.deviceKey($0.row) })) } ?? [:]
        // The devices in a part per core, each part with a renderer and a slot plan per program.
        let rows = Array(diffed)
        var parts = [[DeviceDiff]](repeating: [], count: Parallelism.threads)
        parts.withWorkerSlots { parts in
            forEachRange(rows.count, parallelFrom: 512) { part, range in
                var renderers: [UInt64: (Renderer, Fleet.SlotPlan?)] = [:]
                var out: [DeviceDiff] = []
                for (row, entry) in rows[range] {
                    let p = program(row)
                    let (renderer, plan) = renderers[p.metadata.hash] ?? {
                        let made = (Renderer(image: ProgramImage(p), format: .xml), try? fleet.plan(for: p.slots))
                        renderers[p.metadata.hash] = made
                        return made
                    }()
                    out.append(Self.diff(row: row, renderer: renderer, plan: plan, fleet: fleet, spec: spec, delivery: delivery, previous: previous,
                                         entry: entry, previousFolder: previousFolder, previousProgram: previousProgram,
                                         programHash: p.metadata.hashHex, baseHash: baseProgram.metadata.hashHex,
                                         was: previousAssignments[inventory.deviceKey(row)], now: assignmentsOf(row)))
                }
                parts[part] = out
            }
        }
        devices = parts.flatMap { $0 }
    }

    /// One device's changes and their cause.
    static func diff(row: Int, renderer: Renderer, plan: Fleet.SlotPlan?, fleet: Fleet, spec: Spec, delivery: Delivery, previous: Manifest,
                     entry: Int?, previousFolder: String?, previousProgram: String?, programHash: String, baseHash: String,
                     was: [String]?, now: [String]) -> DeviceDiff {
        let key = fleet.inventory.deviceKey(row)
        var values: [Variable: String] = [:]
        if let plan {
            fleet.forEachValue(row: row, plan: plan) { slot, bytes in if let bytes { values[plan.variables[slot]] = String(decoding: bytes, as: UTF8.self) } }
        }
        // Tonight's bytes are this renderer's own: decoded without the guard hostile files need.
        let tonight = (try? renderer.renderCopy(values) { fleet.source(of: $0, row: row) }).flatMap { try? LibPlist.decode($0, prechecked: false) }
        var before: PlistValue?
        if let folder = previousFolder, let entry {
            before = previousConfiguration(folder: folder, key: key, manifestPath: String(decoding: previous.path(at: entry), as: UTF8.self), delivery: delivery)
        }
        var keys = keyChanges(before, tonight, known: before != nil)
        for i in keys.indices where spec.looksSecret(keyNamed: keys[i].key) {
            keys[i].from = keys[i].from.map { _ in "<secret>" }
            keys[i].to = keys[i].to.map { _ in "<secret>" }
        }
        // Why: the assignments that stopped or started matching, else the values, else its inputs.
        var cause: String
        if let was, was != now {
            let gone = was.filter { !now.contains($0) }.map { "assignment \($0) no longer matches" }
            let new = now.filter { !was.contains($0) }.map { "assignment \($0) now matches" }
            cause = (gone + new).joined(separator: "; ")
        } else if previousProgram != nil && previousProgram != programHash && previousProgram != baseHash {
            cause = "the spec or the values changed"
        } else {
            cause = "the device's inputs changed (inventory or directory)"
        }
        if keys.isEmpty { cause += "; its output's bytes differ in no key (an extension, a credential or the delivery)" }
        return DeviceDiff(device: key, keys: keys, cause: cause)
    }

    /// Each device's `assignments` in a generation's `index.jsonl`, for the devices in `keys`.
    static func assignments(inIndex path: String, of keys: Set<String>) -> [String: [String]] {
        guard !keys.isEmpty, let bytes = try? readFileBytes(path, limit: 1 << 34) else { return [:] }
        var out: [String: [String]] = [:]
        // A run with assignments names them on every line: without them in the first line there is
        // nothing to parse (searching the whole index with Foundation's generic `firstRange` took
        // a sixth of a night).
        let field = Array(#""assignments":"#.utf8)
        let first = bytes.prefix { $0 != 0x0A }
        guard first.count >= field.count, (0...(first.count - field.count)).contains(where: { first[$0..<($0 + field.count)].elementsEqual(field) }) else { return [:] }
        for line in bytes.split(separator: 0x0A) {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any], let device = object["device"] as? String, keys.contains(device) else { continue }
            out[device] = object["assignments"] as? [String] ?? []
        }
        return out
    }

    /// The configuration a device had in the previous generation's folder: its plist, its DDM
    /// asset (the manifest's first path), or its MDM command's Configuration.
    static func previousConfiguration(folder: String, key: String, manifestPath: String, delivery: Delivery) -> PlistValue? {
        let relative: String
        switch delivery {
        case .ddm: relative = String(manifestPath.split(separator: " ").first ?? "")
        case .plist, .mdmSettings, .mdmInstall: relative = Array(key.utf8).withView { OutputNames.relativePath($0) }
        }
        guard !relative.isEmpty, let bytes = try? readFileBytes(folder + "/" + relative, limit: 16 << 20), let value = try? LibPlist.decode(bytes) else { return nil }
        switch delivery {
        case .mdmSettings:
            if case .array(let items)? = value["Command"]?["Settings"], let first = items.first { return first["Configuration"] }
            return nil
        case .mdmInstall: return value["Command"]?["Configuration"]
        case .plist, .ddm: return value
        }
    }

    /// The keys whose values differ, in key order.
    static func keyChanges(_ before: PlistValue?, _ after: PlistValue?, known: Bool) -> [KeyChange] {
        func pairs(_ v: PlistValue?) -> [String: PlistValue] {
            guard case .dictionary(let p)? = v else { return [:] }
            return Dictionary(p.map { ($0.key, $0.value) }, uniquingKeysWith: { a, _ in a })
        }
        let a = pairs(before), b = pairs(after)
        let names = Set(a.keys).union(b.keys).sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
        if !known { return names.compactMap { n in b[n].map { KeyChange(key: n, from: nil, to: text($0)) } } }
        return names.compactMap { n in a[n] == b[n] ? nil : KeyChange(key: n, from: a[n].map(text), to: b[n].map(text)) }
    }

    /// A value as it reads in a diff: strings quoted, arrays and dictionaries inline.
    static func text(_ v: PlistValue) -> String {
        switch v {
        case .string(let s): return "\"" + Problem.printable(s) + "\""
        case .integer(let i): return String(i)
        case .real(let d): return String(d)
        case .boolean(let b): return b ? "true" : "false"
        case .date(let d): return Date(timeIntervalSinceReferenceDate: d).formatted(.iso8601)
        case .data(let bytes): return "<\(bytes.count) bytes>"
        case .array(let items): return "[" + items.map(text).joined(separator: ", ") + "]"
        case .dictionary(let pairs): return "{" + pairs.map { "\($0.key): " + text($0.value) }.joined(separator: ", ") + "}"
        case .uid(let u): return "uid \(u)"
        }
    }

    /// `diff.jsonl`: a line per changed device, `{"device","keys":[{"key","from","to"}],"cause"}`.
    func lines() -> [UInt8] {
        var out: [UInt8] = []
        for d in devices {
            JSONText.append(#"{"cause":"#, to: &out)
            JSONText.appendString(d.cause, to: &out)
            JSONText.append(#","device":"#, to: &out)
            JSONText.appendString(d.device, to: &out)
            JSONText.append(#","keys":["#, to: &out)
            for (i, k) in d.keys.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                JSONText.append("{", to: &out)
                if let from = k.from { JSONText.append(#""from":"#, to: &out); JSONText.appendString(from, to: &out); out.append(UInt8(ascii: ",")) }
                JSONText.append(#""key":"#, to: &out)
                JSONText.appendString(k.key, to: &out)
                if let to = k.to { JSONText.append(#","to":"#, to: &out); JSONText.appendString(to, to: &out) }
                JSONText.append("}", to: &out)
            }
            JSONText.append("]}\n", to: &out)
        }
        return out
    }

    /// The plan as a person reads it: the counts, the removals, and the changed devices grouped by
    /// what changes and why, largest group first.
    func plan(since: String) -> String {
        var lines = ["plan: since \(since): \(counts.added) added, \(counts.changed) changed, \(counts.missing) missing, \(counts.removed) removed, \(counts.unchanged) unchanged"]
        if !removals.isEmpty {
            lines.append("removals (\(removals.count)): " + removals.prefix(50).joined(separator: ", ") + (removals.count > 50 ? ", ..." : ""))
        }
        var groups: [String: (count: Int, first: String)] = [:]
        var order: [String] = []
        for d in devices {
            let what = d.keys.isEmpty ? "no key" : d.keys.map { "\($0.key) \($0.from ?? "(none)") -> \($0.to ?? "(none)")" }.joined(separator: ", ")
            let group = what + ": " + d.cause
            if groups[group] == nil { order.append(group); groups[group] = (0, d.device) }
            groups[group]!.count += 1
        }
        let sorted = order.sorted { (groups[$0]!.count, $1) > (groups[$1]!.count, $0) }
        if !sorted.isEmpty { lines.append("changes:") }
        for g in sorted.prefix(20) {
            let (count, first) = groups[g]!
            lines.append("  \(count) device\(count == 1 ? "" : "s") (\(first)\(count > 1 ? ", ..." : "")): \(g)")
        }
        if sorted.count > 20 { lines.append("  ... and \(sorted.count - 20) more groups (diff.jsonl has every device)") }
        if undiffed > 0 { lines.append("  \(undiffed) more changed devices not diffed (over \(Self.limit))") }
        return lines.joined(separator: "\n")
    }
}
