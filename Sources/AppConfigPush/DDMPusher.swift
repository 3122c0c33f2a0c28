import AppConfigCore
import Digest
import Foundation
import NIOHTTP1

/// Pushes DDM sets into KMFDDM (or NanoHUB's copy of its API), one device at a time per worker, in
/// the order that leaves no device with a dangling reference: its declarations stored (assets,
/// configuration, activation; each once per push, whoever needs it first), then added to the
/// device's set in that order, the set given to the enrollment, what the set no longer holds taken
/// out, and the enrollment notified. Every write carries `nonotify=1`: devices are told once, by
/// notify calls of at most 30 ids (KMFDDM sends any later chunk of a call empty).
final class DDMPusher: Pusher, @unchecked Sendable {
    private let prefix: String
    private let stored = OnceEach()
    private let verified = OnceEach()
    private var notifier: Batcher!
    /// Declarations taken out of a set this push: candidates for collection with the journal's.
    private let lock = NSLock()
    private var takenOut = Set<String>()
    /// Asset hosts that could not be reached (refused, TLS not trusted): later assets there fail at
    /// once instead of each waiting out the connection's deadline.
    private var unreachableHosts: [String: String] = [:]
    private static let noNotify = [("nonotify", "1")]

    override init(source: PushSource, journal: PushJournal, connection: ServerConnection, tally: PushTally, options: PushOptions) {
        prefix = connection.kind.ddmPrefix ?? "/v1"
        super.init(source: source, journal: journal, connection: connection, tally: tally, options: options)
        notifier = Batcher(size: min(options.notifyChunk, 30)) { [unowned self] ids in await self.notify(ids) }
    }

    /// The device's set on the server: named after its activation (one per app and device).
    static func setName(_ device: PushSource.Device) -> String {
        let activation = "appconfig.activation."
        if let id = device.declarations.first(where: { $0.hasPrefix(activation) }) { return "appconfig.set." + id.dropFirst(activation.count) }
        return "appconfig.set." + Array(device.key.utf8).withUnsafeBytes { SHA256.hex($0) }.prefix(32)
    }

    // MARK: One device

    override func push(_ device: PushSource.Device) async {
        do throws(PushFailure) {
            if device.removed {
                try await remove(device)
            } else {
                try await update(device)
            }
        } catch {
            tally.fail(device.key, error)
        }
    }

    private func update(_ device: PushSource.Device) async throws(PushFailure) {
        let previous = journal.device(device.key)
        let enrollment = try options.enrollment(for: device.key)
        let declarations = device.declarations.compactMap { source.declarations[$0] }.enumerated()
            .sorted { ($0.element.rank, $0.offset) < ($1.element.rank, $1.offset) }.map(\.element)
        if options.verifyAssets {
            for d in declarations where journal.declaration(d.identifier)?.ours != d.serverToken && d.asset != nil {
                if let failure = await verified.run(d.identifier, { [self] in await verify(d) }) { throw failure }
            }
        }
        for d in declarations {
            if let failure = await stored.run(d.identifier, { [self] in await store(d) }) { throw failure }
        }
        let set = Self.setName(device)
        let sameSet = previous?.set == set
        let current: Set<String>
        if let previous, sameSet, !previous.removed {
            current = Set(previous.declarations)
        } else {
            // Not pushed from this journal: what the server's set holds decides what to add and take out.
            let answer = try await connection.send(.setGet, .GET, prefix + "/set-declarations/" + ServerConnection.percentEncoded(set), what: "GET the set \(set)")
            guard let ids = AnswerJSON.strings(answer.body) else {
                throw PushFailure(problem: Problem(PushCode.server, at: Location(), "GET the set \(set): not a JSON list of identifiers"), fatal: false)
            }
            current = Set(ids)
        }
        for d in declarations where !current.contains(d.identifier) {
            _ = try await connection.send(.setAdd, .PUT, prefix + "/set-declarations/" + ServerConnection.percentEncoded(set),
                                          query: [("declaration", d.identifier)] + Self.noNotify, final: Self.ordering(d.identifier),
                                          what: "add \(d.identifier) to the set \(set)")
        }
        if !(sameSet && previous?.enrollment == enrollment) {
            _ = try await connection.send(.enrollmentSet, .PUT, prefix + "/enrollment-sets/" + ServerConnection.percentEncoded(enrollment),
                                          query: [("set", set)] + Self.noNotify, what: "give the set \(set) to the enrollment \(enrollment)")
        }
        if let previous, let oldSet = previous.set, oldSet != set || previous.enrollment != enrollment {
            _ = try await connection.send(.enrollmentSetRemove, .DELETE, prefix + "/enrollment-sets/" + ServerConnection.percentEncoded(previous.enrollment),
                                          query: [("set", oldSet)] + Self.noNotify, what: "take the set \(oldSet) from the enrollment \(previous.enrollment)")
        }
        let wanted = Set(device.declarations)
        try await takeOut(current.filter { !wanted.contains($0) }, from: set)
        if let previous, let oldSet = previous.set, oldSet != set {
            try await takeOut(Set(previous.declarations), from: oldSet)
        }
        let record = PushJournal.DeviceRecord(digest: device.digest, enrollment: enrollment, set: set, declarations: device.declarations)
        await notifier.add(enrollment) { [journal, tally] failure in
            if let failure { tally.fail(device.key, failure) } else {
                journal.recordDevice(device.key, record)
                tally.done(removed: false)
            }
        }
    }

