import AppConfigCore
import Foundation

/// How far a push is, for a progress display.
public struct PushProgress: Sendable {
    public var devicesDone: Int
    public var devicesToSend: Int
    public var requests: Int
    public var seconds: Double

    public var requestsPerSecond: Double { seconds > 0 ? Double(requests) / seconds : 0 }
    /// Seconds left at the rate so far (nil before a device finished).
    public var eta: Double? {
        guard devicesDone > 0, devicesToSend > devicesDone else { return devicesToSend > 0 && devicesDone >= devicesToSend ? 0 : nil }
        return seconds / Double(devicesDone) * Double(devicesToSend - devicesDone)
    }
}

/// A whole push as a library call: read the output and the journal, plan, check the removal guard,
/// send what changed with `jobs` devices in flight, notify, collect, rewrite the journal.
public final class PushJob: @unchecked Sendable {
    public let options: PushOptions

    public init(_ options: PushOptions) { self.options = options }

    /// Which servers take which deliveries.
    public static func accepts(_ server: ServerKind, _ delivery: PushSource.Delivery) -> Bool {
        delivery.isDDM ? server.ddmPrefix != nil : server.mdmPrefix != nil
    }

    /// The plan: what the output holds against what the journal says the server holds.
    public static func plan(_ source: PushSource, _ journal: PushJournal, options: PushOptions) -> (PushPlan, [PushSource.Device]) {
        var plan = PushPlan()
        plan.devices = source.devices.count
        var send: [PushSource.Device] = []
        var requests: [RequestKind: Int] = [:]
        var storing = Set<String>()
        var notifications = 0
        for device in source.devices {
            let previous = journal.device(device.key)
            if let previous, previous.digest == device.digest, previous.removed == device.removed {
                plan.unchanged += 1
                continue
            }
            if let only = options.devices, !only.contains(device.key) {
                plan.waiting += 1
                continue
            }
            if device.removed {
                let known = source.delivery.isDDM ? (previous.map { !$0.removed && $0.set != nil } ?? false) : true
                guard known else {
                    plan.removalsUnknown += 1
                    if source.delivery.isDDM { send.append(device) }
                    continue
                }
                plan.removed += 1
            } else if previous == nil || previous?.removed == true {
                plan.new += 1
            } else {
                plan.changed += 1
            }
            send.append(device)
            notifications += 1
            guard source.delivery.isDDM else {
                requests[.enqueue, default: 0] += 1
                continue
            }
            let before = previous.flatMap { $0.removed ? nil : $0 }
            if device.removed {
                requests[.enrollmentSetRemove, default: 0] += 1
                requests[.setRemove, default: 0] += before?.declarations.count ?? 0
                continue
            }
            for id in device.declarations where journal.declaration(id)?.ours != source.declarations[id]?.serverToken && storing.insert(id).inserted {
                requests[.declarationPut, default: 0] += 1
                requests[.declarationGet, default: 0] += 1
                if options.verifyAssets, source.declarations[id]?.asset != nil { requests[.assetGet, default: 0] += 1 }
            }
            let sameSet = before?.set == DDMPusher.setName(device)
            let current = sameSet ? Set(before!.declarations) : []
            if !sameSet { requests[.setGet, default: 0] += 1 }
            requests[.setAdd, default: 0] += device.declarations.filter { !current.contains($0) }.count
            if !(sameSet && before?.enrollment == (options.enrollmentIDs?[device.key] ?? device.key)) { requests[.enrollmentSet, default: 0] += 1 }
            requests[.setRemove, default: 0] += current.subtracting(device.declarations).count
        }
        if notifications > 0 {
            let chunk = source.delivery.isDDM ? min(options.notifyChunk, 30) : options.pushChunk
            requests[source.delivery.isDDM ? .notify : .push] = (notifications + chunk - 1) / chunk
        }
        plan.requests = Dictionary(uniqueKeysWithValues: requests.filter { $0.value > 0 }.map { ($0.key.rawValue, $0.value) })
        return (plan, send)
    }

