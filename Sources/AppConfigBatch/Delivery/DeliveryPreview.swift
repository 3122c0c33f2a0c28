/// One device in a delivery's form (`compile --delivery`): what the device, or the MDM server,
/// receives for it, built by the same code as a fleet's output.
public enum DeliveryPreview {
    /// How deep the renderer nests the dictionary for this delivery (MDM commands nest it; XML only).
    public static func xmlNesting(_ delivery: ResolvedDelivery) -> Int {
        RenderJob.encoder(for: delivery)?.nesting ?? 0
    }

    /// The device's files, in order: for `plist` the plist; for `ddm` the asset plist, its three
    /// declarations and its declaration set; for the MDM deliveries the command. `rendered` is the
    /// renderer's output for the device (a fragment for MDM commands).
    public static func files(key: String, rendered: [UInt8], delivery: ResolvedDelivery) -> [(name: String, bytes: [UInt8])] {
        var k = key
        return k.withUTF8 { key in
            rendered.withUnsafeBytes { plist in
                switch delivery.delivery {
                case .plist:
                    return [(OutputNames.relativePath(key), rendered)]
                case .mdmSettings, .mdmInstall:
                    var out: [UInt8] = []
                    RenderJob.encoder(for: delivery)!.encode(key: key, plist: plist, into: &out)
                    return [(OutputNames.relativePath(key), out)]
                case .ddm:
                    let d = DeclarationBuilder(delivery: delivery).build(plist: plist)
                    var set: [UInt8] = []
                    DeclarationBuilder.setFile(key: key, d, into: &set)
                    return [("assets/" + String(decoding: d.assetHash, as: UTF8.self) + ".plist", rendered)]
                        + d.declarations.map { (DDMSink.declarationPath($0), $0.json) }
                        + [(OutputNames.relativePath(key, extension: ".json"), set)]
                }
            }
        }
    }
}
