import AppConfigCore
import AppConfigPush

/// Where a device stands, joined from what it reported, what was rendered and what was pushed.
public enum DeviceState: String, Sendable, CaseIterable, Codable {
    /// DDM: it reports tonight's configuration (the token the server holds), valid and active.
    case current
    /// It reports an older token of its configuration.
    case stale
    /// Nothing of this configuration reported since it was pushed (or never anything at all).
    case neverReported = "never-reported"
    /// Tonight's token reported, not settled yet (`valid` unknown, or not active); for MDM, no
    /// result for the command yet.
    case pending
    /// A declaration of its set (configuration, activation, subscription) is invalid.
    case invalidDeclaration = "invalid-declaration"
    /// An asset declaration is invalid: the download failed, or size or hash did not match.
    case assetFailed = "asset-failed"
    /// The app read its configuration and found it invalid (`config-state`).
    case appConfigRejected = "app-config-rejected"
    /// The app is not managed (`state` other than `managed`: installing, failed, ...).
    case appNotManaged = "app-not-managed"
    /// The generation removed the device (`render --remove-missing`).
    case removed
    /// MDM: the command was acknowledged.
    case acknowledged
    /// MDM: the command failed (its `ErrorChain`).
    case error
    /// MDM: the device answered NotNow (it will be asked again).
    case notNow = "not-now"
    /// Reported by an enrollment the generation does not know.
    case unknownDevice = "unknown-device"

    /// Where the rollout wants every device: `current` (DDM) or `acknowledged` (MDM).
    public var isDone: Bool { self == .current || self == .acknowledged || self == .removed }
}

/// One device's line of `status.jsonl`.
public struct DeviceVerdict: Sendable, Codable, Equatable {
    public var device: String
    public var enrollment: String
    public var state: DeviceState
    /// Why, in words: the token seen, the declaration or app that failed, the error chain.
    public var detail: String?
    /// The reasons the device gave (`Error.LicenseNotFound (...)`).
    public var reasons: [String]
    /// The assignments (variants) it matched; roll-up groups (`model`, `os`, `ou`) from the inventory.
    public var assignments: [String]
    public var groups: [String: String]
    /// When its newest report or result came (as the event or server said).
    public var reported: String?
}

/// The join: each device of the generation against its fold, with the server's tokens from the
/// push journal (KMFDDM computes its own: ours are only the fallback without a journal).
public struct StatusJoin: Sendable {
    public let source: PushSource
    public let journal: PushJournal?
    /// Device key -> enrollment ID (the journal's, or `--enrollment-id`'s; else the key).
    public let enrollments: [String: String]
    /// Device key -> roll-up groups.
    public let groups: [String: [String: String]]

    public init(source: PushSource, journal: PushJournal?, enrollments: [String: String] = [:], groups: [String: [String: String]] = [:]) {
        self.source = source
        self.journal = journal
        self.enrollments = enrollments
        self.groups = groups
    }

    public func enrollment(of key: String) -> String { journal?.device(key)?.enrollment ?? enrollments[key] ?? key }

    /// Every device's verdict in the generation's order, then one per unknown enrollment.
    public func verdicts(_ fold: StatusFold) throws(Problem) -> [DeviceVerdict] {
        // Each device judged on its own, on every core; where its report lies in the fold kept.
        let devices = source.devices, reports = fold.packed
        var positions = [Dictionary<String, PackedReport>.Index?](repeating: nil, count: devices.count)
        var out = try positions.withUnsafeMutableBufferPointer { p throws(Problem) in
            nonisolated(unsafe) let p = p
            return try ParallelLines.map(devices.count) { i throws(Problem) -> DeviceVerdict in
                let device = devices[i]
                let id = enrollment(of: device.key)
                let at = reports.index(forKey: id)
                p[i] = at
                var v = DeviceVerdict(device: device.key, enrollment: id, state: .neverReported, detail: nil, reasons: [], assignments: device.assignments,
                                      groups: groups[device.key] ?? [:], reported: nil)
                // The report judged where it lies in the fold.
                try (at.map { reports.values[$0].bytes } ?? []).withView { b throws(Problem) in
                    let report = at == nil ? nil : PackedView(b)
                    v.reported = report?.received
                    if device.removed {
                        v.state = .removed
                    } else if source.delivery.isDDM {
                        judgeDDM(i, report, &v)
                    } else {
                        try judgeMDM(device, report, &v)
                    }
                }
                return v
            }
        }
        // The enrollments no device named: the fold's positions that no device's report lies at
        // (positions sorted and walked beside the fold's own order: a set of 1M enrollment
        // strings was a hash each, twice).
        var named = positions.compactMap { $0 }
        named.sort()
        var unknown: [String] = []
        var k = 0
        for at in reports.indices {
            while k < named.count && named[k] < at { k += 1 }
            if k < named.count && named[k] == at { continue }
            unknown.append(reports.keys[at])
        }
        for id in unknown.sorted() {
            out.append(DeviceVerdict(device: id, enrollment: id, state: .unknownDevice, detail: "an enrollment the generation does not know",
                                     reasons: [], assignments: [], groups: [:], reported: reports[id]?.received))
        }
        return out
    }

