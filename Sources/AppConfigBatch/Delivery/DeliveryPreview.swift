/// One device in a delivery's form (`compile --delivery`): what the device, or the MDM server,
/// receives for it, built by the same code as a fleet's output.
public enum DeliveryPreview {
    /// How deep the renderer nests the dictionary for this delivery (MDM commands nest it; XML only).
    public static func xmlNesting(_ delivery: ResolvedDelivery) -> Int {
        RenderJob.encoder(for: delivery)?.nesting ?? 0
    }

    /// The device's files, in order: for `plist` the plist; for `ddm` the asset plist, its three
    /// declarations (as `--ddm-layout files` names them; in the jsonl layout each is a line of
    /// declarations.jsonl) and its declaration set; for the MDM deliveries the command. `rendered` is the
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
                    let builder = DeclarationBuilder(delivery: delivery)
                    let d = builder.build(key: key, plist: plist, extensions: UnsafeBufferPointer(start: nil, count: 0))
                    func text(_ write: (inout [UInt8]) -> Void) -> [UInt8] {
                        var out: [UInt8] = []
                        write(&out)
                        return out
                    }
                    let asset = d.assets[0]
                    return [(DeclarationBuilder.assetPath(asset), rendered),
                            (DeclarationBuilder.declarationPath(of: asset), text { builder.appendAssetDeclaration(asset, to: &$0) }),
                            (DeclarationBuilder.declarationPath(DeclarationBuilder.configurationPrefix, d.identity), text { builder.appendConfiguration(d, to: &$0) }),
                            (DeclarationBuilder.declarationPath(DeclarationBuilder.activationPrefix, d.identity), text { builder.appendActivation(d, to: &$0) }),
                            (OutputNames.relativePath(key, extension: ".json"),
                             text { builder.appendSet(key: key, d, path: false, indexFields: UnsafeBufferPointer(start: nil, count: 0), to: &$0) })]
                }
            }
        }
    }
}
