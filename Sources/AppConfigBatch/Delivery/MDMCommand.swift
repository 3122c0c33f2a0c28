import AppConfigCore
import AppConfigOutput
import Digest

/// An MDM command plist around a device's configuration, as the MDM protocol sends it: an XML
/// plist in plistlib's layout (sorted keys, tab indentation), with a `CommandUUID` derived from
/// the device and the command's content, so a rerun gives the same UUID for the same command.
/// The configuration arrives as the XML emitter's fragment, already indented for its place
/// (`nesting`): the command is its fixed text around those bytes, with no decode and re-encode.
package struct MDMCommand: Sendable {
    /// What the command does with the configuration.
    package enum Kind: Sendable {
        /// `Settings` with one `ApplicationConfiguration` item; without a configuration it removes it.
        case settings
        /// `InstallApplication` with the configuration (`iTunesStoreID`, `ManifestURL`, else `Identifier`).
        case install
    }

    package let kind: Kind
    let bundleID: String
    /// `--command-nonce`: mixed into every CommandUUID (a queue refuses a UUID it holds already).
    let nonce: [UInt8]?
    /// The text up to the configuration's first key line, and from its closing tag to `CommandUUID`'s value.
    let head: [UInt8]
    let tail: [UInt8]

    /// Extra tabs of the configuration's lines in the command, for `Renderer(xmlNesting:)`.
    package var nesting: Int { kind == .settings ? 4 : 2 }

    package init(kind: Kind, delivery: ResolvedDelivery) {
        self.kind = kind
        bundleID = delivery.bundleID
        nonce = delivery.commandNonce.map { Array($0.utf8) }
        var head = Array(Self.documentStart.utf8)
        var tail: [UInt8] = []
        func line(_ tabs: Int, _ text: String, _ out: inout [UInt8]) {
            out += repeatElement(UInt8(ascii: "\t"), count: tabs)
            out += text.utf8
            out.append(0x0A)
        }
        func string(_ tabs: Int, _ key: String, _ value: String, _ out: inout [UInt8]) {
            line(tabs, "<key>\(key)</key>", &out)
            line(tabs, "<string>\(Self.escaped(value))</string>", &out)
        }
        line(1, "<key>Command</key>", &head)
        line(1, "<dict>", &head)
        switch kind {
        case .settings:
            string(2, "RequestType", "Settings", &head)
            line(2, "<key>Settings</key>", &head)
            line(2, "<array>", &head)
            line(3, "<dict>", &head)
            line(4, "<key>Configuration</key>", &head)
            line(4, "<dict>", &head)
            line(4, "</dict>", &tail)
            string(4, "Identifier", delivery.bundleID, &tail)
            string(4, "Item", "ApplicationConfiguration", &tail)
            line(3, "</dict>", &tail)
            line(2, "</array>", &tail)
        case .install:
            line(2, "<key>Configuration</key>", &head)
            line(2, "<dict>", &head)
            line(2, "</dict>", &tail)
            if case .bundleID(let id) = delivery.source { string(2, "Identifier", id, &tail) }
            if let flags = delivery.managementFlags {
                line(2, "<key>ManagementFlags</key>", &tail)
                line(2, "<integer>\(flags)</integer>", &tail)
            }
            if case .manifestURL(let url) = delivery.source { string(2, "ManifestURL", url, &tail) }
            if !delivery.installOptions.isEmpty {
                // Each value typed as written: digits an integer, true/false a boolean, else a string.
                line(2, "<key>Options</key>", &tail)
                line(2, "<dict>", &tail)
                for (name, value) in delivery.installOptions {
                    line(3, "<key>\(Self.escaped(name))</key>", &tail)
                    if let n = Int64(value) { line(3, "<integer>\(n)</integer>", &tail) }
                    else if value == "true" || value == "false" { line(3, "<\(value)/>", &tail) }
                    else { line(3, "<string>\(Self.escaped(value))</string>", &tail) }
                }
                line(2, "</dict>", &tail)
            }
            string(2, "RequestType", "InstallApplication", &tail)
            if case .appStoreID(let id) = delivery.source {
                line(2, "<key>iTunesStoreID</key>", &tail)
                line(2, "<integer>\(id)</integer>", &tail)
            }
        }
        line(1, "</dict>", &tail)
        line(1, "<key>CommandUUID</key>", &tail)
        tail += Array("\t<string>".utf8)
        self.head = head
        self.tail = tail
    }

    package func encode(key: ByteView, plist: ByteView, into out: inout [UInt8]) {
        let start = out.count
        out += head
        out.append(contentsOf: plist)
        out += tail
        let uuid = Self.commandUUID(key: key, command: out[start...], nonce: nonce)
        out += uuid
        out.append(contentsOf: "</string>\n</dict>\n</plist>\n".utf8)
    }

    /// What `--remove-missing` sends a device gone from the fleet: for `Settings` the command that
    /// removes the app's configuration; for `InstallApplication`, `RemoveApplication`.
    package func removal(key: ByteView) -> [UInt8]? {
        kind == .settings ? Self.removal(bundleID: bundleID, key: key, nonce: nonce) : Self.removeApplication(bundleID: bundleID, key: key, nonce: nonce)
    }

    /// `RemoveApplication` for the app: the app and its data leave the device.
    static func removeApplication(bundleID: String, key: ByteView, nonce: [UInt8]? = nil) -> [UInt8] {
        fixedCommand(key: key, nonce: nonce, """
            \t\t<key>Identifier</key>
            \t\t<string>\(escaped(bundleID))</string>
            \t\t<key>RequestType</key>
            \t\t<string>RemoveApplication</string>

            """)
    }

    /// A `Settings` command that removes the app's configuration (the item without `Configuration`).
    package static func removal(bundleID: String, key: ByteView, nonce: [UInt8]? = nil) -> [UInt8] {
        fixedCommand(key: key, nonce: nonce, """
            \t\t<key>RequestType</key>
            \t\t<string>Settings</string>
            \t\t<key>Settings</key>
            \t\t<array>
            \t\t\t<dict>
            \t\t\t\t<key>Identifier</key>
            \t\t\t\t<string>\(escaped(bundleID))</string>
            \t\t\t\t<key>Item</key>
            \t\t\t\t<string>ApplicationConfiguration</string>
            \t\t\t</dict>
            \t\t</array>

            """)
    }

    /// A command whose `Command` dictionary holds `lines` (each line feed-ended), with its CommandUUID.
    private static func fixedCommand(key: ByteView, nonce: [UInt8]?, _ lines: String) -> [UInt8] {
        var out = Array(documentStart.utf8)
        out += Array("\t<key>Command</key>\n\t<dict>\n".utf8)
        out += Array(lines.utf8)
        out += Array("\t</dict>\n\t<key>CommandUUID</key>\n\t<string>".utf8)
        out += commandUUID(key: key, command: out[...], nonce: nonce)
        out.append(contentsOf: "</string>\n</dict>\n</plist>\n".utf8)
        return out
    }

    static let documentStart = """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0">
        <dict>

        """

    /// An RFC 9562 version 8 UUID (uppercase, as MDM servers write them) from SHA-256 of the device
    /// key, a zero byte and the command's text before its UUID; with a nonce, a zero byte and the
    /// nonce after it (the same command with another nonce has another UUID).
    static func commandUUID(key: ByteView, command: ArraySlice<UInt8>, nonce: [UInt8]? = nil) -> [UInt8] {
        var input = Array(key)
        input.append(0)
        input += command
        if let nonce {
            input.append(0)
            input += nonce
        }
        var d = SHA256Digest(of: input).bytes
        d[6] = (d[6] & 0x0F) | 0x80  // version 8
        d[8] = (d[8] & 0x3F) | 0x80  // variant 10
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(36)
        for i in 0..<16 {
            if i == 4 || i == 6 || i == 8 || i == 10 { out.append(UInt8(ascii: "-")) }
            out += [hex[Int(d[i] >> 4)], hex[Int(d[i] & 0xF)]]
        }
        return out
    }

    static func escaped(_ s: String) -> String {
        var out: [UInt8] = []
        Array(s.utf8).withView { XMLEscaping.forEachEscaped($0) { out.append($0) } }
        return String(decoding: out, as: UTF8.self)
    }
}

