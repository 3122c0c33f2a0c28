import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix

/// A stand-in for the servers `appconfig push` talks to: KMFDDM (DDM at `/v1`), NanoMDM (its command
/// queue at `/v1`) and NanoHUB (both, under `/api/v1/ddm` and `/api/v1/nanomdm`). Written from the
/// facts measured on the real servers (KMFDDM c6011d2, NanoMDM 1d5fcf4; the list is in
/// docs/push.md), not from their code: status codes, the token the server computes itself, the
/// 30-id notify chunks whose later chunks go out empty, 207 partials, refused duplicate command
/// UUIDs. Every request passes `fault` first: a test makes the server answer 5xx or 429, drop the
/// connection before or after acting, or answer late.
public final class StandInServer: @unchecked Sendable {
    public enum Flavor: String, Sendable { case kmfddm, nanomdm, nanohub }

    /// A request as the handlers see it: the path without its query, the query's pairs in order.
    public struct Request: Sendable {
        public var method: String
        public var path: String
        public var query: [(String, String)]
        public var body: [UInt8]
        public var user: String?
        public var password: String?

        public func values(_ name: String) -> [String] { query.filter { $0.0 == name }.map(\.1) }
    }

    /// What a fault does to one request.
    public enum Fault: Sendable {
        /// Answer this status (and body) without acting; `retryAfter` seconds in `Retry-After`.
        case status(Int, body: String = "", retryAfter: Int? = nil)
        /// Close the connection without acting.
        case dropBeforeActing
        /// Act, then close the connection without answering (a reply lost on the way).
        case dropAfterActing
        /// Act and answer after this many milliseconds.
        case delay(milliseconds: Int64)
    }

    public let flavor: Flavor
    public let apiKey: String
    public private(set) var port = 0
    /// Decides a fault for each request (its number from 1 in arrival order); nil: none.
    public var fault: (@Sendable (Request, Int) -> Fault?)? {
        get { lock.withLock { _fault } }
        set { lock.withLock { _fault = newValue } }
    }

    private let lock = NIOLock()
    private var _fault: (@Sendable (Request, Int) -> Fault?)?
    private var state = State()
    private let group: MultiThreadedEventLoopGroup
    private var channel: Channel?

    /// What the server holds, and what was asked of it.
    public struct State: Sendable {
        /// Declarations by Identifier: the stored JSON object's parts and the token the server made.
        public var declarations: [String: StoredDeclaration] = [:]
        public var sets: [String: Set<String>] = [:]
        public var enrollmentSets: [String: Set<String>] = [:]
        /// DeclarativeManagement commands enqueued for an enrollment by a notify (at most the first
        /// 30 ids of a call: the later chunks go out with an empty body).
        public var syncCommands: [String: Int] = [:]
        /// Enrollments a notify named whose command went out empty: pushed, never told to sync.
        public var notifiedWithoutCommand: [String: Int] = [:]
        /// The MDM queue: per enrollment, its commands' bytes by CommandUUID in order.
        public var queue: [String: [(uuid: String, body: [UInt8])]] = [:]
        /// APNs pushes sent per enrollment.
        public var pushes: [String: Int] = [:]
        /// Requests by "METHOD route" (the path's fixed part), and writes without `nonotify=1`.
        public var requests: [String: Int] = [:]
        public var writesWithoutNoNotify = 0
        public var requestCount = 0
        /// Enrollments whose enqueue fails (`command_error`) while the count lasts; and pushes.
        public var failingEnqueues: [String: Int] = [:]
        public var failingPushes: [String: Int] = [:]

        /// Per enrollment, the status reports its device sent, newest last (the raw JSON): what
        /// KMFDDM's status endpoints answer from (`declaration-status`, `status-errors`,
        /// `status-report?index=N`).
        public var statusReports: [String: [[UInt8]]] = [:]

        /// The writes (PUT, POST, DELETE) the server answered 2xx to, by route; 304s apart.
        public var changes = 0
        public var unchanged = 0
    }

    public struct StoredDeclaration: Sendable, Equatable {
        public var type: String
        public var payload: String
        public var token: String
    }

    /// Where `GET /assets/NAME` (no authentication) is served from: `NAME.plist` in this folder,
    /// as the host behind render's `--asset-base-url` serves its `assets/`.
    public var assetFolder: String? {
        get { lock.withLock { _assetFolder } }
        set { lock.withLock { _assetFolder = newValue } }
    }
    private var _assetFolder: String?

