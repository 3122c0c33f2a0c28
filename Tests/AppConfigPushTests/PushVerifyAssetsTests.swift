import AppConfigCore
@testable import AppConfigPush
import Foundation
import ServerStandIn
import TestSupport
import Testing

/// `--verify-assets` (issue 56): each new asset fetched from its DataURL and checked before its
/// devices go. Render takes only https asset URLs; this test points a copy of the output's
/// declarations at the stand-in's plain-http asset route (TLS to an asset host was checked by
/// hand: docs/push.md).
@Suite("Push: --verify-assets", .serialized)
struct PushVerifyAssetsTests {
    @Test("Assets checked before their devices go: a changed or missing asset fails its devices, named")
    func verifyAssets() async throws {
        let f = try PushFixture()
        defer { f.remove() }
        f.render()
        let server = try StandInServer.started(.kmfddm)
        defer { server.stop() }
        // A copy of the generation whose data assets are served by the stand-in.
        let copy = f.dir.path("copy")
        try FileManager.default.copyItem(atPath: URL(fileURLWithPath: f.out).resolvingSymlinksInPath().path, toPath: copy)
        let lines = try String(contentsOfFile: copy + "/declarations.jsonl", encoding: .utf8)
        try lines.replacingOccurrences(of: PushFixture.base, with: server.baseURL + "/assets")
            .write(toFile: copy + "/declarations.jsonl", atomically: true, encoding: .utf8)
        let source = try PushSource(copy)
        let dataAssets = source.declarations.all.filter { $0.type == "com.apple.asset.data" }
        let secretAssets = source.declarations.all.filter { $0.asset?.authenticated == true }.count
        try #require(dataAssets.allSatisfy { $0.asset?.url.hasPrefix(server.baseURL) == true })

        // One asset's bytes changed on the host, another missing: their devices fail, named.
        let served = f.dir.path("served")
        try FileManager.default.copyItem(atPath: f.out + "/assets", toPath: served)
        let sorted = dataAssets.sorted { $0.identifier < $1.identifier }
        let (changed, missing) = (sorted[0], sorted[1])
        func file(_ d: PushSource.Declaration) -> String { served + "/" + d.asset!.url.split(separator: "/").last! + ".plist" }
        var bytes = try Data(contentsOf: URL(fileURLWithPath: file(changed)))
        bytes[bytes.count - 1] ^= 0xFF
        try bytes.write(to: URL(fileURLWithPath: file(changed)))
        try FileManager.default.removeItem(atPath: file(missing))
        server.assetFolder = served
        let victims = source.devices.filter { $0.declarations.contains(changed.identifier) || $0.declarations.contains(missing.identifier) }.map(\.key).sorted()
        var options = f.options(server, .kmfddm)
        options.source = copy
        options.verifyAssets = true
        let bad = await PushJob(options).run()
        #expect(bad.exitStatus == 3)
        #expect(bad.failures.map(\.device).sorted() == victims)
        #expect(bad.failures.allSatisfy { $0.problem.code.rawValue == PushCode.assetNotServed.rawValue })
        #expect(bad.failures.contains { $0.problem.message.contains("its SHA-256 is") && $0.problem.message.contains(changed.asset!.url) })
        #expect(bad.failures.contains { $0.problem.message.contains("HTTP 404") && $0.problem.message.contains(missing.asset!.url) })
        let state = server.snapshot
        #expect(state.declarations[changed.identifier] == nil && state.declarations[missing.identifier] == nil,
                "an asset's declaration went before its data was served")
        for device in victims { #expect(state.enrollmentSets[device] == nil) }

        // Served right: the rest goes; every data asset was fetched once, the secret documents
        // (fetched by devices with their MDM identity) counted as not verifiable.
        server.assetFolder = f.out + "/assets"
        let good = await PushJob(options).run()
        #expect(good.exitStatus == 0, "\(good.failures.prefix(2).map(\.problem.message))")
        #expect(good.summary.devices.pushed == victims.count)
        #expect(bad.summary.assetsVerified + good.summary.assetsVerified == dataAssets.count)
        #expect(secretAssets > 0)
        #expect(bad.summary.assetsNotVerifiable + good.summary.assetsNotVerifiable >= secretAssets)
        #expect(state.writesWithoutNoNotify == 0)
    }
}
