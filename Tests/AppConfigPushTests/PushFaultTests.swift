import AppConfigCLI
import AppConfigCore
@testable import AppConfigPush
import Foundation
import ServerStandIn
import TestSupport
import Testing

/// Faults (issue 56): a server that fails, drops connections, answers late or loses what it was
/// given; a push ends as a clean one would, or names what it could not do.
@Suite("Push: faults", .serialized)
struct PushFaultTests {
    @Test("5xx, 429, dropped connections (before and after acting) and slow answers: the server ends as after a clean push")
    func faultsThenClean() async throws {
        let f = try PushFixture()
        defer { f.remove() }
        f.render()
        let server = try StandInServer.started(.kmfddm)
        defer { server.stop() }
        // A fixed pattern over the request numbers: every kind of fault, on every kind of request.
        server.fault = { _, n in
            switch n % 23 {
            case 3: .status(503, body: "busy")
            case 7: .dropBeforeActing
            case 11: .dropAfterActing
            case 13: .status(429, body: "slow down", retryAfter: 0)
            case 17: .delay(milliseconds: 30)
            case 19: .status(500, body: "storage: database is locked")
            default: nil
            }
        }
        let result = await f.push(server, .kmfddm)
        #expect(result.exitStatus == 0, "\(result.failures.prefix(3).map(\.problem.message)) \(String(describing: result.fatal))")
        #expect(result.summary.retries > 0)
        let faulty = server.snapshot

        let clean = try StandInServer.started(.kmfddm)
        defer { clean.stop() }
        _ = await f.push(clean, .kmfddm) { $0.journal = f.dir.path("clean-journal") }
        let expected = clean.snapshot
        try f.expectServerHoldsOutput(faulty)
        #expect(faulty.declarations == expected.declarations)
        #expect(faulty.sets == expected.sets)
        #expect(faulty.enrollmentSets == expected.enrollmentSets)
        #expect(Set(faulty.syncCommands.keys) == Set(expected.syncCommands.keys))
    }

    @Test("A server that lost a declaration: the device fails with push.ordering, not retried; the others go")
    func declarationNotFound() async throws {
        let f = try PushFixture()
        defer { f.remove() }
        f.render()
        let server = try StandInServer.started(.kmfddm)
        defer { server.stop() }
        let (device, line) = try #require(try f.index().filter { !$0.value.removed }.min { $0.key < $1.key })
        let activation = try #require(line.ids.first { $0.hasPrefix("appconfig.activation.") })
        // The server loses its activation between the store and the set addition.
        server.fault = { request, _ in
            guard request.method == "PUT", request.path.contains("/set-declarations/"), request.values("declaration") == [activation] else { return nil }
            return .status(500, body: "declaration not found")
        }
        let result = await f.push(server, .kmfddm)
        #expect(result.exitStatus == 3)
        #expect(result.failures.map(\.device) == [device])
        #expect(result.failures.first?.problem.code.rawValue == PushCode.ordering.rawValue)
        #expect(result.failures.first?.problem.message.contains(activation) == true)
        #expect(result.summary.retries == 0)
        #expect(server.snapshot.enrollmentSets[device] == nil)
        // The rerun sends that device alone.
        server.fault = nil
        let rerun = await f.push(server, .kmfddm)
        #expect(rerun.exitStatus == 0)
        #expect(rerun.summary.plan.new == 1 && rerun.summary.plan.unchanged == result.summary.devices.pushed)
        try f.expectServerHoldsOutput(server.snapshot)
    }

    @Test("A server that never answers: one clear line, status 1, nothing recorded")
    func unreachable() async throws {
        let f = try PushFixture()
        defer { f.remove() }
        f.render()
        let server = try StandInServer.started(.kmfddm)
        let url = server.baseURL
        server.stop()
        let result = await PushJob({
            var o = PushOptions(source: f.out, server: .kmfddm, url: url, apiKey: PushFixture.apiKey)
            o.retries = 1
            o.timeout = 1
            o.firstRetryDelay = 0.01
            return o
        }()).run()
        #expect(result.exitStatus == 1)
        #expect(result.fatal?.code.rawValue == PushCode.unreachable.rawValue)
        let journal = try PushJournal(path: f.out + ".push-journal", server: "kmfddm " + url, writable: false)
        #expect(journal.devices.isEmpty)
    }

    @Test("A journal: a last line cut short is dropped; one for another server is refused; a bad line is named")
    func journal() throws {
        let dir = try TemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir.url) }
        let path = dir.path("j")
        do {
            let j = try PushJournal(path: path, server: "kmfddm http://127.0.0.1:1", writable: true)
            j.recordDeclaration("a", ours: "t1", server: "s1")
            j.recordDevice("d1", .init(digest: "x", enrollment: "e1", set: "s", declarations: ["a"]))
        }
        let handle = try #require(FileHandle(forWritingAtPath: path))
        handle.seekToEndOfFile()
        handle.write(Data(#"{"device":"d2","sha2"#.utf8))
        try handle.close()
        let read = try PushJournal(path: path, server: "kmfddm http://127.0.0.1:1", writable: false)
        #expect(read.devices.keys.sorted() == ["d1"])
        #expect(read.declarations["a"] == .init(ours: "t1", server: "s1"))
        do {
            _ = try PushJournal(path: path, server: "kmfddm https://elsewhere", writable: false)
            Issue.record("a journal of another server was read")
        } catch {
            #expect(error.code.rawValue == PushCode.journal.rawValue)
            #expect(error.message == "the journal \(path) records pushes to kmfddm http://127.0.0.1:1, not kmfddm https://elsewhere: give --journal for this server")
        }
        try Data("{\"journal\":\"appconfig-push 1\",\"server\":\"k\"}\n{\"what\":1}\n".utf8).write(to: URL(fileURLWithPath: path))
        do {
            _ = try PushJournal(path: path, server: "k", writable: false)
            Issue.record("a bad line was read")
        } catch {
            #expect(error.location.line == 2)
            #expect(error.code.rawValue == PushCode.journal.rawValue)
        }
    }
}