    private func remove(_ device: PushSource.Device) async throws(PushFailure) {
        guard let previous = journal.device(device.key), !previous.removed, let set = previous.set else {
            tally.warn(device.key, Problem(PushCode.removalUnknown, at: Location(), "device \(device.key): removed by render, but this journal never pushed it: nothing to remove"))
            return
        }
        _ = try await connection.send(.enrollmentSetRemove, .DELETE, prefix + "/enrollment-sets/" + ServerConnection.percentEncoded(previous.enrollment),
                                      query: [("set", set)] + Self.noNotify, what: "take the set \(set) from the enrollment \(previous.enrollment)")
        try await takeOut(Set(previous.declarations), from: set)
        await notifier.add(previous.enrollment) { [journal, tally] failure in
            if let failure { tally.fail(device.key, failure) } else {
                journal.recordDevice(device.key, PushJournal.DeviceRecord(digest: device.digest, enrollment: previous.enrollment, removed: true))
                tally.done(removed: true)
            }
        }
    }

    /// Takes declarations out of a set: the activation first, the assets last (what names first).
    private func takeOut(_ ids: Set<String>, from set: String) async throws(PushFailure) {
        guard !ids.isEmpty else { return }
        let ordered = ids.sorted { (rank($0), $0) > (rank($1), $1) }
        for id in ordered {
            _ = try await connection.send(.setRemove, .DELETE, prefix + "/set-declarations/" + ServerConnection.percentEncoded(set),
                                          query: [("declaration", id)] + Self.noNotify,
                                          // A declaration the server no longer holds is in no set.
                                          accept: { $0.status == 500 && Self.isNotFound($0) },
                                          what: "take \(id) out of the set \(set)")
        }
        lock.withLock { takenOut.formUnion(ids) }
    }

    private func rank(_ id: String) -> Int {
        if let d = source.declarations[id] { return d.rank }
        if id.hasPrefix("appconfig.activation.") { return 2 }
        if id.hasPrefix("appconfig.config.") { return 1 }
        return 0
    }

    static func isNotFound(_ a: HTTPAnswer) -> Bool { String(decoding: a.body, as: UTF8.self).contains("not found") }

    /// "declaration not found" when adding to a set: the declaration is not stored. An ordering
    /// fault (ours, or the server lost it), never retried blindly.
    static func ordering(_ id: String) -> (HTTPAnswer) -> Problem? {
        { a in
            guard a.status == 500, isNotFound(a) else { return nil }
            return Problem(PushCode.ordering, at: Location(), "the server does not hold \(id) when it is added to a set (\(a.text)): an ordering fault, not retried")
        }
    }

    // MARK: Declarations

    /// Stores a declaration unless the journal says the server holds this content, then reads the
    /// token the server computed (KMFDDM discards ours).
    private func store(_ d: PushSource.Declaration) async -> PushFailure? {
        if let known = journal.declaration(d.identifier), known.ours == d.serverToken { return nil }
        do throws(PushFailure) {
            _ = try await connection.send(.declarationPut, .PUT, prefix + "/declarations", query: Self.noNotify, body: Array(d.body),
                                          contentType: "application/json",
                                          final: { a in a.status == 400 ? Problem(PushCode.server, at: Location(), "the server refused the declaration \(d.identifier): \(a.text)") : nil },
                                          what: "PUT the declaration \(d.identifier)")
            let answer = try await connection.send(.declarationGet, .GET, prefix + "/declarations/" + ServerConnection.percentEncoded(d.identifier),
                                                   what: "GET the declaration \(d.identifier)")
            guard let token = AnswerJSON.string(AnswerJSON.member(AnswerJSON.value(answer.body), "ServerToken")) else {
                return PushFailure(problem: Problem(PushCode.server, at: Location(), "GET the declaration \(d.identifier): no ServerToken in the answer"), fatal: false)
            }
            journal.recordDeclaration(d.identifier, ours: d.serverToken, server: token)
            return nil
        } catch {
            return error
        }
    }

