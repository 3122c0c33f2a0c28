import AppConfigCLI
import AppConfigCore
@testable import AppConfigPush
import Foundation
import ServerStandIn
import TestSupport
import Testing

/// `push` of MDM commands into the NanoMDM stand-in (issue 56): each device gets exactly its
/// command, once; 207 partials are retried for the failed ids only; a refused duplicate UUID is
/// the first try's success.
@Suite("Push: MDM commands into NanoMDM", .serialized)
struct PushMDMTests {
    /// Each device's queue holds exactly its command file's bytes, once, and it was pushed.
    static func expectQueuesHoldOutput(_ f: PushFixture, _ state: StandInServer.State, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let index = try f.index()
        #expect(state.queue.count == index.count, sourceLocation: sourceLocation)
        for (device, line) in index {
            let command = try f.file(try #require(line.path))
            let queued = state.queue[device] ?? []
            #expect(queued.count == 1 && queued.first?.body == command, "\(device): \(queued.count) commands queued", sourceLocation: sourceLocation)
            #expect((state.pushes[device] ?? 0) >= 1, "\(device) never pushed", sourceLocation: sourceLocation)
        }
    }

    @Test("mdm-settings: each device gets exactly its command; a second push sends nothing", arguments: [StandInServer.Flavor.nanomdm, .nanohub])
    func settings(flavor: StandInServer.Flavor) async throws {
        let f = try PushFixture()
        defer { f.remove() }
        #expect(f.render("mdm-settings").status == 3)
        let server = try StandInServer.started(flavor)
        defer { server.stop() }
        let kind: ServerKind = flavor == .nanohub ? .nanohub : .nanomdm
        let first = await f.push(server, kind)
        #expect(first.exitStatus == 0, "\(first.failures.prefix(3).map(\.problem.message)) \(String(describing: first.fatal))")
        let state = server.snapshot
        try Self.expectQueuesHoldOutput(f, state)
        // Calls of at most 100 ids; a busy machine may see a keep-alive connection dropped, and
        // only the client's counted retries may add to the calls.
        let pushCalls = (state.queue.count + 99) / 100
        #expect((pushCalls...pushCalls + first.summary.retries).contains(state.requests["GET push"] ?? 0))
        let before = state.requestCount
        let second = await f.push(server, kind)
        #expect(second.exitStatus == 0)
        #expect(server.snapshot.requestCount == before)
    }

    @Test("207 partials are retried for the failed ids only; a duplicate UUID after a lost answer is success")
    func partialsAndDuplicates() async throws {
        let f = try PushFixture()
        defer { f.remove() }
        f.render("mdm-settings")
        let server = try StandInServer.started(.nanomdm)
        defer { server.stop() }
        let devices = try f.index().keys.sorted()
        let failing = Array(devices.prefix(7))
        let lost = Set(devices.dropFirst(7).prefix(5))
        server.update { state in
            for id in failing { state.failingPushes[id] = 2 }
        }
        // The first enqueue for these devices acts, then the connection drops before the answer.
        let answered = LockedSet()
        server.fault = { request, _ in
            guard request.method == "PUT", let id = request.path.split(separator: "/").last.map(String.init), lost.contains(id) else { return nil }
            return answered.insert(id) ? .dropAfterActing : nil
        }
        let result = await f.push(server, .nanomdm)
        #expect(result.exitStatus == 0, "\(result.failures.prefix(3).map(\.problem.message))")
        let state = server.snapshot
        try Self.expectQueuesHoldOutput(f, state)
        // Every device was pushed exactly once: the partial's retries named only the failed ids.
        for device in devices { #expect(state.pushes[device] == 1, "\(device) pushed \(state.pushes[device] ?? 0) times") }
        let enqueues = devices.count + lost.count
        #expect((enqueues...enqueues + result.summary.retries).contains(state.requests["PUT enqueue"] ?? 0))
        #expect(result.summary.retries >= lost.count + 2)
    }

    @Test("Enqueue refusals fail the device and name it; a rerun sends only those")
    func failedEnqueue() async throws {
        let f = try PushFixture()
        defer { f.remove() }
        f.render("mdm-settings")
        let server = try StandInServer.started(.nanomdm)
        defer { server.stop() }
        let device = try #require(try f.index().keys.sorted().first)
        server.update { $0.failingEnqueues[device] = 100 }
        let result = await f.push(server, .nanomdm) { $0.retries = 2 }
        #expect(result.exitStatus == 3)
        #expect(result.failures.map(\.device) == [device])
        #expect(result.failures.first?.problem.code.rawValue == PushCode.server.rawValue)
        server.update { $0.failingEnqueues[device] = nil }
        let rerun = await f.push(server, .nanomdm)
        #expect(rerun.exitStatus == 0)
        #expect(rerun.summary.plan.new == 1)
        try Self.expectQueuesHoldOutput(f, server.snapshot)
    }
}

/// A set shared with the stand-in's fault closure.
final class LockedSet: @unchecked Sendable {
    private let lock = NSLock()
    private var items = Set<String>()
    /// True when `item` was not there yet.
    func insert(_ item: String) -> Bool { lock.withLock { items.insert(item).inserted } }
}