    /// Runs the push. `progress` is called about twice a second while devices go.
    public func run(progress: (@Sendable (PushProgress) -> Void)? = nil) async -> PushResult {
        let started = Date()
        var summary = PushSummary(server: options.server.rawValue, url: options.url, source: options.source, journal: options.journalPath, delivery: "")
        summary.dryRun = options.dryRun
        func fatal(_ problem: Problem) -> PushResult {
            summary.error = .init(code: problem.code.rawValue, message: problem.message)
            summary.seconds = Date().timeIntervalSince(started)
            return PushResult(summary: summary, fatal: problem)
        }
        let source: PushSource
        do { source = try PushSource(options.source) } catch { return fatal(error) }
        summary.delivery = source.delivery.rawValue
        guard Self.accepts(options.server, source.delivery) else {
            let fits = source.delivery.isDDM ? "kmfddm or nanohub" : "nanomdm or nanohub"
            return fatal(Problem(PushCode.usage, at: Location(file: options.source), "\(options.source) holds --delivery \(source.delivery.rawValue), which goes to \(fits), not to \(options.server.rawValue)"))
        }
        do { try ServerConnection.checkScheme(options.url, option: "--url") } catch { return fatal(error) }
        let journal: PushJournal
        do { journal = try PushJournal(path: options.journalPath, server: options.server.rawValue + " " + options.url, writable: !options.dryRun) } catch { return fatal(error) }
        let (plan, send) = Self.plan(source, journal, options: options)
        summary.plan = plan
        summary.devices.unchanged = plan.unchanged
        let holding = journal.devices.values.filter { !$0.removed }.count
        if plan.removed > 0, !options.force, Double(plan.removed) > options.maxRemovalRatio * Double(max(holding, 1)) {
            summary.heldBack = "\(plan.removed) of \(holding) devices would lose the app, more than --max-removal-ratio \(options.maxRemovalRatio): nothing was sent (--force sends them)"
            summary.seconds = Date().timeIntervalSince(started)
            return PushResult(summary: summary)
        }
        if options.dryRun || send.isEmpty {
            summary.seconds = Date().timeIntervalSince(started)
            return PushResult(summary: summary)
        }
        let connection: ServerConnection
        do {
            connection = try ServerConnection(kind: options.server, url: options.url, apiKey: options.apiKey, connections: options.jobs,
                                              caFile: options.caFile, retries: options.retries, timeout: options.timeout)
        } catch { return fatal(error) }
        connection.firstDelay = options.firstRetryDelay
        let tally = PushTally()
        let pusher: Pusher = source.delivery.isDDM
            ? DDMPusher(source: source, journal: journal, connection: connection, tally: tally, options: options)
            : MDMPusher(source: source, journal: journal, connection: connection, tally: tally, options: options)
        let total = send.count
        let ticker = progress.map { report in
            Task {
                while !Task.isCancelled {
                    try? await Task.sleep(nanoseconds: 500_000_000)
                    report(PushProgress(devicesDone: tally.finishedCount, devicesToSend: total, requests: connection.counters.total, seconds: Date().timeIntervalSince(started)))
                }
            }
        }
        await forEachConcurrently(send, jobs: options.jobs, until: { tally.isAborted }) { await pusher.push($0) }
        await pusher.finish()
        if options.devices == nil { await pusher.collect(jobs: options.jobs) }
        ticker?.cancel()
        connection.shutdown()
        var compactionProblem: Problem?
        do { try journal.compact() } catch { compactionProblem = error }
        let elapsed = Date().timeIntervalSince(started)
        progress?(PushProgress(devicesDone: tally.finishedCount, devicesToSend: total, requests: connection.counters.total, seconds: elapsed))
        summary.devices.pushed = tally.devices.pushed
        summary.devices.removed = tally.devices.removed
        summary.devices.failed = tally.devices.failed
        summary.requests = connection.counters.snapshot
        summary.requestsTotal = connection.counters.total
        summary.retries = connection.counters.retries
        summary.notModified = connection.counters.unchangedAnswers
        summary.collected = tally.collected
        summary.keptInSets = tally.keptInSets
        summary.assetsVerified = tally.assetsVerified
        summary.assetsNotVerifiable = tally.assetsNotVerifiable
        summary.seconds = elapsed
        summary.requestsPerSecond = elapsed > 0 ? Int(Double(summary.requestsTotal) / elapsed) : 0
        var result = PushResult(summary: summary, failures: tally.failures, warnings: tally.warnings, fatal: tally.fatal ?? compactionProblem)
        for p in result.failures + result.warnings { result.summary.errorsByCode[p.problem.code.rawValue, default: 0] += 1 }
        if let f = result.fatal { result.summary.error = .init(code: f.code.rawValue, message: f.message) }
        return result
    }
}
