import AppConfigCore
import Foundation
import NIOHTTP1

/// Pushes MDM commands into NanoMDM's queue (or NanoHUB's NanoMDM API): each device's command
/// enqueued for its enrollment without a push (`nopush=1`), then the enrollments woken in calls of
/// up to 100 ids. NanoMDM refuses a CommandUUID it already holds; since a command's UUID is made
/// from the device and the command's content, such a refusal means this very command is queued
/// (a retry whose first try was done): success, never a new UUID. A 207 wakes some ids and not
/// others: the others are retried alone.
final class MDMPusher: Pusher, @unchecked Sendable {
    private let prefix: String
    private var waker: Batcher!

    override init(source: PushSource, journal: PushJournal, connection: ServerConnection, tally: PushTally, options: PushOptions) {
        prefix = connection.kind.mdmPrefix ?? "/v1"
        super.init(source: source, journal: journal, connection: connection, tally: tally, options: options)
        waker = Batcher(size: options.pushChunk) { [unowned self] ids in await self.wake(ids) }
    }

    static func isDuplicate(_ text: String) -> Bool {
        let t = text.lowercased()
        return t.contains("duplicate") || t.contains("already")
    }

    override func push(_ device: PushSource.Device) async {
        do throws(PushFailure) {
            let enrollment = try options.enrollment(for: device.key)
            guard let path = device.path else {
                throw PushFailure(problem: Problem(PushCode.source, at: Location(), "device \(device.key): its index line names no command file"), fatal: false)
            }
            let command: [UInt8]
            do { command = try source.fileBytes(path) } catch { throw PushFailure(problem: error, fatal: false) }
            guard let uuid = PushSource.commandUUID(command) else {
                throw PushFailure(problem: Problem(PushCode.source, at: Location(file: path), "device \(device.key): \(path) holds no CommandUUID"), fatal: false)
            }
            // One id a call: 200 queued; 500 with the id's command_error. A duplicate is this command.
            _ = try await connection.send(.enqueue, .PUT, prefix + "/enqueue/" + ServerConnection.percentEncoded(enrollment), query: [("nopush", "1")],
                                          body: command, contentType: "application/x-apple-aspen-mdm",
                                          accept: { a in
                                              guard a.status == 500 || a.status == 207 else { return false }
                                              let errors = AnswerJSON.errors(a.body, field: "command_error")
                                              return errors[enrollment].map(Self.isDuplicate) ?? false
                                          },
                                          what: "enqueue \(uuid) for \(enrollment)")
            let record = PushJournal.DeviceRecord(digest: device.digest, enrollment: enrollment, commandUUID: uuid, removed: device.removed)
            let removed = device.removed
            await waker.add(enrollment) { [journal, tally] failure in
                if let failure { tally.fail(device.key, failure) } else {
                    journal.recordDevice(device.key, record)
                    tally.done(removed: removed)
                }
            }
        } catch {
            tally.fail(device.key, error)
        }
    }

    override func finish() async { await waker.flush() }

    /// Wakes `ids`; on a 207 the ids whose push failed are sent again alone, with the backoff.
    private func wake(_ ids: [String]) async -> [String: PushFailure] {
        var left = ids
        var attempt = 0
        while true {
            let answer: HTTPAnswer
            do throws(PushFailure) {
                answer = try await connection.send(.push, .GET, prefix + "/push/" + left.map(ServerConnection.percentEncoded).joined(separator: ","),
                                                   what: "push \(left.count) enrollments")
            } catch {
                return Dictionary(uniqueKeysWithValues: left.map { ($0, error) })
            }
            let errors = answer.status == 207 ? AnswerJSON.errors(answer.body, field: "push_error") : [:]
            let failed = left.filter { errors[$0] != nil }
            if failed.isEmpty { return [:] }
            attempt += 1
            guard attempt <= options.retries else {
                return Dictionary(uniqueKeysWithValues: failed.map {
                    ($0, PushFailure(problem: Problem(PushCode.server, at: Location(), "the push to \($0) failed: \(errors[$0]!) (after \(options.retries) retries; the command is queued)"), fatal: false))
                })
            }
            connection.counters.retried()
            left = failed
            try? await Task.sleep(nanoseconds: UInt64(min(10, options.firstRetryDelay * pow(2, Double(attempt - 1))) * 1e9))
        }
    }
}
