import AppConfigCore

/// One device in a delivery's form (`compile --delivery`): what the device, or the MDM server,
/// receives for it, made by the same encoding as a fleet's output into a container in memory.
package enum DeliveryPreview {
    /// How deep the renderer nests the dictionary for this delivery (MDM commands nest it; XML only).
    package static func xmlNesting(_ delivery: ResolvedDelivery) -> Int { delivery.xmlNesting }

    /// The device's files, in order: for `plist` the plist; for `ddm` the asset plist, its three
    /// declarations (as `--ddm-layout files` names them; in the jsonl layout each is a line of
    /// declarations.jsonl) and its declaration set; for the MDM deliveries the command. `rendered` is the
    /// renderer's output for the device (a fragment for MDM commands).
    package static func files(key: String, rendered: [UInt8], delivery: ResolvedDelivery) -> [(name: String, bytes: [UInt8])] {
        var delivery = delivery
        delivery.layout = .files
        let memory = MemoryFolder()
        Array(key.utf8).withView { key in
            rendered.withView { plist in
                var files = DeviceFiles(container: memory, filter: nil)
                var scratch: [UInt8] = []
                // A folder in memory takes every file: nothing here can fail.
                _ = try? RenderJob.encoding(for: delivery).encode(RenderedDevice(key: key, plist: plist), scratch: &scratch, files: &files)
            }
        }
        return memory.files
    }
}

/// A folder in memory: the files placed, in order (a preview's).
final class MemoryFolder: OutputContainer, @unchecked Sendable {
    private(set) var files: [(name: String, bytes: [UInt8])] = []

    func place(_ bytes: ByteView, at relative: String, once: Bool, secret: Bool) throws(Problem) {
        if once && files.contains(where: { $0.name == relative }) { return }
        files.append((relative, Array(bytes)))
    }
    func lineFile(_ name: String) throws(Problem) -> LineFile { LineFile(name: name, path: name, descriptor: -1) }
    func publish(lines: [LineFile], closing files: [ClosingFile]) throws(Problem) -> String { "" }
    func discard() {}
}