/// `--delivery mdm-settings|mdm-install`: the device's file is the command around its plist.
extension MDMCommand: SingleFileEncoding {
    package func appendFile(of device: RenderedDevice, to out: inout [UInt8]) { encode(key: device.key, plist: device.plist, into: &out) }

    /// The removal command, and its line of `index.jsonl` (the generation writes it after the devices').
    package func removal(of key: ByteView) -> (file: [UInt8]?, indexLine: [UInt8]?) { (removal(key: key), removalIndexLine(key: key)) }
    package var writesRemovalFiles: Bool { true }
}

extension ResolvedDelivery {
    /// The render options for this delivery, the one place that decides them: the plist format
    /// (`Delivery.plistFormat`: MDM commands are XML), how deep the dictionary nests (an MDM
    /// command's body) and the largest plist a device may have (a DDM data asset's). Nil when the
    /// format asked is refused (`Delivery.formatRefusal`).
    public func rendering(_ options: BatchOptions) -> BatchOptions? {
        guard delivery.plistFormat(options.format) == options.format else { return nil }
        var o = options
        o.xmlNesting = xmlNesting
        o.maxOutputBytes = delivery == .ddm ? DeclarationBuilder.maxAssetBytes : nil
        return o
    }

    /// How deep the renderer nests the dictionary (an MDM command's body; XML only).
    package var xmlNesting: Int {
        switch delivery {
        case .mdmSettings: MDMCommand(kind: .settings, delivery: self).nesting
        case .mdmInstall: MDMCommand(kind: .install, delivery: self).nesting
        case .plist, .ddm: 0
        }
    }
}
