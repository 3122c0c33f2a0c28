import AppConfigCore
import Foundation

/// Counts per state, and the roll-ups: per assignment (variant) and per inventory group (model,
/// OS version, OU), the states of its devices, so that one bad input that broke a whole variant
/// shows at once.
public struct StatusSummary: Sendable, Codable, Equatable {
    public var generation: String
    public var delivery: String
    /// Devices of the generation (unknown enrollments not counted).
    public var devices: Int
    public var states: [String: Int]
    /// Share of the generation's devices done (`current`, `acknowledged`, `removed`).
    public var doneShare: Double
    /// Per dimension (`assignment`, `model`, `os`, `ou`...), per value, per state: devices.
    public var rollups: [String: [String: [String: Int]]]
    public var unknownDevices: Int
    public var events: Int
    public var reports: Int
    public var results: Int
    public var badEvents: Int

    public init(generation: String, delivery: String, verdicts: [DeviceVerdict], fold: StatusFold) {
        self.generation = generation
        self.delivery = delivery
        var states: [String: Int] = [:]
        var rollups: [String: [String: [String: Int]]] = [:]
        var devices = 0, done = 0, unknown = 0
        for v in verdicts {
            states[v.state.rawValue, default: 0] += 1
            if v.state == .unknownDevice {
                unknown += 1
                continue
            }
            devices += 1
            if v.state.isDone { done += 1 }
            for a in v.assignments.isEmpty ? ["(none)"] : v.assignments { rollups["assignment", default: [:]][a, default: [:]][v.state.rawValue, default: 0] += 1 }
            for (dimension, value) in v.groups {
                rollups[dimension, default: [:]][value.isEmpty ? "(empty)" : value, default: [:]][v.state.rawValue, default: 0] += 1
            }
        }
        self.devices = devices
        self.states = states
        doneShare = devices == 0 ? 1 : Double(done) / Double(devices)
        self.rollups = rollups
        unknownDevices = unknown
        events = fold.events
        reports = fold.reports
        results = fold.results
        badEvents = fold.problems.count
    }

    /// Whether every device of the generation is done.
    public var allDone: Bool { devices == 0 || doneShare >= 1 }

    /// The terminal summary: counts per state, then per dimension the values whose devices are
    /// most often not done (the broken variant first).
    public func text(limit: Int = 5) -> String {
        var lines: [String] = []
        let order = DeviceState.allCases.map(\.rawValue)
        let counts = order.compactMap { s in states[s].map { "\(s) \($0)" } }
        lines.append("\(devices) devices (\(delivery)): " + counts.joined(separator: ", "))
        lines.append(String(format: "done: %.1f%%", doneShare * 100) + "; events \(events) (reports \(reports), results \(results)), unreadable \(badEvents)")
        for dimension in rollups.keys.sorted() {
            let values = rollups[dimension]!
            struct Ranked { var value: String; var total: Int; var notDone: Int; var permille: Int }
            var ranked: [Ranked] = []
            for (value, states) in values {
                let total = states.values.reduce(0, +), notDone = Self.notDone(states)
                if notDone > 0 { ranked.append(Ranked(value: value, total: total, notDone: notDone, permille: notDone * 1000 / max(total, 1))) }
            }
            // The largest share not done first, then the most devices, then by name.
            ranked.sort { a, b in
                if a.permille != b.permille { return a.permille > b.permille }
                if a.notDone != b.notDone { return a.notDone > b.notDone }
                return a.value < b.value
            }
            guard !ranked.isEmpty else { continue }
            lines.append("by \(dimension), most not done first:")
            for r in ranked.prefix(limit) {
                let worst = values[r.value]!.filter { !(DeviceState(rawValue: $0.key)?.isDone ?? true) }.sorted { ($0.value, $1.key) > ($1.value, $0.key) }
                let share = Double(r.notDone) / Double(max(r.total, 1)) * 100
                lines.append("  \(r.value): \(r.notDone) of \(r.total) not done (" + String(format: "%.0f%%", share) + "): "
                             + worst.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
            }
            if ranked.count > limit { lines.append("  and \(ranked.count - limit) more") }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    static func notDone(_ states: [String: Int]) -> Int {
        states.reduce(0) { $0 + ((DeviceState(rawValue: $1.key)?.isDone ?? true) ? 0 : $1.value) }
    }
}
