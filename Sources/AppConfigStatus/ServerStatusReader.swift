import AppConfigCore
import AppConfigPush
import AppConfigSpec
import Foundation

/// What a DDM server (KMFDDM, or NanoHUB's KMFDDM under `/api/v1/ddm`) keeps of its devices'
/// status: per enrollment its declarations' status (`GET /v1/declaration-status/{ids}`: identifier,
/// active, valid, server-token, reasons, status_received), the errors of its reports
/// (`GET /v1/status-errors/{ids}`), and its newest raw report (`GET
/// /v1/status-report/{id}?index=0`), the only place `app.managed.list` survives. Enrollment IDs go
/// `idsPerRequest` to a call (comma-separated); raw reports one device each, `jobs` at once.
struct ServerStatusReader {
    let connection: ServerConnection
    let prefix: String
    var idsPerRequest = 50
    var jobs = 16

    init(connection: ServerConnection) throws(Problem) {
        guard let prefix = connection.kind.ddmPrefix else {
            throw Problem(StatusCode.usage, at: Location(), "--server \(connection.kind.rawValue) keeps no DDM status: read its webhook's events with --events")
        }
        self.connection = connection
        self.prefix = prefix
    }

    /// The fold of every enrollment in `ids`, as the server has it now.
    func read(_ ids: [String]) async throws(Problem) -> StatusFold {
        let batches = stride(from: 0, to: ids.count, by: idsPerRequest).map { Array(ids[$0..<min(ids.count, $0 + idsPerRequest)]) }
        let collected = Collected()
        await forEachConcurrently(batches, jobs: jobs, until: { collected.failure != nil }) { batch in
            do throws(PushFailure) {
                let joined = batch.map(ServerConnection.percentEncoded).joined(separator: ",")
                let status = try await connection.send(.statusGet, .GET, "\(prefix)/declaration-status/\(joined)", what: "GET declaration-status")
                let errors = try await connection.send(.statusGet, .GET, "\(prefix)/status-errors/\(joined)", what: "GET status-errors")
                var parsed: [String: DeviceReport] = [:]
                try Self.foldDeclarationStatus(status.body, into: &parsed)
                try Self.foldErrors(errors.body, into: &parsed)
                for id in batch {
                    let raw = try await connection.send(.statusGet, .GET, "\(prefix)/status-report/\(ServerConnection.percentEncoded(id))", query: [("index", "0")],
                                                        accept: { $0.status == 404 }, what: "GET status-report of \(id)")
                    guard raw.status != 404, !raw.body.isEmpty else { continue }
                    // Its declarations come from declaration-status (with KMFDDM's own view of
                    // them); the raw report adds the apps.
                    do throws(Problem) {
                        let update = try StatusReportReader.read(json: raw.body, at: .init(Location(file: "status-report/\(id)"), enrollment: id))
                        var device = parsed[id, default: DeviceReport()]
                        for (bundle, app) in update.apps ?? [] { device.apps[bundle] = app }
                        device.reports += 1
                        parsed[id] = device
                    } catch {
                        throw PushFailure(problem: error, fatal: false)
                    }
                }
                collected.add(parsed)
            } catch {
                collected.fail(error.problem, fatal: error.fatal)
            }
        }
        if let failure = collected.failure { throw failure }
        var fold = StatusFold()
        fold.packed = collected.devices.mapValues(PackedReport.init)
        fold.problems = collected.problems
        fold.reports = collected.devices.values.reduce(0) { $0 + $1.reports }
        return fold
    }

    /// `{"ENROLLMENT": [{identifier, active, valid, server-token, reasons, status_received}]}`.
    static func foldDeclarationStatus(_ body: [UInt8], into devices: inout [String: DeviceReport]) throws(PushFailure) {
        for (id, list) in try object(body, "declaration-status") {
            guard case .array(let items) = list.kind else { continue }
            var device = devices[id, default: DeviceReport()]
            for item in items {
                guard case .dictionary(let o) = item.kind, let identifier = StatusReportReader.string(o, "identifier") else { continue }
                let active = StatusReportReader.member(o, "active").map { if case .boolean(let b) = $0.kind { b } else { false } } ?? false
                device.declarations[identifier] = .init(token: StatusReportReader.string(o, "server-token") ?? "", active: active,
                                                        valid: StatusReportReader.string(o, "valid") ?? "unknown",
                                                        reasons: StatusReportReader.reasons(StatusReportReader.member(o, "reasons")))
                if let received = StatusReportReader.string(o, "status_received"), received > (device.received ?? "") { device.received = received }
            }
            devices[id] = device
        }
    }

    /// `{"ENROLLMENT": [{path, error, timestamp}]}`: the report-level errors (`path` `.Errors`...).
    static func foldErrors(_ body: [UInt8], into devices: inout [String: DeviceReport]) throws(PushFailure) {
        for (id, list) in try object(body, "status-errors") {
            guard case .array(let items) = list.kind, !items.isEmpty else { continue }
            var device = devices[id, default: DeviceReport()]
            device.errors = items.compactMap { item in
                guard case .dictionary(let o) = item.kind else { return nil }
                var codes: [String] = []
                if let e = StatusReportReader.member(o, "error"), case .dictionary(let error) = e.kind {
                    codes = StatusReportReader.reasons(StatusReportReader.member(error, "reasons") ?? StatusReportReader.member(error, "Reasons"))
                    if codes.isEmpty, let code = StatusReportReader.string(error, "code") { codes = [code] }
                }
                return (StatusReportReader.string(o, "path") ?? "?") + (codes.isEmpty ? "" : ": " + codes.joined(separator: ", "))
            }
            devices[id] = device
        }
    }

    static func object(_ body: [UInt8], _ what: String) throws(PushFailure) -> [(String, RawValue)] {
        if body.isEmpty || body == Array("null".utf8) { return [] }
        let value: RawValue
        do throws(Problem) { value = try JSONReader.document(body, file: what) } catch {
            throw PushFailure(problem: Problem(StatusCode.server, at: Location(), "\(what): the server's answer is not JSON"), fatal: true)
        }
        guard case .dictionary(let members) = value.kind else {
            throw PushFailure(problem: Problem(StatusCode.server, at: Location(), "\(what): the server's answer is not a JSON object"), fatal: true)
        }
        return members.map { ($0.key, $0.value) }
    }

    /// What the workers gather: each batch's devices, the first fatal failure, the problems.
    final class Collected: @unchecked Sendable {
        private let lock = NSLock()
        private(set) var devices: [String: DeviceReport] = [:]
        private(set) var problems: [Problem] = []
        private var fatal: Problem?
        var failure: Problem? { lock.withLock { fatal } }

        func add(_ parsed: [String: DeviceReport]) { lock.withLock { devices.merge(parsed) { $1 } } }
        func fail(_ problem: Problem, fatal isFatal: Bool) {
            lock.withLock {
                if isFatal || problem.code == PushCode.auth || problem.code == PushCode.unreachable { if fatal == nil { fatal = problem } } else { problems.append(problem) }
            }
        }
    }
}
