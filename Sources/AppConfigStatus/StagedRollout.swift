import AppConfigCore
import AppConfigPush
import Digest
import Foundation

/// `push --stages 1%,10%,100% --gate 0.95 --gate-timeout 2h [--pilot ASSIGNMENT]`: a generation
/// pushed in stages, each gated on what its devices report. Devices go in a stable order (the
/// pilot variant's first when one is named, then by a hash of their key, so a rerun picks the
/// same devices); after each stage but the last, status is read every `interval` until the
/// stage's share of devices done (`current`, or `acknowledged` for MDM) reaches the gate; a
/// stage that does not in `gateTimeout` stops the rollout with the states seen and the variants
/// they fall in. The push journal makes a stopped rollout resumable: the same command again
/// sends nothing to the stages already pushed and reads their status first.
public struct StagedRollout: Sendable {
    public struct Options: Sendable {
        /// Cumulative shares of the fleet, ascending, the last at most 1 (`1%,10%,100%`).
        public var stages: [Double]
        /// The share of a stage's devices that must be done before the next stage goes.
        public var gate = 0.95
        /// Seconds a stage may take to reach the gate.
        public var gateTimeout = 7200.0
        /// Seconds between two status reads while a stage waits.
        public var interval = 60.0
        /// An assignment variant whose devices are the first stage, whatever its share.
        public var pilot: String?
        /// Where status is read: the server's endpoints or a webhook events file (re-read each time).
        public var status: StatusOptions

        public init(stages: [Double], status: StatusOptions) {
            self.stages = stages
            self.status = status
        }
    }

    public struct Stage: Sendable {
        /// Devices in the stage, those before it included.
        public var devices: Int
        public var push: PushResult
        /// The share done when the gate was last read (nil: the last stage, not gated).
        public var doneShare: Double?
        public var waited: Double = 0
    }

    public struct Result: Sendable {
        public var stages: [Stage] = []
        /// Why the rollout stopped before its end (a gate not reached, a fatal push, no pilot).
        public var stopped: String?
        /// A fatal problem of a push or a status read.
        public var fatal: Problem?

        /// 0 every stage pushed (3 when devices failed on the way), 1 stopped or fatal.
        public var exitStatus: Int32 {
            if stopped != nil || fatal != nil { return ExitStatus.failed }
            return stages.contains { $0.push.exitStatus != ExitStatus.ok } ? ExitStatus.partial : ExitStatus.ok
        }
    }

    public let push: PushOptions
    public let options: Options

    public init(push: PushOptions, options: Options) {
        self.push = push
        self.options = options
    }

