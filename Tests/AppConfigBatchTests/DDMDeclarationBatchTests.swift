@testable import AppConfigBatch
@testable import AppConfigOutput
import AppConfigCore
import AppConfigSpec
import Digest
import TestSupport
import Testing

/// DDM's names, tokens and digests taken for many devices at once (`SHA256Messages`, in lanes):
/// each must be what its formula gives for the device on its own, one OpenSSL digest at a time.
@Suite("DDM declarations digested together")
struct DDMDeclarationBatchTests {
    @Test("messages of every length digested together, 16 at a time, as one by one")
    func messages() {
        var random = SplitMix64(seed: 33)
        var batch = SHA256Messages()
        for inLanes in [true, false, true] {
            // 41 messages: two full groups of sixteen and a part; lengths 0 to 300, spanning blocks.
            let messages = (0..<41).map { i in (0..<(i == 0 ? 0 : Int.random(in: 1...300, using: &random))).map { _ in UInt8.random(in: 0...255, using: &random) } }
            for m in messages { batch.add { $0 += m } }
            #expect(batch.digests(inLanes: inLanes) == messages.map { SHA256Digest(of: $0) })
            // Emptied: the next use starts with no message.
            #expect(batch.digests(inLanes: inLanes).isEmpty)
        }
    }

    /// 37 devices (keys of 1 to 75 bytes, plists of 0 to 2,000), two extensions each; in variant 1
    /// a password and a certificate document; the plist's digest known for every other one.
    @Test("a batch of devices: each device's declarations by the formulas, with and without lanes")
    func batch() throws {
        var options = DeliveryOptions(delivery: .ddm)
        options.assetBaseURL = "https://cdn.example.com/a"
        options.secretAssetBaseURL = "https://secure.example.com/s"
        options.extensions = [ExtensionDelivery(composedID: "com.example.app.widget", values: "w.json"),
                              ExtensionDelivery(composedID: "com.example.app.share", values: "s.json")]
        let delivery = try options.resolved(specBundleID: "com.example.app")
        let builder = DeclarationBuilder(delivery: delivery, credentials: [[], [(identifier: "pw", kind: .password), (identifier: "cert", kind: .certificate)]])
        let arena = BufferArena()
        var random = SplitMix64(seed: 7)
        func bytes(_ count: Int) -> ByteView { arena.view((0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }) }
        let documents = [RenderedCredential(assetType: Credential.Kind.password.assetType, document: Array(#"{"UserName":"u","Password":"p"}"#.utf8), contentType: "application/json", holdsSecret: true),
                         RenderedCredential(assetType: Credential.Kind.certificate.assetType, document: Array("-----BEGIN CERTIFICATE-----".utf8), contentType: "application/pem", holdsSecret: false)]
        let credentials = UnsafeMutableBufferPointer<RenderedCredential>.allocate(capacity: 2)
        _ = credentials.initialize(from: documents)
        defer { credentials.deinitialize(); credentials.deallocate() }
        var devices: [RenderedDevice] = [], plistDigests: [SHA256Digest?] = []
        for i in 0..<37 {
            let key = arena.view(Array("D\(String(repeating: "k", count: (i * 2) % 75))\(i)".utf8))
            var device = RenderedDevice(key: key, plist: bytes(Int.random(in: 0...2000, using: &random)),
                                        extensions: arena.view([bytes(i * 13), bytes(700)]), position: i)
            device.variant = i % 3 == 1 ? 1 : 0
            if device.variant == 1 { device.credentials = BufferView(UnsafeBufferPointer(credentials)) }
            devices.append(device)
            plistDigests.append(i % 2 == 0 ? SHA256Digest(of: device.plist) : nil)
        }
        let together = builder.build(devices, plistDigests: plistDigests, inLanes: true)
        let oneByOne = builder.build(devices, plistDigests: plistDigests, inLanes: false)
        #expect(together.count == 37)
        for (i, device) in devices.enumerated() {
            let expected = Self.formulas(builder, device)
            for d in [together[i], oneByOne[i], builder.build([device], plistDigests: [nil], inLanes: false)[0]] {
                #expect(d.identity == expected.identity)
                #expect(d.assets.map(\.data) == expected.assets.map(\.data))
                #expect(d.assets.map(\.size) == expected.assets.map(\.size))
                #expect(d.assets.map(\.name) == expected.assets.map(\.name))
                #expect(d.assets.map { $0.credential?.type } == expected.assets.map { $0.credential?.type })
                #expect(d.variant == device.variant)
                #expect(d.configurationToken == expected.configurationToken)
                #expect(d.activationToken == expected.activationToken)
                #expect(d.digest == expected.digest)
            }
        }
        #expect(Set(together.map(\.digest)).count == 37)
    }

    /// A device's declarations by their formulas, each digest taken on its own.
    private static func formulas(_ builder: DeclarationBuilder, _ device: RenderedDevice) -> DeviceDeclarations {
        func digest(_ parts: [SHA256Digest]) -> SHA256Digest { parts.withUnsafeBytes { SHA256Digest(of: $0) } }
        let plistContext = SHA256Digest(of: Array("application/x-plist".utf8) + [0] + Array("https://cdn.example.com/a/".utf8))
        var assets: [DeviceDeclarations.Asset] = []
        for data in [device.plist] + Array(device.extensions) {
            let d = SHA256Digest(of: data)
            assets.append(.init(data: d, size: data.count, name: digest([plistContext, d])))
        }
        for c in device.credentials {
            let url = c.holdsSecret ? "https://secure.example.com/s/" : "https://cdn.example.com/a/"
            let context = SHA256Digest(of: Array(c.assetType.utf8) + [0] + Array(c.contentType.utf8) + [0] + Array(url.utf8))
            let d = SHA256Digest(of: c.document)
            assets.append(.init(data: d, size: c.document.count,
                                credential: CredentialAsset(type: c.assetType, contentType: c.contentType, secret: c.holdsSecret),
                                name: digest([context, d])))
        }
        var d = DeviceDeclarations(assets: assets, identity: SHA256Digest(of: Array("appconfig".utf8) + [0] + Array("com.example.app".utf8) + [0] + Array(device.key)))
        d.variant = device.variant
        var payload: [UInt8] = []
        builder.appendConfigurationPayload(d, to: &payload)
        d.configurationToken = SHA256Digest(of: payload)
        payload = []
        builder.appendActivationPayload(d, to: &payload)
        d.activationToken = SHA256Digest(of: payload)
        d.digest = digest([d.identity, d.configurationToken, d.activationToken] + assets.map(\.name))
        return d
    }
}
