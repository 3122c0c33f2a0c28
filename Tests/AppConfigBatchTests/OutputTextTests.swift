@testable import AppConfigBatch
@testable import AppConfigOutput
import AppConfigCore
import Digest
import Foundation
import TestSupport
import Testing

/// The text every device's lines and names are made of: its file name and its JSON strings, both
/// appended in runs of bytes that need nothing done.
@Suite("Output text: safe names, JSON strings")
struct OutputTextTests {
    @Test("a digest's hex: all 64 digits or the first few, as its bytes read", arguments: [64, 1, 15, 16, 17, 40, 0])
    func digestHex(digits: Int) {
        let digest = SHA256Digest(of: Array("abc".utf8))
        let full = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        #expect(String(decoding: [UInt8](room: 64) { $0.write(hex: digest, digits: digits) }, as: UTF8.self) == String(full.prefix(digits)))
        var appended: [UInt8] = []
        digest.appendHex(digits: digits, to: &appended)
        #expect(String(decoding: appended, as: UTF8.self) == String(full.prefix(digits)))
    }

    @Test("a key's path: its folder from the hash, plain runs kept, other bytes %XX, a leading dot escaped", arguments: [
        ("0000E7B5-30C2224388DB06AF", "0000E7B5-30C2224388DB06AF"), (".hidden", "%2Ehidden"), ("a.b.", "a.b."),
        ("../x", "%2E.%2Fx"), ("a/b c", "a%2Fb%20c"), ("é", "%C3%A9"), ("%", "%25"), ("x\n", "x%0A"), ("", ""),
    ])
    func safeName(key: String, name: String) {
        let bytes = Array(key.utf8)
        let path = bytes.withView { OutputNames.relativePath($0) }
        let folder = bytes.withView { OutputNames.hash($0) } % UInt64(OutputNames.folderCount)
        #expect(path == String(format: "%03x/", folder) + name + ".plist")
    }

    @Test("20,000 random keys: the path made at once for a key that needs no escape is the escaping path's")
    func safeKeysAtOnce() {
        var random = SplitMix64(seed: 15)
        // Every byte around the safe classes' edges, and some far from them.
        let alphabet: [UInt8] = Array(0x2B...0x3B) + Array(0x3F...0x5C) + Array(0x5E...0x7B) + [0x00, 0x20, 0x7F, 0x80, 0xC3, 0xFF]
        let safe = alphabet.filter { [$0].withView { OutputNames.isSafeName($0) } && $0 != UInt8(ascii: ".") }
        var took = 0
        for n in 0..<20_000 {
            let length = Int.random(in: 0...95, using: &random)
            // Half of the keys of safe bytes only, the others with any byte anywhere.
            var key = (0..<length).map { _ in safe.randomElement(using: &random)! }
            if n % 2 == 1, length > 0 { key[Int.random(in: 0..<length, using: &random)] = alphabet.randomElement(using: &random)! }
            if n % 7 == 0, length > 0 { key[0] = UInt8(ascii: ".") }
            var fast: [UInt8] = [7], reference: [UInt8] = [7], kept: [UInt8] = [7]
            key.withView { k in
                if k.count <= 90 && OutputNames.isSafeName(k) { took += 1 }
                OutputNames.appendRelativePath(k, to: &fast)
                OutputNames.appendEscapedRelativePath(k, hash: OutputNames.hash(k), extension: ".plist", to: &reference)
                // The path name as the digest slots keep it (two bytes), read back.
                let name = OutputNames.PathName(bits: OutputNames.PathName(key: k).bits)!
                #expect(Int(name.folder) == Int(OutputNames.hash(k) % UInt64(OutputNames.folderCount)) && name.isOwn == OutputNames.isOwnName(k))
                OutputNames.appendRelativePath(k, name: name, extension: ".plist", to: &kept)
            }
            #expect(fast == reference, "\(key)")
            #expect(kept == reference, "\(key)")
        }
        #expect(took > 12_000 && took < 17_000)  // and the other 3,000 to 8,000 escaped
    }