    private func judgeDDM(_ i: Int, _ report: PackedView?, _ v: inout DeviceVerdict) {
        // The set as resolved when the generation was read: no table lookup here.
        let all = source.declarations.all, set = source.declarationIndexes(ofDevice: i)
        guard let at = set.first(where: { all[Int($0)].type == "com.apple.configuration.app.managed" }) else {
            v.detail = "its set names no AppManaged configuration"
            v.state = .invalidDeclaration
            return
        }
        let config = all[Int(at)].identifier
        guard let report else { return }
        guard let seen = report.declaration(config) else {
            v.detail = report.declaresNothing ? "no declaration status reported" : "its reports do not name \(config) yet"
            return
        }
        // The token the server holds: the journal's, else ours.
        let expected = journal?.declaration(config)?.server ?? all[Int(at)].serverToken
        if !seen.token.equals(expected) {
            v.state = .stale
            v.detail = "reports \(config) at token \(seen.token.text), pushed \(expected)"
            return
        }
        // The most specific fault first: an asset that failed makes its configuration fail too;
        // else the first declaration of the set reported invalid.
        var invalid: (id: String, reasons: Range<Int>)?
        for at in set {
            let id = all[Int(at)].identifier
            guard let s = report.declaration(id), s.valid.equals("invalid") else { continue }
            if all[Int(at)].type.hasPrefix("com.apple.asset.") {
                v.state = .assetFailed
                v.detail = "asset \(id) is invalid"
                v.reasons = report.texts(s.reasons)
                return
            }
            if invalid == nil { invalid = (id, s.reasons) }
        }
        if let invalid {
            v.state = .invalidDeclaration
            v.detail = "\(invalid.id) is invalid"
            v.reasons = report.texts(invalid.reasons)
            return
        }
        let app = report.app { $0.declaration?.equals(config) == true } ?? bundleID(all[Int(at)]).flatMap { id in report.app { $0.key.equals(id) } }
        if let app {
            if let state = app.state, !state.equals("managed") {
                v.state = .appNotManaged
                v.detail = "the app is \(state.text)"
                v.reasons = report.texts(app.reasons)
                return
            }
            let extensions = report.extensions(app.extensions, in: "invalid")
            let rejected = app.configState?.equals("invalid") == true
            if rejected || !extensions.isEmpty {
                v.state = .appConfigRejected
                v.detail = rejected ? "the app found its configuration invalid" : "extension \(extensions.joined(separator: ", ")) found its configuration invalid"
                v.reasons = report.texts(app.reasons)
                return
            }
        }
        if seen.active && seen.valid.equals("valid") {
            v.state = .current
        } else {
            v.state = .pending
            v.detail = "tonight's token reported, \(seen.active ? "active" : "not active"), valid \(seen.valid.text)"
        }
    }

    private func judgeMDM(_ device: PushSource.Device, _ report: PackedView?, _ v: inout DeviceVerdict) throws(Problem) {
        var uuid = journal?.device(device.key)?.commandUUID
        if uuid == nil, let path = device.path { uuid = PushSource.commandUUID(try source.fileBytes(path)) }
        guard let uuid else {
            v.state = .pending
            v.detail = "its command has no CommandUUID"
            return
        }
        guard let result = report?.command(uuid) else {
            v.state = .pending
            v.detail = "no result for command \(uuid)"
            return
        }
        if result.status.equals("Acknowledged") {
            v.state = .acknowledged
        } else if result.status.equals("NotNow") {
            v.state = .notNow
            v.detail = "command \(uuid): NotNow"
        } else {
            v.state = .error
            v.detail = "command \(uuid): \(result.status.text)"
            v.reasons = report?.texts(result.chain) ?? []
        }
    }

    /// The configuration's `BundleID`, for a report whose app names no declaration.
    private func bundleID(_ configuration: PushSource.Declaration) -> String? {
        guard let j = LeanJSON(configuration.body) else { return nil }
        return j.string(j.member(j.member(0, "Payload"), "BundleID"))
    }
}
