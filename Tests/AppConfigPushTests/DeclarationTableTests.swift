import AppConfigCore
import Foundation
import TestSupport
@testable import AppConfigPush
import Testing

/// The declarations' table against a dictionary built from the same declarations: every
/// Identifier found, the later of two with one Identifier standing, nothing for another.
@Suite("Push: the declarations' table")
struct DeclarationTableTests {
    static func declaration(_ id: String, token: String) -> PushSource.Declaration {
        PushSource.Declaration(identifier: id, type: "com.apple.asset.data", serverToken: token, body: [])
    }

    @Test("what a dictionary finds, for tables small and large", arguments: [0, 1, 7, 5000])
    func sameAsDictionary(count: Int) {
        let declarations = (0..<count).map { Self.declaration("appconfig.asset.\($0)", token: "t\($0)") }
        let table = DeclarationTable(declarations)
        var dictionary: [String: PushSource.Declaration] = [:]
        for d in declarations { dictionary[d.identifier] = d }
        #expect(table.count == dictionary.count)
        for (id, d) in dictionary { #expect(table[id]?.serverToken == d.serverToken && table.index(of: id).map { table.all[$0].identifier } == id) }
        for other in ["", "appconfig.asset.", "appconfig.asset.\(count)", "appconfig.asset.1 "] { #expect(table[other] == nil) }
    }

    @Test("an Identifier read twice: the later one stands, once")
    func later() {
        let table = DeclarationTable([Self.declaration("a", token: "1"), Self.declaration("b", token: "2"), Self.declaration("a", token: "3")])
        #expect(table.count == 2 && table["a"]?.serverToken == "3" && table["b"]?.serverToken == "2")
        #expect(table.all.map(\.identifier) == ["b", "a"])
    }
}

@Suite("Push: the output's sets resolved")
struct PushSourceResolveTests {
    /// The fixture rendered, and a copy of its generation to damage.
    static func renderedCopy(_ f: PushFixture) throws -> String {
        f.render()
        let copy = f.dir.path("copy")
        try FileManager.default.copyItem(atPath: URL(fileURLWithPath: f.out).resolvingSymlinksInPath().path, toPath: copy)
        return copy
    }

    @Test("each device's set resolved to the table; a declaration the output does not hold names the device and its line")
    func resolved() throws {
        let f = try PushFixture()
        defer { f.remove() }
        let copy = try Self.renderedCopy(f)
        let source = try PushSource(copy)
        for (i, device) in source.devices.enumerated() {
            #expect(source.declarationIndexes(ofDevice: i).map { source.declarations.all[Int($0)].identifier } == device.declarations)
        }
        // The configuration of the index's third device taken out of declarations.jsonl.
        let third = source.devices[2]
        let config = try #require(third.declarations.first { $0.hasPrefix("appconfig.config.") })
        let lines = try String(contentsOfFile: copy + "/declarations.jsonl", encoding: .utf8).split(separator: "\n")
        try (lines.filter { !$0.contains("\"Identifier\":\"\(config)\"") }.joined(separator: "\n") + "\n")
            .write(toFile: copy + "/declarations.jsonl", atomically: true, encoding: .utf8)
        let error = #expect(throws: Problem.self) { try PushSource(copy) }
        #expect(error?.code.rawValue == "push.source" && error?.location.line == third.line)
        #expect(error?.message == "device \(third.key) names the declaration \(config), which the output does not hold")
    }

    @Test("only the manifest's header is read for a push: a header cut short is refused, naming the manifest")
    func manifestHeaderOnly() throws {
        let f = try PushFixture()
        defer { f.remove() }
        let copy = try Self.renderedCopy(f)
        // The device lines after the header are not read: garbage there changes nothing.
        let manifest = try String(contentsOfFile: copy + "/manifest.tsv", encoding: .utf8)
        let header = try #require(manifest.range(of: "\n\n")).upperBound
        try (String(manifest[..<header]) + "not a device line\n").write(toFile: copy + "/manifest.tsv", atomically: true, encoding: .utf8)
        #expect(try PushSource(copy).devices.count == PushSource(f.out).devices.count)
        // A header without the blank line that ends it is not a manifest's.
        try "appconfig-manifest 4\ndelivery ddm\n".write(toFile: copy + "/manifest.tsv", atomically: true, encoding: .utf8)
        let error = #expect(throws: Problem.self) { try PushSource(copy) }
        #expect(error?.code.rawValue == "manifest.syntax" && error?.location.file == copy + "/manifest.tsv" && error?.location.line == 1)
        #expect(error?.message == "not an appconfig manifest (version 1 to 4), or its header is cut short")
    }
}