    public init(flavor: Flavor, apiKey: String) {
        self.flavor = flavor
        self.apiKey = apiKey
        group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    }

    /// The last reference may go on one of the group's own threads (a connection's handler):
    /// the group is shut down without waiting there.
    deinit { group.shutdownGracefully { _ in } }

    public var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Starts listening on an ephemeral loopback port.
    public func start() throws {
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.backlog, value: 256)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.pipeline.configureHTTPServerPipeline(withErrorHandling: true).flatMap {
                    channel.pipeline.addHandler(Handler(server: self))
                }
            }
        let channel = try bootstrap.bind(host: "127.0.0.1", port: 0).wait()
        self.channel = channel
        port = channel.localAddress?.port ?? 0
    }

    public func stop() {
        try? channel?.close().wait()
        channel = nil
    }

    /// A copy of what the server holds now.
    public var snapshot: State { lock.withLock { state } }

    /// Changes the state (preloads, failing enrollments).
    public func update(_ body: (inout State) -> Void) { lock.withLock { body(&state) } }

    // MARK: Answering

    struct Answer {
        var status: Int
        var body: [UInt8] = []
        var headers: [(String, String)] = []
        var drop = false
        var delay: Int64 = 0
        var closeAfter = false
    }

    func answer(_ request: Request) -> Answer {
        lock.withLock {
            state.requestCount += 1
            let number = state.requestCount
            let fault = _fault?(request, number)
            switch fault {
            case .status(let code, let body, let retryAfter)?:
                return Answer(status: code, body: Array(body.utf8), headers: retryAfter.map { [("Retry-After", String($0))] } ?? [])
            case .dropBeforeActing?:
                return Answer(status: 0, drop: true)
            default:
                break
            }
            var answer = act(request)
            if case .dropAfterActing? = fault { answer.drop = true }
            if case .delay(let ms)? = fault { answer.delay = ms }
            return answer
        }
    }

    private var user: String { flavor == .nanohub ? "nanohub" : flavor.rawValue }

    /// The real servers' routes, under this flavour's prefixes.
    private func act(_ r: Request) -> Answer {
        if r.method == "GET", r.path.hasPrefix("/assets/"), let folder = _assetFolder {
            let name = String(r.path.dropFirst("/assets/".count))
            guard !name.contains("/"), let data = FileManager.default.contents(atPath: folder + "/" + name + ".plist") else {
                return Answer(status: 404, body: Array("not found\n".utf8))
            }
            return Answer(status: 200, body: Array(data))
        }
        guard r.user == user, r.password == apiKey else { return Answer(status: 401, body: Array("Unauthorized\n".utf8)) }
        var path = Substring(r.path)
        let ddmPrefix = flavor == .nanohub ? "/api/v1/ddm/v1/" : (flavor == .kmfddm ? "/v1/" : nil)
        let mdmPrefix = flavor == .nanohub ? "/api/v1/nanomdm/v1/" : (flavor == .nanomdm ? "/v1/" : nil)
        if let ddmPrefix, path.hasPrefix(ddmPrefix) {
            path = path.dropFirst(ddmPrefix.count)
            return ddm(r, Array(path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)))
        }
        if let mdmPrefix, path.hasPrefix(mdmPrefix) {
            path = path.dropFirst(mdmPrefix.count)
            return mdm(r, Array(path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)))
        }
        return Answer(status: 404, body: Array("404 page not found\n".utf8))
    }

    private func count(_ r: Request, _ route: String) {
        state.requests[r.method + " " + route, default: 0] += 1
        if r.method != "GET" && route != "notify" && route != "enqueue" && !r.values("nonotify").contains("1") {
            state.writesWithoutNoNotify += 1
        }
    }

    private func written(_ changed: Bool) -> Answer {
        if changed { state.changes += 1 } else { state.unchanged += 1 }
        return Answer(status: changed ? 204 : 304)
    }

    private func json(_ value: Any) -> Answer {
        let data = (try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys])) ?? Data()
        return Answer(status: 200, body: Array(data), headers: [("Content-Type", "application/json")])
    }

    private func ddm(_ r: Request, _ parts: [String]) -> Answer {
        switch (r.method, parts.first ?? "", parts.count) {
        case ("PUT", "declarations", 1):
            count(r, "declarations")
            guard let object = try? JSONSerialization.jsonObject(with: Data(r.body)) as? [String: Any],
                  let id = object["Identifier"] as? String, !id.isEmpty, let type = object["Type"] as? String,
                  let payload = object["Payload"] as? [String: Any],
                  let payloadBytes = try? JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys]) else {
                return Answer(status: 400, body: Array("invalid declaration\n".utf8))
            }
            // KMFDDM discards the client's ServerToken and computes its own from the content.
            let text = String(decoding: payloadBytes, as: UTF8.self)
            let token = Self.token(id + "\n" + type + "\n" + text)
            let stored = StoredDeclaration(type: type, payload: text, token: token)
            if state.declarations[id] == stored { return written(false) }
            state.declarations[id] = stored
            return written(true)
        case ("GET", "declarations", 2):
            count(r, "declarations/{id}")
            guard let d = state.declarations[parts[1]] else { return Answer(status: 404, body: Array("declaration not found\n".utf8)) }
            let payload = (try? JSONSerialization.jsonObject(with: Data(d.payload.utf8))) ?? [:]
            return json(["Identifier": parts[1], "Type": d.type, "Payload": payload, "ServerToken": d.token])
        case ("DELETE", "declarations", 2):
            count(r, "declarations/{id}")
            let id = parts[1]
            if state.sets.values.contains(where: { $0.contains(id) }) {
                return Answer(status: 500, body: Array("declaration in use: still in a set\n".utf8))
            }
            return written(state.declarations.removeValue(forKey: id) != nil)
        case ("PUT", "set-declarations", 2), ("DELETE", "set-declarations", 2):
            count(r, "set-declarations/{set}")
            guard let id = r.values("declaration").first else { return Answer(status: 400, body: Array("no declaration\n".utf8)) }
            guard state.declarations[id] != nil else { return Answer(status: 500, body: Array("declaration not found\n".utf8)) }
            if r.method == "PUT" { return written(state.sets[parts[1], default: []].insert(id).inserted) }
            let removed = state.sets[parts[1]]?.remove(id) != nil
            if state.sets[parts[1]]?.isEmpty == true { state.sets[parts[1]] = nil }
            return written(removed)
        case ("GET", "set-declarations", 2):
            count(r, "set-declarations/{set}")
            return json((state.sets[parts[1]] ?? []).sorted())
        case ("GET", "declaration-sets", 2):
            count(r, "declaration-sets/{id}")
            return json(state.sets.filter { $0.value.contains(parts[1]) }.keys.sorted())
        case ("PUT", "enrollment-sets", 2), ("DELETE", "enrollment-sets", 2):
            count(r, "enrollment-sets/{id}")
            guard let set = r.values("set").first else { return Answer(status: 400, body: Array("no set\n".utf8)) }
            if r.method == "PUT" { return written(state.enrollmentSets[parts[1], default: []].insert(set).inserted) }
            let removed = state.enrollmentSets[parts[1]]?.remove(set) != nil
            if state.enrollmentSets[parts[1]]?.isEmpty == true { state.enrollmentSets[parts[1]] = nil }
            return written(removed)
        case ("GET", "enrollment-sets", 2):
            count(r, "enrollment-sets/{id}")
            return json((state.enrollmentSets[parts[1]] ?? []).sorted())
        case ("DELETE", "enrollment-sets-all", 3) where parts[1] == "sets":
            count(r, "enrollment-sets-all/sets/{id}")
            return written(state.enrollmentSets.removeValue(forKey: parts[2]) != nil)
        case ("GET", "declaration-status", 2):
            // Per enrollment, the declarations of its newest report that named them, as KMFDDM
            // keeps them: with `current` (its token is the one stored) and when it came.
            count(r, "declaration-status/{ids}")
            var out: [String: Any] = [:]
            for id in parts[1].split(separator: ",").map(String.init) {
                var entries: [[String: Any]] = []
                for report in state.statusReports[id] ?? [] {
                    guard let o = try? JSONSerialization.jsonObject(with: Data(report)) as? [String: Any],
                          let items = o["StatusItems"] as? [String: Any], let management = items["management"] as? [String: Any],
                          let declarations = management["declarations"] as? [String: Any] else { continue }
                    entries = []
                    for (_, list) in declarations {
                        for case var d as [String: Any] in (list as? [Any]) ?? [] {
                            let identifier = d["identifier"] as? String ?? ""
                            d["current"] = state.declarations[identifier]?.token == d["server-token"] as? String
                            d["status_received"] = "2026-11-28T06:00:00Z"
                            d["status_id"] = "standin"
                            entries.append(d)
                        }
                    }
                }
                if !entries.isEmpty { out[id] = entries.sorted { ($0["identifier"] as? String ?? "") < ($1["identifier"] as? String ?? "") } }
            }
            return json(out)
        case ("GET", "status-errors", 2):
            count(r, "status-errors/{ids}")
            var out: [String: Any] = [:]
            for id in parts[1].split(separator: ",").map(String.init) {
                guard let report = state.statusReports[id]?.last,
                      let o = try? JSONSerialization.jsonObject(with: Data(report)) as? [String: Any],
                      let errors = o["Errors"] as? [Any], !errors.isEmpty else { continue }
                out[id] = errors.map { ["path": ".Errors", "error": $0, "timestamp": "2026-11-28T06:00:00Z", "status_id": "standin"] }
            }
            return json(out)
        case ("GET", "status-report", 2):
            count(r, "status-report/{id}")
            let reports = state.statusReports[parts[1]] ?? []
            let index = Int(r.values("index").first ?? "0") ?? 0
            guard index >= 0, index < reports.count else { return Answer(status: 404, body: Array("status report not found\n".utf8)) }
            return Answer(status: 200, body: reports[reports.count - 1 - index], headers: [("Content-Type", "application/json"), ("X-Status-Report-Index", String(index))])
        case ("POST", "notify", 1):
            count(r, "notify")
            // The notifier sends DeclarativeManagement in chunks of 30 ids through one buffer:
            // every chunk after the first goes out with an empty body.
            for (i, id) in r.values("id").enumerated() {
                if i < 30 { state.syncCommands[id, default: 0] += 1 } else { state.notifiedWithoutCommand[id, default: 0] += 1 }
            }
            return Answer(status: 204)
        default:
            return Answer(status: 404, body: Array("404 page not found\n".utf8))
        }
    }

    private func mdm(_ r: Request, _ parts: [String]) -> Answer {
        guard parts.count == 2, !parts[1].isEmpty else { return Answer(status: 404, body: Array("404 page not found\n".utf8)) }
        let ids = parts[1].split(separator: ",").map(String.init)
        switch (r.method, parts[0]) {
        case ("PUT", "enqueue"):
            count(r, "enqueue")
            guard let uuid = Self.commandUUID(r.body), let type = Self.requestType(r.body) else {
                return Answer(status: 400, body: Array("invalid command\n".utf8))
            }
            var status: [String: Any] = [:]
            var failed = 0
            for id in ids {
                if let left = state.failingEnqueues[id], left > 0 {
                    state.failingEnqueues[id] = left - 1
                    status[id] = ["command_error": "storage: enqueue failed"]
                    failed += 1
                } else if state.queue[id, default: []].contains(where: { $0.uuid == uuid }) {
                    status[id] = ["command_error": "Error 1062 (23000): Duplicate entry '\(uuid)' for key 'PRIMARY'"]
                    failed += 1
                } else {
                    state.queue[id, default: []].append((uuid, r.body))
                    if !r.values("nopush").contains("1") { state.pushes[id, default: 0] += 1 }
                }
            }
            var result: [String: Any] = ["command_uuid": uuid, "request_type": type]
            if !status.isEmpty { result["status"] = status }
            if r.values("nopush").contains("1") { result["no_push"] = true }
            var answer = json(result)
            answer.status = failed == 0 ? 200 : (failed == ids.count ? 500 : 207)
            return answer
        case ("GET", "push"):
            count(r, "push")
            var status: [String: Any] = [:]
            var failed = 0
            for id in ids {
                if let left = state.failingPushes[id], left > 0 {
                    state.failingPushes[id] = left - 1
                    status[id] = ["push_error": "apns: 503 service unavailable"]
                    failed += 1
                } else {
                    state.pushes[id, default: 0] += 1
                    status[id] = ["push_result": "ok-\(state.pushes[id]!)"]
                }
            }
            var answer = json(["status": status])
            answer.status = failed == 0 ? 200 : (failed == ids.count ? 500 : 207)
            return answer
        default:
            return Answer(status: 404, body: Array("404 page not found\n".utf8))
        }
    }

    static func token(_ text: String) -> String {
        // FNV-1a 64 twice, seeded apart: the stand-in only needs a token that moves with content.
        var a: UInt64 = 0xcbf29ce484222325, b: UInt64 = 0x84222325cbf29ce4
        for byte in text.utf8 {
            a = (a ^ UInt64(byte)) &* 0x100000001b3
            b = (b ^ UInt64(byte)) &* 0x100000001b3
        }
        return String(a, radix: 16) + String(b, radix: 16)
    }

    static func plistString(_ key: String, in body: [UInt8]) -> String? {
        let text = String(decoding: body, as: UTF8.self)
        guard let k = text.range(of: "<key>\(key)</key>") else { return nil }
        let rest = text[k.upperBound...]
        guard let open = rest.range(of: "<string>"), let close = rest.range(of: "</string>"), open.upperBound <= close.lowerBound else { return nil }
        return String(rest[open.upperBound..<close.lowerBound])
    }

    static func commandUUID(_ body: [UInt8]) -> String? { plistString("CommandUUID", in: body) }
    static func requestType(_ body: [UInt8]) -> String? { plistString("RequestType", in: body) }
}

