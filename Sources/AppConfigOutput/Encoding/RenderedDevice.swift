import AppConfigCore
import Digest

/// One rendered device, as the batch renderer hands it to a sink: every buffer is valid only
/// during the call.
public struct RenderedDevice {
    public var key: ByteView
    /// The app's configuration.
    public var plist: ByteView
    /// Each app extension's configuration, in `ResolvedDelivery.extensions` order (DDM).
    public var extensions: BufferView<ByteView>
    /// JSON members with their leading commas (the assignments that applied): the end of the
    /// device's `index.jsonl` line.
    public var indexFields: ByteView
    /// The device's place in device-key order (`BatchResult.order`).
    public var position: Int
    /// Its variant (the set of assignments that matched it; 0: none).
    public var variant = 0
    /// Its credential documents (DDM with `credentials`), cleared after the call.
    public var credentials = BufferView<RenderedCredential>.empty
    /// Its entry in the previous manifest the night compares with (`BatchResult.previousEntries`;
    /// the one a `--changed-only` filter reads), or -1.
    public var previousEntry: Int32 = -1

    public init(key: ByteView, plist: ByteView,
                extensions: BufferView<ByteView> = .empty, indexFields: ByteView = .empty, position: Int = 0) {
        self.key = key
        self.plist = plist
        self.extensions = extensions
        self.indexFields = indexFields
        self.position = position
    }
}

/// A credential document of a device (DDM with `credentials`): its bytes, the asset declaration's
/// type and content type, whether it holds a secret (then its name is `name`).
public struct RenderedCredential {
    /// The asset declaration's type (`com.apple.asset.credential.*`).
    public var assetType: String
    public var document: [UInt8]
    public var contentType: String
    public var holdsSecret: Bool
    /// A secret document's name: the keyed hash of its bytes (`SecretAssetKey`), nil for others.
    public var name: SHA256Digest? = nil

    public init(assetType: String, document: [UInt8], contentType: String, holdsSecret: Bool, name: SHA256Digest? = nil) {
        self.assetType = assetType
        self.document = document
        self.contentType = contentType
        self.holdsSecret = holdsSecret
        self.name = name
    }
}

/// Which devices are unchanged since a previous generation: their digest there equals tonight's.
/// Shared by the workers (read-only).
public final class ChangeFilter: Sendable {
    public let previous: any PreviousDigests
    /// `--changed-only`: unchanged devices are not written.
    public let skipsUnchanged: Bool

    public init(previous: any PreviousDigests, skipsUnchanged: Bool) {
        self.previous = previous
        self.skipsUnchanged = skipsUnchanged
    }

    /// True when the device is to be left out: `--changed-only` and the same digest as before
    /// (`entry`: the device's in `previous`, or -1).
    @inline(__always)
    public func skips(entry: Int32, _ digest: SHA256Digest) -> Bool {
        skipsUnchanged && entry >= 0 && previous.digest(at: Int(entry)) == digest
    }
}


/// The output digests of a previous generation's devices, by entry (its manifest's).
public protocol PreviousDigests: AnyObject, Sendable {
    func digest(at entry: Int) -> SHA256Digest
}