    /// Reads `1%,10%,100%` (or `0.01,0.1,1`): ascending shares above 0, at most 100%.
    public static func stages(_ text: String) throws(Problem) -> [Double] {
        var out: [Double] = []
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            let t = part.trimmingCharacters(in: .whitespaces)
            let value = t.hasSuffix("%") ? Double(t.dropLast()).map { $0 / 100 } : Double(t)
            guard let v = value, v > 0, v <= 1, out.last.map({ v > $0 }) ?? true else {
                throw Problem(PushCode.usage, at: Location(), "--stages \(text): ascending shares such as 1%,10%,100% (each above 0, at most 100%)")
            }
            out.append(v)
        }
        return out
    }

    /// `2h`, `30m`, `90s` or seconds.
    public static func duration(_ text: String, option: String) throws(Problem) -> Double {
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86400]
        if let unit = text.last, let scale = units[unit], let n = Double(text.dropLast()), n >= 0 { return n * scale }
        if let n = Double(text), n >= 0 { return n }
        throw Problem(PushCode.usage, at: Location(), "\(option) \(text): a duration such as 2h, 30m, 90s")
    }

    /// The devices in rollout order: the pilot variant's first, then by the SHA-256 of their key.
    public static func order(_ devices: [PushSource.Device], pilot: String?) -> [String] {
        func rank(_ key: String) -> SHA256Digest { SHA256Digest(of: Array("appconfig-rollout\u{0}\(key)".utf8)) }
        let ranked = devices.map { (key: $0.key, pilot: pilot.map($0.assignments.contains) ?? false, rank: rank($0.key)) }
        return ranked.sorted { a, b in
            if a.pilot != b.pilot { return a.pilot }
            return withUnsafeBytes(of: a.rank) { x in withUnsafeBytes(of: b.rank) { y in x.lexicographicallyPrecedes(y) } }
        }.map(\.key)
    }

    /// Runs the stages. `say` hears a line per stage and per status read.
    public func run(say: @escaping @Sendable (String) -> Void = { _ in }) async -> Result {
        var result = Result()
        let source: PushSource
        do { source = try PushSource(push.source) } catch {
            result.fatal = error
            return result
        }
        let order = Self.order(source.devices, pilot: options.pilot)
        let pilotCount = options.pilot.map { p in source.devices.filter { $0.assignments.contains(p) }.count } ?? 0
        if let pilot = options.pilot, pilotCount == 0 {
            result.stopped = "--pilot \(pilot): no device of the generation is in that assignment"
            return result
        }
        var sizes = options.stages.map { min(order.count, Int(($0 * Double(order.count)).rounded(.up))) }
        if pilotCount > 0 { sizes = [pilotCount] + sizes.filter { $0 > pilotCount } }
        if sizes.last != order.count && options.stages.last == 1 { sizes.append(order.count) }
        for (k, size) in sizes.enumerated() {
            let last = k == sizes.count - 1
            var o = push
            // The whole fleet at the last stage: then what no set names any more is collected.
            o.devices = last && size == order.count ? nil : Set(order.prefix(size))
            let pushed = await PushJob(o).run()
            var stage = Stage(devices: size, push: pushed)
            say("stage \(k + 1)/\(sizes.count): \(size) of \(order.count) devices; pushed \(pushed.summary.devices.pushed), "
                + "unchanged \(pushed.summary.devices.unchanged), failed \(pushed.summary.devices.failed)")
            if let fatal = pushed.fatal ?? (pushed.summary.heldBack.map { Problem(PushCode.removalGuard, at: Location(), $0) }) {
                result.stages.append(stage)
                result.fatal = fatal
                return result
            }
            guard !last else {
                result.stages.append(stage)
                break
            }
            let members = Set(order.prefix(size))
            let started = Date()
            while true {
                let status: StatusResult
                do { status = try await StatusJob(options.status).run() } catch {
                    result.stages.append(stage)
                    result.fatal = error
                    return result
                }
                let mine = status.verdicts.filter { members.contains($0.device) }
                let done = mine.filter { $0.state.isDone }.count
                let share = mine.isEmpty ? 1 : Double(done) / Double(mine.count)
                stage.doneShare = share
                stage.waited = Date().timeIntervalSince(started)
                say("stage \(k + 1)/\(sizes.count): \(done) of \(mine.count) done (" + String(format: "%.1f%%", share * 100)
                    + "), gate " + String(format: "%.1f%%", options.gate * 100))
                if share >= options.gate { break }
                if stage.waited + options.interval > options.gateTimeout {
                    result.stages.append(stage)
                    result.stopped = "stage \(k + 1)/\(sizes.count) reached " + String(format: "%.1f%%", share * 100) + " of its \(mine.count) devices done in "
                        + "\(Int(stage.waited)) s, below the gate " + String(format: "%.1f%%", options.gate * 100) + ": " + Self.describe(mine)
                        + "; the other \(order.count - size) devices were not pushed"
                    return result
                }
                try? await Task.sleep(nanoseconds: UInt64(options.interval * 1e9))
            }
            result.stages.append(stage)
        }
        return result
    }

    /// The states not done among `verdicts`, each with the variants its devices fall in.
    static func describe(_ verdicts: [DeviceVerdict]) -> String {
        var byState: [DeviceState: [String: Int]] = [:]
        for v in verdicts where !v.state.isDone {
            for a in v.assignments.isEmpty ? ["(no assignment)"] : v.assignments { byState[v.state, default: [:]][a, default: 0] += 1 }
        }
        let counts = Dictionary(grouping: verdicts.filter { !$0.state.isDone }, by: \.state).mapValues(\.count)
        return counts.sorted { ($0.value, $1.key.rawValue) > ($1.value, $0.key.rawValue) }.map { state, n in
            let variants = byState[state]!.sorted { ($0.value, $1.key) > ($1.value, $0.key) }.prefix(5).map { "\($0.key) \($0.value)" }
            return "\(state.rawValue) \(n) (\(variants.joined(separator: ", ")))"
        }.joined(separator: "; ")
    }
}
