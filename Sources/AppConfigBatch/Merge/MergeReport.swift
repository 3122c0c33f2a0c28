import AppConfigCore
import AppConfigOutput
import Foundation

/// `appconfig merge --report DIR --shard-report S0 --shard-report S1 ...`: one account of the
/// merged run from the shards' own: `summary.json` with the devices counted once (a shard's own
/// devices summed, what every shard read of the whole inventory taken once), `errors.jsonl` with
/// each line once (the inventory's and directory's problems stand in every shard's report, each
/// device's in its own shard's), `changes.jsonl` in device-key order, as one run writes it.
package struct MergeReport {
    package var shardReports: [String]

    package init(shardReports: [String]) { self.shardReports = shardReports }

    /// Writes the merged report into `directory` for the merge `merged` made.
    package func write(to directory: String, merged: ShardMerge.Summary) throws(Problem) {
        guard shardReports.count == merged.shards else {
            throw Problem(.mergeShards, "--shard-report: give each shard's report folder once (\(shardReports.count) given for \(merged.shards) shards)")
        }
        var summaries: [RunSummary] = []
        var errors: [UInt8] = [], changes: [[UInt8]] = []
        var seenLines = Set<ArraySlice<UInt8>>()
        var hasChanges = false
        for folder in shardReports {
            let summaryBytes: [UInt8]
            do { summaryBytes = try readFileBytes(folder + "/summary.json", limit: 1 << 30) } catch { throw error.problem }
            guard let s = try? JSONDecoder().decode(RunSummary.self, from: Data(summaryBytes)) else {
                throw Problem(.mergeInput, at: Location(file: folder + "/summary.json"), "\(folder)/summary.json is not a render's summary")
            }
            summaries.append(s)
            let lines: [UInt8]
            do { lines = try readFileBytes(folder + "/errors.jsonl", limit: 1 << 34) } catch { throw error.problem }
            for line in lines.split(separator: 0x0A) where seenLines.insert(line).inserted { errors += line; errors.append(0x0A) }
            if access(folder + "/changes.jsonl", F_OK) == 0 {
                hasChanges = true
                do { changes += try readFileBytes(folder + "/changes.jsonl", limit: 1 << 34).split(separator: 0x0A).map(Array.init) } catch { throw error.problem }
            }
        }
        let shards = Set(summaries.map(\.shard))
        guard shards.count == summaries.count, summaries.allSatisfy({ $0.programHash == summaries[0].programHash }) else {
            throw Problem(.mergeMismatch, "--shard-report: the reports are not each shard's of one run (shards \(summaries.map(\.shard).sorted().joined(separator: ", ")))")
        }
        var s = summaries[0]
        s.shard = Shard.whole.description
        s.output = merged.output
        s.published = summaries.allSatisfy(\.published)
        s.notPublished = summaries.compactMap(\.notPublished).first
        s.devices.inShard = summaries.reduce(0) { $0 + $1.devices.inShard }
        s.devices.rendered = summaries.reduce(0) { $0 + $1.devices.rendered }
        s.devices.failed = summaries.reduce(0) { $0 + $1.devices.failed }
        s.devices.carried = summaries.reduce(0) { $0 + $1.devices.carried }
        s.devices.usersNotFound = summaries.reduce(0) { $0 + $1.devices.usersNotFound }
        s.devices.devicesWithoutUser = summaries.reduce(0) { $0 + $1.devices.devicesWithoutUser }
        s.errorsByCode = [:]
        for line in errors.split(separator: 0x0A) {
            if let object = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any], let code = object["code"] as? String {
                s.errorsByCode[code, default: 0] += 1
            }
        }
        var assignments: [String: Int] = [:]
        for summary in summaries { for (name, n) in summary.assignments ?? [:] { assignments[name, default: 0] += n } }
        s.assignments = summaries[0].assignments == nil ? nil : assignments
        if summaries.contains(where: { $0.changes != nil }) {
            var c = ChangeCounts()
            for summary in summaries {
                guard let d = summary.changes else { continue }
                c.added += d.added; c.changed += d.changed; c.removed += d.removed
                c.unchanged += d.unchanged; c.missing += d.missing; c.rekeyed += d.rekeyed
            }
            s.changes = c
        }
        for (phase, _) in s.seconds { s.seconds[phase] = summaries.compactMap { $0.seconds[phase] }.max() }
        s.wallSeconds = summaries.map(\.wallSeconds).max() ?? 0
        s.devicesPerSecond = s.wallSeconds > 0 ? Int(Double(s.devices.inShard) / s.wallSeconds) : 0
        // changes.jsonl in device-key order across the shards, as one run writes it.
        let sortedChanges = changes.map { ($0, Self.deviceKey(of: $0)) }.sorted { $0.1.lexicographicallyPrecedes($1.1) }.map(\.0)
        try RunReport.prepare(directory)
        do {
            try writeFileAtomically(errors, to: directory + "/errors.jsonl")
            if hasChanges { try writeFileAtomically(sortedChanges.flatMap { $0 + [0x0A] }, to: directory + "/changes.jsonl") }
            try writeFileAtomically(Array(s.json().utf8), to: directory + "/summary.json")
        } catch {
            throw Problem(.reportWrite, at: error.location, error.message)
        }
    }

    /// A changes line's `"device"` value, as bytes (the key order the lines are merged in).
    static func deviceKey(of line: [UInt8]) -> [UInt8] {
        let field = Array(#""device":""#.utf8)
        guard let r = line.firstRange(of: field), let end = line[r.upperBound...].firstIndex(of: UInt8(ascii: "\"")) else { return [] }
        return Array(line[r.upperBound..<end])
    }
}
