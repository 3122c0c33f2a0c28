import AppConfigCore
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL

/// The servers a push talks to, with what was measured on the real ones (docs/push.md).
public enum ServerKind: String, Sendable, CaseIterable {
    case kmfddm, nanohub, nanomdm

    /// The HTTP Basic user; the password is the API key.
    package var user: String { self == .nanomdm ? "nanomdm" : (self == .nanohub ? "nanohub" : "kmfddm") }

    /// Where the DDM API is (KMFDDM's `/v1`; NanoHUB serves it under `/api/v1/ddm`).
    package var ddmPrefix: String? {
        switch self {
        case .kmfddm: "/v1"
        case .nanohub: "/api/v1/ddm/v1"
        case .nanomdm: nil
        }
    }

    /// Where the NanoMDM API is (NanoHUB: under `/api/v1/nanomdm`).
    package var mdmPrefix: String? {
        switch self {
        case .nanomdm: "/v1"
        case .nanohub: "/api/v1/nanomdm/v1"
        case .kmfddm: nil
        }
    }
}

/// An HTTP answer, its body read whole (the servers' answers are small).
package struct HTTPAnswer: Sendable {
    package var status: Int
    package var body: [UInt8]
    package var retryAfter: Double?

    package var text: String {
        let t = String(decoding: body.prefix(300), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return t.isEmpty ? "HTTP \(status)" : "HTTP \(status): \(t)"
    }
}

/// A request that did not succeed: the device's problem, or the whole push's (`fatal`).
package struct PushFailure: Error, Sendable {
    package var problem: Problem
    package var fatal: Bool

    package init(problem: Problem, fatal: Bool) {
        self.problem = problem
        self.fatal = fatal
    }
}

/// What one request is, for the counters and the plan.
package enum RequestKind: String, CaseIterable, Sendable {
    case declarationPut = "declaration-put"
    case declarationGet = "declaration-get"
    case declarationDelete = "declaration-delete"
    case setAdd = "set-add"
    case setRemove = "set-remove"
    case setGet = "set-get"
    case declarationSetsGet = "declaration-sets-get"
    case enrollmentSet = "enrollment-set"
    case enrollmentSetRemove = "enrollment-set-remove"
    case notify
    case enqueue
    case push
    case assetGet = "asset-get"
    /// `appconfig status`: a DDM server's status endpoints.
    case statusGet = "status-get"
}

/// Counts what was sent: by kind, retries, answers.
package final class RequestCounters: @unchecked Sendable {
    private let lock = NSLock()
    private var byKind: [RequestKind: Int] = [:]
    private(set) var retries = 0
    private(set) var notModified = 0

    func count(_ kind: RequestKind, status: Int?) {
        lock.withLock {
            byKind[kind, default: 0] += 1
            if status == 304 { notModified += 1 }
        }
    }

    func retried() { lock.withLock { retries += 1 } }

    package var total: Int { lock.withLock { byKind.values.reduce(0, +) } }
    var snapshot: [String: Int] { lock.withLock { Dictionary(uniqueKeysWithValues: byKind.map { ($0.key.rawValue, $0.value) }) } }
    var unchangedAnswers: Int { lock.withLock { notModified } }
}

/// The HTTP side of a push: one AsyncHTTPClient (keep-alive connections, at most `connections` to
/// the server), Basic authentication, and the retry policy: connection errors, timeouts, 5xx and 429
/// are retried with exponential backoff (429's `Retry-After` honoured); what a caller says is
/// final (such as "declaration not found") is not. A 401 or 403 ends the whole push.
package final class ServerConnection: @unchecked Sendable {
    package let base: String
    package let kind: ServerKind
    package let counters = RequestCounters()
    private let client: HTTPClient
    /// Asset hosts (`--verify-assets`): a client of their own, without the API's credentials.
    private let assetClient: HTTPClient
    private let authorization: String
    private let retries: Int
    private let timeout: TimeAmount
    /// The first backoff; it doubles with each retry, up to `maxDelay`.
    package var firstDelay = 0.2
    var maxDelay = 10.0

    package init(kind: ServerKind, url: String, apiKey: String, connections: Int, caFile: String?, retries: Int, timeout: Double) throws(Problem) {
        var base = url
        while base.hasSuffix("/") { base.removeLast() }
        self.base = base
        self.kind = kind
        self.retries = retries
        self.timeout = .milliseconds(Int64(timeout * 1000))
        try Self.checkScheme(base, option: "--url")
        var configuration = HTTPClient.Configuration()
        configuration.httpVersion = .http1Only
        configuration.redirectConfiguration = .disallow
        configuration.decompression = .disabled
        configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: max(1, connections))
        configuration.timeout = .init(connect: .milliseconds(Int64(min(timeout, 10) * 1000)), read: self.timeout)
        if let caFile {
            var tls = TLSConfiguration.makeClientConfiguration()
            do { tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(caFile)) } catch {
                throw Problem(PushCode.usage, at: Location(file: caFile), "cannot read the certificates in \(caFile): \(error)")
            }
            configuration.tlsConfiguration = tls
        }
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        assetClient = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        let credentials = Data((kind.user + ":" + apiKey).utf8).base64EncodedString()
        authorization = "Basic " + credentials
    }

    /// https only, but for loopback (a server on this machine, or a tunnel to one).
    static func checkScheme(_ url: String, option: String) throws(Problem) {
        guard let parts = URLComponents(string: url), let scheme = parts.scheme?.lowercased(), let host = parts.host, !host.isEmpty else {
            throw Problem(PushCode.usage, at: Location(), "\(option) \(url) is not a URL")
        }
        if scheme == "https" { return }
        guard scheme == "http" else { throw Problem(PushCode.usage, at: Location(), "\(option) \(url): only https:// (http:// for loopback)") }
        let loopback = host == "localhost" || host == "::1" || host == "[::1]" || host.hasPrefix("127.")
        guard loopback else {
            throw Problem(PushCode.usage, at: Location(), "\(option) \(url): http:// only for loopback; a server elsewhere takes https:// (the API key goes with every request)")
        }
    }

    /// Closes the connections without waiting for them: against a TLS server (the tests' SwiftNIO
    /// stand-in) AsyncHTTPClient's shutdown was seen waiting for ever after every request had
    /// been answered; nothing the push needs is left by then.
    package func shutdown() {
        let clients = [client, assetClient]
        Task.detached { for c in clients { try? await c.shutdown() } }
    }

    /// A path segment or query value, percent-encoded: all but RFC 3986's unreserved characters.
    /// By hand over the bytes: Foundation's version built a character set's bitmap per call,
    /// measurable at tens of thousands of requests a second (the push benchmark).
    package static func percentEncoded(_ s: String) -> String {
        func unreserved(_ b: UInt8) -> Bool {
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x2D || b == 0x2E || b == 0x5F || b == 0x7E
        }
        guard s.utf8.contains(where: { !unreserved($0) }) else { return s }
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(s.utf8.count * 3)
        for b in s.utf8 {
            if unreserved(b) { out.append(b) } else { out += [0x25, hex[Int(b >> 4)], hex[Int(b & 15)]] }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Sends one request with the retry policy. `final` names answers that are the device's error
    /// as they are (not retried) although 5xx; a 2xx, 304 or `accept`ed answer is returned.
    package func send(_ kind: RequestKind, _ method: HTTPMethod, _ path: String, query: [(String, String)] = [], body: [UInt8]? = nil,
              contentType: String? = nil, authenticated: Bool = true, absolute: Bool = false,
              accept: (HTTPAnswer) -> Bool = { _ in false }, final: (HTTPAnswer) -> Problem? = { _ in nil },
              what: @autoclosure () -> String) async throws(PushFailure) -> HTTPAnswer {
        var url = absolute ? path : base + path
        if !query.isEmpty {
            url += "?" + query.map { $0.0 + "=" + Self.percentEncoded($0.1) }.joined(separator: "&")
        }
        var attempt = 0
        while true {
            if Task.isCancelled { throw PushFailure(problem: Problem(PushCode.unreachable, at: Location(), "cancelled"), fatal: true) }
            var request = HTTPClientRequest(url: url)
            request.method = method
            if authenticated { request.headers.add(name: "Authorization", value: authorization) }
            if let contentType { request.headers.add(name: "Content-Type", value: contentType) }
            if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
            var answer: HTTPAnswer?
            var transportError: String?
            do {
                let response = try await (authenticated ? client : assetClient).execute(request, timeout: timeout)
                var buffer = try await response.body.collect(upTo: 16 << 20)
                let retryAfter = response.headers.first(name: "Retry-After").flatMap(Double.init)
                answer = HTTPAnswer(status: Int(response.status.code), body: buffer.readBytes(length: buffer.readableBytes) ?? [], retryAfter: retryAfter)
            } catch {
                transportError = Self.describe(error)
                // A certificate that is not trusted will not be trusted on the next try.
                if let e = error as? NIOSSLError, case .handshakeFailed = e {
                    counters.count(kind, status: nil)
                    let url = absolute ? path : base
                    throw PushFailure(problem: Problem(PushCode.unreachable, at: Location(), "\(what()): the TLS handshake with \(url) failed (\(transportError!)); a server whose certificate your system does not trust needs --ca-file"),
                                      fatal: authenticated)
                }
            }
            counters.count(kind, status: answer?.status)
            var wait: Double?
            if let answer {
                if (200..<300).contains(answer.status) || answer.status == 304 || accept(answer) { return answer }
                if answer.status == 401 || answer.status == 403 {
                    throw PushFailure(problem: Problem(PushCode.auth, at: Location(), "\(self.kind.rawValue) at \(base) refused the API key (\(answer.status) \(HTTPResponseStatus(statusCode: answer.status).reasonPhrase)) for user \(self.kind.user)"), fatal: authenticated)
                }
                if let problem = final(answer) { throw PushFailure(problem: problem, fatal: false) }
                if answer.status == 429 {
                    wait = answer.retryAfter ?? backoff(attempt)
                } else if answer.status >= 500 {
                    wait = backoff(attempt)
                } else {
                    throw PushFailure(problem: Problem(PushCode.server, at: Location(), "\(what()): \(answer.text)"), fatal: false)
                }
            } else {
                wait = backoff(attempt)
            }
            attempt += 1
            guard attempt <= retries, let wait else {
                if let answer {
                    throw PushFailure(problem: Problem(PushCode.server, at: Location(), "\(what()): \(answer.text) (after \(retries) retries)"), fatal: false)
                }
                throw PushFailure(problem: Problem(PushCode.unreachable, at: Location(), "\(what()): \(transportError ?? "no answer") (after \(retries) retries)"), fatal: authenticated)
            }
            counters.retried()
            do { try await Task.sleep(nanoseconds: UInt64(min(wait, 120) * 1e9)) } catch {
                throw PushFailure(problem: Problem(PushCode.unreachable, at: Location(), "cancelled"), fatal: true)
            }
        }
    }

    /// Exponential, with up to a quarter of jitter so that retries of many workers spread out.
    private func backoff(_ attempt: Int) -> Double {
        let d = min(maxDelay, firstDelay * pow(2, Double(attempt)))
        return d * Double.random(in: 0.75...1.0)
    }

    static func describe(_ error: Error) -> String {
        if let e = error as? HTTPClientError {
            switch e {
            case .connectTimeout: return "connection timed out"
            case .readTimeout, .deadlineExceeded: return "no answer in time"
            case .remoteConnectionClosed: return "the server closed the connection"
            default: return "\(e)"
            }
        }
        return "\(error)"
    }
}