/// One connection's requests: gathered whole, answered by the server, or dropped.
private final class Handler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let server: StandInServer
    var head: HTTPRequestHead?
    var body: [UInt8] = []

    init(server: StandInServer) { self.server = server }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let h):
            head = h
            body = []
        case .body(var buffer):
            body += buffer.readBytes(length: buffer.readableBytes) ?? []
        case .end:
            guard let head else { return }
            self.head = nil
            let request = Self.request(head, body)
            let answer = server.answer(request)
            if answer.drop {
                context.close(promise: nil)
                return
            }
            let bound = NIOLoopBound(Responder(handler: self, context: context, head: head, answer: answer), eventLoop: context.eventLoop)
            if answer.delay > 0 {
                context.eventLoop.scheduleTask(in: .milliseconds(answer.delay)) { bound.value.respond() }
            } else {
                bound.value.respond()
            }
        }
    }

    /// Writes one answer on the connection's loop.
    struct Responder {
        let handler: Handler
        let context: ChannelHandlerContext
        let head: HTTPRequestHead
        let answer: StandInServer.Answer

        func respond() {
            var headers = HTTPHeaders()
            for (name, value) in answer.headers { headers.add(name: name, value: value) }
            headers.add(name: "Content-Length", value: String(answer.body.count))
            if !head.isKeepAlive { headers.add(name: "Connection", value: "close") }
            context.write(handler.wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: HTTPResponseStatus(statusCode: answer.status), headers: headers))), promise: nil)
            if !answer.body.isEmpty {
                context.write(handler.wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: answer.body)))), promise: nil)
            }
            if head.isKeepAlive {
                context.writeAndFlush(handler.wrapOutboundOut(.end(nil)), promise: nil)
            } else {
                let channel = context.channel
                context.writeAndFlush(handler.wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
            }
        }
    }

    static func request(_ head: HTTPRequestHead, _ body: [UInt8]) -> StandInServer.Request {
        let uri = head.uri
        let (path, queryText) = uri.firstIndex(of: "?").map { (String(uri[..<$0]), String(uri[uri.index(after: $0)...])) } ?? (uri, "")
        let query: [(String, String)] = queryText.split(separator: "&").map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).removingPercentEncoding ?? String($0) }
            return (parts[0], parts.count > 1 ? parts[1] : "")
        }
        var user: String?, password: String?
        if let auth = head.headers.first(name: "Authorization"), auth.hasPrefix("Basic "),
           let decoded = Data(base64Encoded: String(auth.dropFirst(6))).map({ String(decoding: $0, as: UTF8.self) }),
           let colon = decoded.firstIndex(of: ":") {
            user = String(decoded[..<colon])
            password = String(decoded[decoded.index(after: colon)...])
        }
        let decodedPath = path.removingPercentEncoding ?? path
        return StandInServer.Request(method: head.method.rawValue, path: decodedPath, query: query, body: body, user: user, password: password)
    }
}
