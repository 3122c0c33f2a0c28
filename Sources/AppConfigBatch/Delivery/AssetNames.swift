import AppConfigCore
import AppConfigSpec
import Digest
import Foundation

/// An asset's file name in a generation, compact: its digest and the form of its path
/// (`assets/<sha256>.plist`, a credential document's `.json`, `.pem`, `.der`, in `assets/` or
/// `secret-assets/`). Sorted as their paths are.
struct AssetName: Hashable {
    var digest: SHA256Digest
    /// 0 `assets/….plist`; 1-3 `assets/….json|.pem|.der`; 4-6 `secret-assets/….json|.pem|.der`.
    var form: UInt8

    static let endings = [".plist", ".json", ".pem", ".der"]

    init(digest: SHA256Digest, form: UInt8) {
        self.digest = digest
        self.form = form
    }

    init(_ a: DeviceDeclarations.Asset) {
        digest = a.data
        guard let c = a.credential else { form = 0; return }
        let ending = UInt8(Self.endings.firstIndex(of: c.fileExtension) ?? 1)
        form = c.secret ? 3 + ending : ending
    }

    /// From a manifest's path (`assets/<hex>.plist`, `secret-assets/<hex>.json`, ...).
    init?(path: some Collection<UInt8>) {
        let text = String(decoding: path, as: UTF8.self)
        let secret = text.hasPrefix("secret-assets/")
        guard secret || text.hasPrefix("assets/") else { return nil }
        let rest = Array(text.utf8.dropFirst(secret ? 14 : 7))
        guard rest.count > 64, let d = rest.withView({ SHA256Digest(hex: $0[view: 0..<64]) }),
              let ending = Self.endings.firstIndex(of: String(decoding: rest.dropFirst(64), as: UTF8.self)) else { return nil }
        if secret && ending == 0 { return nil }
        digest = d
        form = secret ? UInt8(3 + ending) : UInt8(ending)
    }

    func appendPath(to out: inout [UInt8]) {
        out += (form >= 4 ? "secret-assets/" : "assets/").utf8
        digest.appendHex(to: &out)
        out += Self.endings[Int(form >= 4 ? form - 3 : form)].utf8
    }

    /// The order of their paths: `assets/` before `secret-assets/`, then the hex digest, then the ending.
    static func precedes(_ x: AssetName, _ y: AssetName) -> Bool {
        let (sx, sy) = (x.form >= 4 ? 1 : 0, y.form >= 4 ? 1 : 0)
        if sx != sy { return sx < sy }
        let dx = (x.digest.a.byteSwapped, x.digest.b.byteSwapped, x.digest.c.byteSwapped, x.digest.d.byteSwapped)
        let dy = (y.digest.a.byteSwapped, y.digest.b.byteSwapped, y.digest.c.byteSwapped, y.digest.d.byteSwapped)
        return dx != dy ? dx < dy : x.form < y.form
    }
}

/// Up to `perDevice` asset names per device position (its credential documents), written by the
/// worker of the position's chunk (disjoint positions), read after the workers are joined.
final class AssetNameSlots: @unchecked Sendable {
    private let arena = BufferArena()
    private let slots: WorkerSlots<AssetName>
    let positions: Int
    let perDevice: Int
    /// A slot no document fills.
    static let empty = AssetName(digest: SHA256Digest(a: 0, b: 0, c: 0, d: 0), form: 255)

    init(positions: Int, perDevice: Int) {
        self.positions = positions
        self.perDevice = perDevice
        slots = arena.slots(count: positions * perDevice, repeating: Self.empty)
    }

    /// Room for the most credentials a device can have (a variant's and the extensions'), or nil.
    static func forCredentials(_ c: DDMEncoding.CredentialKinds, devices: Int) -> AssetNameSlots? {
        let most = (c.app.map(\.count).max() ?? 0) + c.extensions.map(\.count).reduce(0, +)
        return most == 0 ? nil : AssetNameSlots(positions: devices, perDevice: most)
    }

    func set(_ position: Int, _ k: Int, _ name: AssetName) { slots[position * perDevice + k] = name }

    func forEach(_ position: Int, _ body: (AssetName) -> Void) {
        for k in 0..<perDevice {
            let name = slots[position * perDevice + k]
            if name.form == 255 { break }
            body(name)
        }
    }
}
