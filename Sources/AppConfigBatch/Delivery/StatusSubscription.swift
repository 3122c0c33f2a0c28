import AppConfigCore
import AppConfigOutput
import Digest

/// The `com.apple.configuration.management.status-subscriptions` declaration every DDM set
/// carries: it subscribes the device to `app.managed.list`, so that it reports each managed app's
/// `state`, `config-state` and `reasons` (what `appconfig status` joins). The same declaration for
/// every device and app: its Identifier and ServerToken come from its payload alone, so it is
/// stored once on a server and written once per output (the first line of `declarations.jsonl`,
/// or `declarations/<Identifier>.json`); each activation names it, since a configuration no
/// activation names is never applied.
package struct StatusSubscription: Sendable {
    package static let type = "com.apple.configuration.management.status-subscriptions"
    package static let identifierPrefix = "appconfig.status."
    /// The status items subscribed to.
    package static let items = ["app.managed.list"]

    /// `appconfig.status.<32 hex>`.
    package let identifier: [UInt8]
    /// The declaration's text, a line feed after it.
    package let line: [UInt8]

    package init() {
        var payload = Array(#"{"StatusItems":["#.utf8)
        for (i, name) in Self.items.enumerated() {
            if i > 0 { payload.append(UInt8(ascii: ",")) }
            payload += #"{"Name":"#.utf8
            JSONText.appendString(name, to: &payload)
            payload.append(UInt8(ascii: "}"))
        }
        payload += "]}".utf8
        let digest = SHA256Digest(of: Array("appconfig\u{0}status-subscriptions\u{0}".utf8) + payload)
        var identifier = Array(Self.identifierPrefix.utf8)
        identifier.append(room: 32) { $0.write(hex: digest, digits: DeclarationBuilder.identifierDigits) }
        self.identifier = identifier
        var line = Array(#"{"Identifier":""#.utf8) + identifier + #"","Payload":"#.utf8 + payload + #","ServerToken":""#.utf8
        line.append(room: 32) { $0.write(hex: SHA256Digest(of: payload), digits: DeclarationBuilder.tokenDigits) }
        line += #"","Type":""#.utf8
        line += Self.type.utf8
        line += "\"}\n".utf8
        self.line = line
    }

    /// Its file in the `files` layout: `declarations/<Identifier>.json`.
    package var path: String { "declarations/" + String(decoding: identifier, as: UTF8.self) + ".json" }
}
