import AppConfigCore
import AppConfigOutput
import AppConfigSpec

/// One device in a delivery's form (`compile --delivery`): what the device, or the MDM server,
/// receives for it, made by the same encoding as a fleet's output into a container in memory.
package enum DeliveryPreview {
    /// How deep the renderer nests the dictionary for this delivery (MDM commands nest it; XML only).
    package static func xmlNesting(_ delivery: ResolvedDelivery) -> Int { delivery.xmlNesting }

    /// The device's files, in order: for `plist` the plist; for `ddm` the asset plist, its three
    /// declarations (as `--ddm-layout files` names them; in the jsonl layout each is a line of
    /// declarations.jsonl) and its declaration set; for the MDM deliveries the command. `rendered` is the
    /// renderer's output for the device (a fragment for MDM commands).
    /// `credentials`: the device's credential documents in the order of its credentials (as
    /// previews make them: secrets and files named, not read); the configuration's `AppConfig`
    /// then names them as a render's does.
    package static func files(key: String, rendered: [UInt8], delivery: ResolvedDelivery,
                              credentials: [(credential: Credential, document: [UInt8])] = []) -> [(name: String, bytes: [UInt8])] {
        var delivery = delivery
        delivery.layout = .files
        let memory = MemoryFolder()
        let documents = credentials.map { c in
            RenderedCredential(assetType: c.credential.kind.assetType, document: c.document,
                               contentType: c.credential.kind == .certificate ? "application/pem" : "application/json", holdsSecret: c.credential.holdsSecret)
        }
        let kinds: DDMEncoding.CredentialKinds = ([credentials.map { ($0.credential.identifier, $0.credential.kind) }], [])
        Array(key.utf8).withView { key in
            rendered.withView { plist in
                documents.withView { documents in
                    var files = DeviceFiles(container: memory, filter: nil)
                    var scratch: [UInt8] = []
                    var device = RenderedDevice(key: key, plist: plist)
                    device.credentials = documents
                    // A folder in memory takes every file: nothing here can fail.
                    _ = try? RenderJob.encoding(for: delivery, devices: 1, credentials: kinds).encode(device, scratch: &scratch, files: &files)
                }
            }
        }
        return memory.files
    }

    /// What a preview with credentials shows otherwise than the render: the documents' secrets
    /// and files are named, not read, so the credential assets' Identifiers, names and tokens (and
    /// with them the configuration's ServerToken) are the preview's own.
    package static let credentialNote = "credential documents name their secrets and files (<secret NAME>, <file PATH>) instead of holding them: their assets' Identifiers, DataURLs and ServerTokens, and the configuration's ServerToken, differ from a render's; the declarations' shape and every other field are the render's"
}

/// A folder in memory: the files placed, in order (a preview's).
final class MemoryFolder: OutputContainer, @unchecked Sendable {
    private(set) var files: [(name: String, bytes: [UInt8])] = []

    func add(_ bytes: ByteView, path: (inout [UInt8]) -> Void, once: Bool, secret: Bool, members: inout [UInt8]) throws(Problem) {
        var name: [UInt8] = []
        path(&name)
        let relative = String(decoding: name, as: UTF8.self)
        if once && files.contains(where: { $0.name == relative }) { return }
        files.append((relative, Array(bytes)))
    }
    func lineFile(_ name: String) throws(Problem) -> LineFile { LineFile(name: name, path: name, descriptor: -1) }
    func publish(lines: [LineFile], closing files: [ClosingFile]) throws(Problem) -> String { "" }
    func discard() {}
}
