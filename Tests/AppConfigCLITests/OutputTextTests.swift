@testable import AppConfigBatch
import AppConfigBytes
import Digest
import Foundation
import Testing

/// The text every device's lines and names are made of: its file name and its JSON strings, both
/// appended in runs of bytes that need nothing done.
@Suite("Output text: safe names, JSON strings")
struct OutputTextTests {
    @Test("a key's path: its folder from the hash, plain runs kept, other bytes %XX, a leading dot escaped", arguments: [
        ("0000E7B5-30C2224388DB06AF", "0000E7B5-30C2224388DB06AF"), (".hidden", "%2Ehidden"), ("a.b.", "a.b."),
        ("../x", "%2E.%2Fx"), ("a/b c", "a%2Fb%20c"), ("é", "%C3%A9"), ("%", "%25"), ("x\n", "x%0A"), ("", ""),
    ])
    func safeName(key: String, name: String) {
        let bytes = Array(key.utf8)
        let path = bytes.withUnsafeBufferPointer { OutputNames.relativePath($0) }
        let folder = bytes.withUnsafeBufferPointer { OutputNames.hash($0) } % UInt64(OutputNames.folderCount)
        #expect(path == String(format: "%03x/", folder) + name + ".plist")
    }

    @Test("a name over 90 bytes once encoded is cut and ends in ~ and the key's hash")
    func longName() {
        for key in [String(repeating: "a", count: 100), String(repeating: "/", count: 40)] {
            let bytes = Array(key.utf8)
            let name = String(bytes.withUnsafeBufferPointer { OutputNames.relativePath($0) }.dropFirst(4).dropLast(6))
            let suffix = String(bytes.withUnsafeBufferPointer { OutputNames.hash($0) }, radix: 16)
            let encoded = key.first == "a" ? key : String(repeating: "%2F", count: 40)
            #expect(name == encoded.prefix(89 - suffix.count) + "~" + suffix)
            #expect(name.utf8.count == 90)
        }
    }

    @Test("a manifest line: digest, path, and the key with bytes below 0x21, % and DEL as %XX, the runs between as they are")
    func manifestLine() {
        let key = Array("a b%\tc\u{7F}é.".utf8)
        let digest = SHA256Digest(of: key)
        var line: [UInt8] = []
        key.withUnsafeBufferPointer { Manifest.appendLine(key: $0, extension: ".plist", digest: digest, to: &line) }
        let path = key.withUnsafeBufferPointer { OutputNames.relativePath($0) }
        #expect(String(decoding: line, as: UTF8.self) == digest.hex + "\t" + path + "\ta%20b%25%09c%7Fé.\n")
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
