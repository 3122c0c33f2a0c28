import AppConfigCLI
import AppConfigCore
@testable import AppConfigPush
import Foundation
import ServerStandIn
import TestSupport
import Testing

/// `push` of DDM outputs into the KMFDDM and NanoHUB stand-ins (issue 56): the server ends holding
/// exactly the output, only what changed is sent, removals are guarded, faults are survived.
@Suite("Push: DDM into KMFDDM and NanoHUB", .serialized)
struct PushDDMTests {
    @Test("The first push leaves the server holding the output; a second sends nothing", arguments: [StandInServer.Flavor.kmfddm, .nanohub])
    func firstAndSecondPush(flavor: StandInServer.Flavor) async throws {
        let f = try PushFixture()
        defer { f.remove() }
        #expect(f.render().status == 3)
        let server = try StandInServer.started(flavor)
        defer { server.stop() }
        let kind: ServerKind = flavor == .nanohub ? .nanohub : .kmfddm
        let first = await f.push(server, kind)
        #expect(first.fatal == nil, "\(String(describing: first.fatal))")
        #expect(first.failures.isEmpty, "\(first.failures.prefix(3).map(\.problem.message))")
        #expect(first.exitStatus == 0)
        let index = try f.index()
        #expect(first.summary.devices.pushed == index.count)
        #expect(first.summary.plan.new == index.count)
        let state = server.snapshot
        try f.expectServerHoldsOutput(state)
        // Secret documents' declarations went too: the credentials are in the sets.
        #expect(state.declarations.values.contains { $0.type == "com.apple.asset.credential.userpassword" })
        // The journal holds the token the server computed, not ours.
        let journal = try PushJournal(path: f.out + ".push-journal", server: kind.rawValue + " " + server.baseURL, writable: false)
        #expect(journal.devices.count == index.count)
        for (id, stored) in state.declarations { #expect(journal.declarations[id]?.server == stored.token) }
        // Notify calls of at most 30 ids (more only by the client's counted retries).
        let notifyCalls = (index.count + 29) / 30
        #expect((notifyCalls...notifyCalls + first.summary.retries).contains(state.requests["POST notify"] ?? 0))

        let before = server.snapshot.requestCount
        let second = await f.push(server, kind)
        #expect(second.exitStatus == 0)
        #expect(second.summary.plan.unchanged == index.count)
        #expect(second.summary.requestsTotal == 0)
        #expect(server.snapshot.requestCount == before, "a second push sent requests")
    }

    @Test("A first push onto a server that holds the content already costs 304s, not errors")
    func pushWithoutJournal() async throws {
        let f = try PushFixture()
        defer { f.remove() }
        f.render()
        let server = try StandInServer.started(.kmfddm)
        defer { server.stop() }
        _ = await f.push(server, .kmfddm)
        try FileManager.default.removeItem(atPath: f.out + ".push-journal")
        let changesBefore = server.snapshot.changes
        let again = await f.push(server, .kmfddm)
        #expect(again.exitStatus == 0)
        #expect(again.failures.isEmpty)
        #expect(server.snapshot.changes == changesBefore, "writes changed what the server held")
        #expect(again.summary.notModified > 0)
        try f.expectServerHoldsOutput(server.snapshot)
    }

    /// Changes one user's display name in the directory (the spec reads it): its devices get new assets.
    static func renameUser(_ f: PushFixture, _ user: String) throws {
        var text = try String(contentsOfFile: f.directory, encoding: .utf8)
        let account = try #require(text.range(of: "\nsAMAccountName: \(user)\n"))
        let name = try #require(text.range(of: "\ndisplayName", options: .backwards, range: text.startIndex..<account.lowerBound))
        let lineEnd = try #require(text.range(of: "\n", range: name.upperBound..<text.endIndex))
        text.replaceSubrange(name.lowerBound..<lineEnd.lowerBound, with: "\ndisplayName: Changed Name")
        try text.write(toFile: f.directory, atomically: true, encoding: .utf8)
    }

    @Test("A night with one changed user pushes that device only and collects its old asset")
    func oneChangedUser() async throws {
        let f = try PushFixture()
        defer { f.remove() }
        f.render()
        let server = try StandInServer.started(.kmfddm)
        defer { server.stop() }
        _ = await f.push(server, .kmfddm)
        let oldIndex = try f.index()
        try Self.renameUser(f, "u0000001")
        f.render()
        let newIndex = try f.index()
        let changed = newIndex.filter { oldIndex[$0.key]?.ids != $0.value.ids }.map(\.key)
        try #require(changed.count >= 1)
        let oldAssets = Set(changed.flatMap { oldIndex[$0]!.ids }).subtracting(newIndex.values.flatMap(\.ids))
        try #require(!oldAssets.isEmpty)
        let syncsBefore = server.snapshot.syncCommands
        let night = await f.push(server, .kmfddm)
        #expect(night.exitStatus == 0)
        #expect(night.summary.plan.changed == changed.count)
        #expect(night.summary.plan.unchanged == newIndex.count - changed.count)
        #expect(night.summary.devices.pushed == changed.count)
        let state = server.snapshot
        try f.expectServerHoldsOutput(state)
        for id in oldAssets { #expect(state.declarations[id] == nil, "old asset \(id) not collected") }
        #expect(night.summary.collected == oldAssets.count)
        // Only the changed devices were told to sync again.
        for (device, count) in state.syncCommands {
            #expect(count == (syncsBefore[device] ?? 0) + (changed.contains(device) ? 1 : 0), "\(device)")
        }
    }

    /// Drops the inventory rows of `count` devices (the last ones) and returns their keys.
    static func dropDevices(_ f: PushFixture, _ count: Int) throws -> [String] {
        // Lines by bytes: the export's CRLF is one Character to Swift's String.
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: f.inventory)))
        var lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true).map { Array($0) }
        var dropped: [String] = []
        while dropped.count < count, lines.count > 1 {
            let line = String(decoding: lines.removeLast(), as: UTF8.self).trimmingCharacters(in: .newlines)
            // The demo's UDIDs are 8 and 16 hex digits (quoted fields hold commas: no column count).
            let udid = try #require(line.split(separator: ",").first { $0.count == 25 && $0.dropFirst(8).first == "-" })
            dropped.append(String(udid))
        }
        try Data(lines.map { $0 + [UInt8(ascii: "\n")] }.joined()).write(to: URL(fileURLWithPath: f.inventory))
        return dropped
    }

    @Test("A removal night takes the set away and collects its declarations; the guard holds back more")
    func removals() async throws {
        let f = try PushFixture()
        defer { f.remove() }
        f.render()
        let server = try StandInServer.started(.kmfddm)
        defer { server.stop() }
        _ = await f.push(server, .kmfddm)
        let pushed = try f.index()
        // One device: under the 1% guard.
        let gone = try Self.dropDevices(f, 1)
        f.render("ddm", ["--remove-missing"])
        let removedLines = try f.index().filter(\.value.removed).map(\.key)
        #expect(Set(removedLines) == Set(gone.filter { pushed[$0] != nil }))
        try #require(removedLines.count == 1)
        let night = await f.push(server, .kmfddm)
        #expect(night.exitStatus == 0, "\(night.failures.prefix(3).map(\.problem.message)) \(String(describing: night.fatal)) \(night.summary.plan)")
        #expect(night.summary.devices.removed == removedLines.count)
        let state = server.snapshot
        try f.expectServerHoldsOutput(state)
        for device in removedLines {
            #expect(state.enrollmentSets[device] == nil)
            // What only it named is gone (a user's password document is shared by the user's devices).
            let stillNamed = Set(try f.index().values.flatMap(\.ids))
            #expect(pushed[device]!.ids.filter { state.declarations[$0] != nil && !stillNamed.contains($0) }.isEmpty, "declarations of the removed device not collected")
        }
        // Twenty more (2% of the devices): held back, nothing sent; then --force.
        _ = try Self.dropDevices(f, 20)
        let second = f.render("ddm", ["--remove-missing", "--force"])
        #expect(second.status == 3, "\(second.stdout) \(second.stderr)")
        let before = server.snapshot.requestCount
        let held = await f.push(server, .kmfddm)
        #expect(held.exitStatus == 1, "\(held.summary.plan)")
        #expect(held.summary.heldBack != nil)
        #expect(server.snapshot.requestCount == before)
        let forced = await f.push(server, .kmfddm) { $0.force = true }
        #expect(forced.exitStatus == 0)
        try f.expectServerHoldsOutput(server.snapshot)
    }
}
