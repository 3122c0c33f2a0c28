import AppConfigOutput
import Foundation
import TestSupport
import Testing

/// `--delivery ddm` into a tar file or a folder makes `declarations.jsonl` and `index.jsonl` at the
/// generation's close from what it kept of each device (`DeclarationRecords`), written once. A tar
/// stream still writes them as devices come (a stream holds a closing file whole first): the
/// two ways must give the same bytes, and the stream is the oracle here.
@Suite("DDM lines made at the close: the bytes written as devices came", .serialized)
struct ClosingLinesTests {
    static let ddm = ["--delivery", "ddm", "--asset-base-url", "https://cdn.example.com/appconfig"]

    func render(_ arguments: [String], values: String) throws -> ProcessResult {
        try appconfig(["render", "--spec", Paths.fixture("demo/spec.xml"), "--values", values] + Self.ddm + arguments
                       + ["--quiet", "--max-failure-ratio", "1", "--max-change-ratio", "1"])
    }

    /// A tar's members, by name.
    static func members(_ archive: Data) -> [String: Data] {
        var members: [String: Data] = [:]
        var at = 0
        while at + 512 <= archive.count, archive[at] != 0 {
            let header = archive[at..<(at + 512)]
            let name = String(decoding: header.prefix(100).prefix { $0 != 0 }, as: UTF8.self)
            let sizeText = String(decoding: header.dropFirst(124).prefix(12).prefix { $0 != 0 && $0 != 0x20 }, as: UTF8.self)
            let size = Int(sizeText, radix: 8) ?? 0
            members[name] = archive.subdata(in: (at + 512)..<(at + 512 + size))
            at += 512 + (size + 511) / 512 * 512
        }
        return members
    }

    @Test("a tar file and a folder hold the stream's bytes", arguments: [
        "the demo", "one asset for every device", "variants (assignments)", "a night: --changed-only --remove-missing",
        "no status subscription",
    ])
    func sameBytes(_ form: String) throws {
        try withTemporaryDirectory { dir in
            var values = Paths.fixture("demo/values.json")
            var inputs = ["--inventory", Paths.fixture("demo/inventory.csv"), "--directory", Paths.fixture("demo/directory.ldif")]
            switch form {
            case "one asset for every device":
                // No variable: every device's plist is the same, its asset's declaration written once.
                values = try dir.write("""
                    {"userEmail": "field@northwind.example", "displayName": "Field", "region": "EMEA", "deviceSerial": "C02ABCDEF123",
                     "deviceUDID": "00008030-0000", "allowedDomains": ["northwind.example"]}
                    """, to: "same.json")
            case "variants (assignments)":
                values = Paths.fixture("demo/assignments.json")
            case "a night: --changed-only --remove-missing":
                #expect(try render(inputs + ["--tar", dir.path("mon.tar")], values: values).status == 3)
                let (inventory, directory) = try CarriedNightTests.tonight(in: dir)
                inputs = ["--inventory", inventory, "--directory", directory, "--since", dir.path("mon.tar"), "--changed-only", "--remove-missing"]
            case "no status subscription":
                inputs += ["--no-status-subscription"]
            default: break
            }
            let file = try render(inputs + ["--tar", dir.path("out.tar")], values: values)
            let folder = try render(inputs + ["--out", dir.path("out")], values: values)
            let stream = try runProcessData(Paths.appconfigBinary, ["render", "--spec", Paths.fixture("demo/spec.xml"), "--values", values]
                                            + Self.ddm + inputs + ["--tar", "-", "--quiet", "--max-failure-ratio", "1", "--max-change-ratio", "1"])
            // The demo's users missing from its directory fail their devices (3); with no variable, none fails.
            let status: Int32 = form == "one asset for every device" ? 0 : 3
            #expect([file.status, folder.status, stream.status] == [status, status, status], "\(file.stderr)\(folder.stderr)\(stream.stderr)")

            let archive = try #require(FileManager.default.contents(atPath: dir.path("out.tar")))
            // Compared as one answer: a failed `==` of two large Data values is diffed element by element.
            let sameAsStream = archive == stream.stdout
            #expect(sameAsStream, "the tar file (\(archive.count) bytes) is not the stream (\(stream.stdout.count) bytes)")
            let members = Self.members(archive)
            let declarations = try #require(members["declarations.jsonl"]), sets = try #require(members["index.jsonl"])
            let generation = try #require(GenerationFolder.published(dir.path("out")))
            for (name, bytes) in [("declarations.jsonl", declarations), ("index.jsonl", sets)] {
                let same = FileManager.default.contents(atPath: generation + "/" + name) == bytes
                #expect(same, "the folder's \(name) is not the tar's")
            }
            // Each asset's declaration once, the first time its data comes; every set names its own.
            let lines = String(decoding: declarations, as: UTF8.self).split(separator: "\n")
            let assetLines = lines.filter { $0.contains(#""Type":"com.apple.asset.data""#) }
            let assetMembers = members.keys.filter { $0.hasPrefix("assets/") }
            #expect(assetLines.count == assetMembers.count)
            #expect(lines.count { $0.contains("com.apple.activation.simple") } == String(decoding: sets, as: UTF8.self).split(separator: "\n").count { !$0.contains(#""removed":true"#) })
            switch form {
            case "one asset for every device": #expect(assetLines.count == 1)
            case "a night: --changed-only --remove-missing":
                // The changed and new devices' sets (10 serials, a display name, a device new), then
                // the device gone, removed.
                let setLines = String(decoding: sets, as: UTF8.self).split(separator: "\n")
                #expect(setLines.count > 11 && setLines.count < 20)
                #expect(setLines.count { $0.contains(#""removed":true"#) } == 1)
                #expect(setLines.last?.contains(#""removed":true"#) == true)
            case "no status subscription": #expect(!lines.contains { $0.contains("status-subscriptions") })
            default: #expect(lines.first?.contains("status-subscriptions") == true)
            }
        }
    }
}