    /// `--verify-assets`: the asset is served at its DataURL with its size and hash.
    private func verify(_ d: PushSource.Declaration) async -> PushFailure? {
        guard let asset = d.asset else { return nil }
        if asset.authenticated {
            tally.update { $0.assetsNotVerifiable += 1 }
            return nil
        }
        let host = URLComponents(string: asset.url).map { "\($0.scheme ?? "")://\($0.host ?? ""):\($0.port ?? 0)" } ?? asset.url
        if let why = lock.withLock({ unreachableHosts[host] }) {
            return PushFailure(problem: Problem(PushCode.assetNotServed, at: Location(), "the asset \(d.identifier) is not served at \(asset.url): \(why)"), fatal: false)
        }
        do throws(PushFailure) {
            let answer = try await connection.send(.assetGet, .GET, asset.url, authenticated: false, absolute: true,
                                                   accept: { $0.status == 404 || $0.status == 403 || $0.status == 401 },
                                                   what: "GET the asset \(asset.url)")
            func fail(_ why: String) -> PushFailure {
                PushFailure(problem: Problem(PushCode.assetNotServed, at: Location(), "the asset \(d.identifier) is not served at \(asset.url): \(why)"), fatal: false)
            }
            guard answer.status == 200 else { return fail(answer.text) }
            if let size = asset.size, size != answer.body.count { return fail("\(answer.body.count) bytes, the declaration says \(size)") }
            let hash = answer.body.withUnsafeBytes { SHA256.hex($0) }
            if let expected = asset.sha256, expected.lowercased() != hash { return fail("its SHA-256 is \(hash), the declaration says \(expected)") }
            tally.update { $0.assetsVerified += 1 }
            return nil
        } catch {
            if error.problem.code == PushCode.unreachable { lock.withLock { unreachableHosts[host] = error.problem.message } }
            return PushFailure(problem: Problem(PushCode.assetNotServed, at: Location(), "the asset \(d.identifier) is not served at \(asset.url): \(error.problem.message)"), fatal: false)
        }
    }

    // MARK: Notify and collection

    /// One notify call (at most 30 ids); it answers 204 whatever happens on the server's side.
    private func notify(_ ids: [String]) async -> [String: PushFailure] {
        do throws(PushFailure) {
            _ = try await connection.send(.notify, .POST, prefix + "/notify", query: ids.map { ("id", $0) }, what: "notify \(ids.count) enrollments")
            return [:]
        } catch {
            return Dictionary(uniqueKeysWithValues: ids.map { ($0, error) })
        }
    }

    /// Sends the notifications still gathered.
    override func finish() async { await notifier.flush() }

    /// Deletes the declarations no set names any more: those the journal holds that no device's set
    /// in it names, and those taken out of sets this push; each checked on the server first (a set
    /// of someone else's, or a device that failed, may still name it).
    override func collect(jobs: Int) async {
        let named = Set(journal.devices.values.flatMap(\.declarations))
        let candidates = lock.withLock { takenOut }.union(journal.declarations.keys).subtracting(named).sorted()
        guard !candidates.isEmpty, !tally.isAborted else { return }
        await forEachConcurrently(candidates, jobs: jobs, until: { [tally] in tally.isAborted }) { [self] in await collect($0) }
    }

    private func collect(_ id: String) async {
        do throws(PushFailure) {
            let sets = try await connection.send(.declarationSetsGet, .GET, prefix + "/declaration-sets/" + ServerConnection.percentEncoded(id),
                                                 accept: { $0.status == 404 }, what: "GET the sets of \(id)")
            if sets.status == 200, let names = AnswerJSON.strings(sets.body), !names.isEmpty {
                tally.update { $0.keptInSets += 1 }
                return
            }
            _ = try await connection.send(.declarationDelete, .DELETE, prefix + "/declarations/" + ServerConnection.percentEncoded(id), query: Self.noNotify,
                                          accept: { $0.status == 404 },
                                          final: { a in a.status == 500 ? Problem(PushCode.collection, at: Location(), "the declaration \(id) was left on the server: \(a.text)") : nil },
                                          what: "DELETE the declaration \(id)")
            journal.recordGone(id)
            tally.update { $0.collected += 1 }
        } catch {
            tally.warn("", error.problem.code == PushCode.collection ? error.problem
                       : Problem(PushCode.collection, at: Location(), "the declaration \(id) was left on the server: \(error.problem.message)"))
        }
    }
}