    @Test("20,000 random keys: the index and manifest lines made at once for a key that is its own name are the piece-by-piece lines")
    func linesAtOnce() {
        var random = SplitMix64(seed: 16)
        let alphabet: [UInt8] = Array(0x20...0x7F) + [0x00, 0x09, 0x0A, 0x80, 0xC3, 0xFF]
        let safe = alphabet.filter { [$0].withView { OutputNames.isSafeName($0) } && $0 != UInt8(ascii: ".") }
        let fieldsChoices = [[UInt8](), Array(#","assignments":["sales","everyone"]"#.utf8)]
        var took = 0
        for n in 0..<20_000 {
            let length = Int.random(in: 0...95, using: &random)
            var key = (0..<length).map { _ in safe.randomElement(using: &random)! }
            if n % 2 == 1, length > 0 { key[Int.random(in: 0..<length, using: &random)] = alphabet.randomElement(using: &random)! }
            let digest = SHA256Digest(a: random.next(), b: random.next(), c: random.next(), d: random.next())
            let fields = fieldsChoices[n % 2]
            var fast: [UInt8] = [7], reference: [UInt8] = [7], fastManifest: [UInt8] = [7], referenceManifest: [UInt8] = [7]
            key.withView { k in
                fields.withView { f in
                    if OutputNames.isOwnName(k) { took += 1 }
                    // Every other line with the path name kept from the render, read back.
                    let name = n % 3 == 0 ? nil : OutputNames.PathName(bits: OutputNames.PathName(key: k).bits)
                    PlistEncoding().appendIndexLine(key: k, name: name, digest: digest, fields: f, to: &fast)
                    PlistEncoding.appendIndexLineByPieces(key: k, extension: ".plist", digest: digest, fields: f, to: &reference)
                    // Every other line without an input digest (`-`).
                    let inputs = n % 2 == 0 ? random.next() | 1 : InputDigest.none
                    Manifest.appendLine(key: k, name: name, extension: ".json", digest: digest, inputs: inputs, to: &fastManifest)
                    Manifest.appendLineByPieces(key: k, extension: ".json", digest: digest, inputs: inputs, to: &referenceManifest)
                }
            }
            #expect(fast == reference, "\(key)")
            #expect(fastManifest == referenceManifest, "\(key)")
        }
        #expect(took > 13_000 && took < 17_000)  // the keys of safe bytes, and those whose one other byte is safe too
    }

    @Test("digest slots: a digest with its path name, one without, none; a name's two bytes never read as none")
    func digestSlotsNames() {
        let slots = DigestSlots(count: 3)
        let digest = SHA256Digest(a: 1, b: 2, c: 3, d: 4)
        let names = ["AB12", "a/b", String(repeating: "k", count: 95)].map { k in Array(k.utf8).withView { OutputNames.PathName(key: $0) } }
        #expect(names.map(\.isOwn) == [true, false, false])
        slots.set(0, digest, name: names[0])
        slots.set(2, digest)
        #expect(slots[0] == digest && slots.name(at: 0) == names[0])
        #expect(slots[1] == nil && slots.name(at: 1) == nil)
        #expect(slots[2] == digest && slots.name(at: 2) == nil)
        for folder in [0, 1, 0xFFF] as [UInt16] {
            for own in [false, true] {
                slots.set(1, digest, name: OutputNames.PathName(bits: 0x8000 | folder | (own ? 0x4000 : 0))!)
                #expect(slots[1] == digest && slots.name(at: 1)?.folder == folder && slots.name(at: 1)?.isOwn == own)
            }
        }
    }

    @Test("a name over 90 bytes once encoded is cut and ends in ~ and the key's hash")
    func longName() {
        for key in [String(repeating: "a", count: 100), String(repeating: "/", count: 40)] {
            let bytes = Array(key.utf8)
            let name = String(bytes.withView { OutputNames.relativePath($0) }.dropFirst(4).dropLast(6))
            let suffix = String(bytes.withView { OutputNames.hash($0) }, radix: 16)
            let encoded = key.first == "a" ? key : String(repeating: "%2F", count: 40)
            #expect(name == encoded.prefix(89 - suffix.count) + "~" + suffix)
            #expect(name.utf8.count == 90)
        }
    }

    @Test("a manifest line: digest, path, the key with bytes below 0x21, % and DEL as %XX (the runs between as they are), input digest; read back")
    func manifestLine() throws {
        let key = Array("a b%\tc\u{7F}é.".utf8)
        let digest = SHA256Digest(of: key)
        var line: [UInt8] = []
        key.withView { Manifest.appendLine(key: $0, extension: ".plist", digest: digest, inputs: 0x00ff_1234_abcd_0001, to: &line) }
        let path = key.withView { OutputNames.relativePath($0) }
        #expect(String(decoding: line, as: UTF8.self) == digest.hex + "\t" + path + "\ta%20b%25%09c%7Fé.\t00ff1234abcd0001\n")
        // As the one line of a version 4 manifest: the key and both digests read back.
        let body = line
        let file = Manifest.headerText([("program", "x")]) + body + Self.trailer(count: 1, of: body)
        let manifest = try Manifest.parse(file, file: "m.tsv")
        #expect(key.withView { k in manifest.entryIndices(count: 1) { _ in k } } == [0])
        #expect(manifest.digest(at: 0) == digest && manifest.inputs(at: 0) == 0x00ff_1234_abcd_0001)
        #expect(String(decoding: file.prefix(21), as: UTF8.self) == "appconfig-manifest 4\n")
    }

    /// A version 4 end line for these device lines, as a run writes it.
    static func trailer(count: Int, of lines: [UInt8]) -> [UInt8] {
        let check = Manifest.LinesCheck()
        lines.withView { check.update($0) }
        return Manifest.trailer(count: count, check: check.finish())
    }

    @Test("an end line's check by version: SHA-256 in 2 and 3 (still read), XXH3-128 in 4; each other one refused", arguments: [
        ("appconfig-manifest 3", "sha256", nil),
        ("appconfig-manifest 2", "sha256", nil),
        ("appconfig-manifest 4", "xxh3", nil),
        ("appconfig-manifest 4", "sha256", "an end line is end, count and xxh3-128:HEX, tab-separated"),
        ("appconfig-manifest 3", "xxh3", "an end line is end, count and SHA-256, tab-separated"),
        ("appconfig-manifest 4", "xxh3 of other lines", "the device lines do not match the end line's XXH3-128: the manifest was edited or damaged"),
        ("appconfig-manifest 3", "sha256 of other lines", "the device lines do not match the end line's SHA-256: the manifest was edited or damaged"),
        ("appconfig-manifest 4", "xxh3 in capitals", "an end line is end, count and xxh3-128:HEX, tab-separated"),
    ] as [(String, String, String?)])
    func endLineByVersion(version: String, check: String, refusal: String?) throws {
        let key = Array("D1".utf8)
        var body: [UInt8] = []
        // Version 2 lines have no input digest.
        let inputs: UInt64 = 0x1234
        key.withView { Manifest.appendLine(key: $0, extension: ".plist", digest: SHA256Digest(of: key), inputs: inputs, to: &body) }
        if version.hasSuffix(" 2") { body = Array(String(decoding: body, as: UTF8.self).split(separator: "\t").dropLast().joined(separator: "\t").utf8) + [0x0A] }
        let hashed = check.hasSuffix("other lines") ? body + Array("x".utf8) : body
        let xxh3 = Manifest.LinesCheck()
        hashed.withView { xxh3.update($0) }
        guard case .xxh3(let hex) = xxh3.finish() else { Issue.record("a version 4 check is XXH3-128"); return }
        let field = check.hasPrefix("sha256") ? SHA256Digest(of: hashed).hex : "xxh3-128:" + (check.hasSuffix("capitals") ? hex.uppercased() : hex)
        let file = Array("\(version)\nprogram x\n\n".utf8) + body + Array("end\t1\t\(field)\n".utf8)
        do throws(Problem) {
            let manifest = try Manifest.parse(file, file: "m.tsv")
            #expect(refusal == nil)
            #expect(manifest.digest(at: 0) == SHA256Digest(of: key))
            #expect(manifest.inputs(at: 0) == (version.hasSuffix(" 2") ? InputDigest.none : inputs))
        } catch {
            #expect(error.code == ProblemCode(rawValue: "manifest.syntax") && error.message == refusal)
        }
        // A night that only needs to trust it reads its end line the same way, and says so the same way.
        try withTemporaryDirectory { dir in
            let path = dir.path("m.tsv")
            try Data(file).write(to: URL(fileURLWithPath: path))
            do throws(Problem) {
                try Manifest.checkWhole(path)
                #expect(refusal == nil)
            } catch {
                #expect(error.code == ProblemCode(rawValue: "manifest.syntax") && error.message == refusal)
            }
        }
    }

    @Test("a night finds each device's entry in last night's manifest by one merge in key order, in parts: as a dictionary would; then only the others' keys are kept", arguments: [
        (10, 10), (1000, 3), (150_000, 140_000), (150_000, 0), (0, 50),
    ])
    func entryIndices(manifestKeys: Int, queries: Int) throws {
        var random = SplitMix64(seed: UInt64(manifestKeys * 31 + queries))
        // Keys from one space, so that some queries are in the manifest and some not; sorted by bytes.
        func keys(_ n: Int) -> [[UInt8]] {
            Set((0..<n).map { _ in "D\(random.next() % UInt64(2 * max(manifestKeys, queries, 1)))" }).map { Array($0.utf8) }
                .sorted { a, b in a.withView { a in b.withView { b in a.precedes(b) } } }
        }
        let listed = keys(manifestKeys), asked = keys(queries)
        var body: [UInt8] = []
        for k in listed { k.withView { Manifest.appendLine(key: $0, extension: ".plist", digest: SHA256Digest(of: k), inputs: 1, to: &body) } }
        let file = Manifest.headerText([("program", "x")]) + body + Self.trailer(count: listed.count, of: body)
        let manifest = try Manifest.parse(file, file: "m.tsv")
        let place = Dictionary(uniqueKeysWithValues: listed.enumerated().map { ($1, Int32($0)) })
        // The asked keys back to back, as a render's rows lie in its inventory.
        let text = asked.flatMap { $0 }, starts = asked.reduce(into: [0]) { $0.append($0.last! + $1.count) }
        let found = text.withView { t in manifest.entryIndices(count: asked.count) { i in t[view: starts[i]..<starts[i + 1]] } }
        #expect(found == asked.map { place[$0] ?? -1 })
        #expect(found.filter { $0 >= 0 }.count > 0 || manifestKeys == 0 || queries == 0)
        // The keys of the entries found are let go; the others' (the devices tonight lacks) read back.
        manifest.releaseKeys(matchedBy: found)
        let matched = Set(found.filter { $0 >= 0 })
        for (e, k) in listed.enumerated() where !matched.contains(Int32(e)) {
            #expect(manifest.withKey(at: e) { Array($0) } == k)
            #expect(manifest.digest(at: e) == SHA256Digest(of: k))
        }
    }

    @Test("a digest read back from its 64 hex digits, either case; any other byte anywhere refused")
    func digestFromHex() {
        var random = SplitMix64(seed: 64)
        for n in 0..<2000 {
            let digest = SHA256Digest(of: (0..<(n % 40)).map { _ in UInt8(truncatingIfNeeded: random.next()) })
            for text in [digest.hex, digest.hex.uppercased()] {
                #expect(Array(text.utf8).withView { SHA256Digest(hex: $0) } == digest)
            }
        }
        let good = Array(SHA256Digest(of: Array("abc".utf8)).hex.utf8)
        for bad: UInt8 in [0x2F, 0x3A, 0x40, 0x47, 0x60, 0x67, 0x20, 0x00, 0x80, 0xB0, 0xE1, 0xFF] {
            for at in [0, 1, 7, 8, 15, 16, 31, 32, 62, 63] {
                var text = good
                text[at] = bad
                #expect(text.withView { SHA256Digest(hex: $0) } == nil, "byte \(bad) at \(at)")
            }
        }
        #expect(Array(good.dropLast()).withView { SHA256Digest(hex: $0) } == nil)
    }

    @Test("input digest fields: 16 hex digits or -, nothing else", arguments: [
        ("-", InputDigest.none), ("00000000000000ff", 255), ("ffffffffffffffff", UInt64.max),
        ("FFFFFFFFFFFFFFFF", nil), ("0000000000000000", nil), ("123", nil), ("", nil), ("00000000000000fg", nil),
        ("0123456789abcdef", 0x0123_4567_89ab_cdef), ("fedcba9876543210", 0xfedc_ba98_7654_3210), ("0123456789aBcdef", nil),
        ("0123456789abcdeF", nil), ("A123456789abcdef", nil), ("0123456789abcde ", nil), ("0123456789abcdef0", nil),
    ] as [(String, UInt64?)])
    func inputDigestField(_ text: String, _ value: UInt64?) {
        let bytes = Array(text.utf8)
        #expect(bytes.withView { InputDigest.parse($0) } == value)
        if let value {
            #expect(String(decoding: [UInt8](room: 16) { $0.write(inputDigest: value) }, as: UTF8.self) == text)
        }
    }

    @Test("2,000 seeded input digests read back as written; each with one digit made a capital or a non-digit, refused")
    func inputDigestRoundTrip() {
        var random = SplitMix64(seed: 16)
        for _ in 0..<2000 {
            let value = random.next()
            guard value != InputDigest.none else { continue }
            var text = [UInt8](room: 16) { $0.write(inputDigest: value) }
            #expect(text.withView { InputDigest.parse($0) } == value)
            let at = Int(random.next() % 16)
            text[at] = text[at] >= 0x61 ? text[at] - 0x20 : UInt8(ascii: "g")
            #expect(text.withView { InputDigest.parse($0) } == nil)
        }
    }

    @Test("JSON strings: escapes at the start, middle and end, from contiguous bytes and from any sequence", arguments: [
        "", "plain", "\"quoted\"", "back\\slash\\", "tab\tnewline\ncr\r", "\u{01}x\u{1F}", "é ü 日本 🙂", "a\"b\\c\n\u{01}",
    ])
    func jsonString(text: String) throws {
        var contiguous: [UInt8] = [], sequence: [UInt8] = []
        appendJSONString(Array(text.utf8), to: &contiguous)
        appendJSONString(text.utf8.lazy.map { $0 }, to: &sequence)  // not contiguous: byte by byte
        #expect(contiguous == sequence)
        let decoded = try JSONSerialization.jsonObject(with: Data(contiguous), options: .fragmentsAllowed) as? String
        #expect(decoded == text)
        if text == "a\"b\\c\n\u{01}" { #expect(String(decoding: contiguous, as: UTF8.self) == #""a\"b\\c\n\u0001""#) }
    }
}
