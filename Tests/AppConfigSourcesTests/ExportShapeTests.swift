import AppConfigCore
@testable import AppConfigSources
import TestSupport
import Testing

/// The export checks' shapes, tested a byte's class at a time without branches (`ASCIISet`),
/// against the byte loops they replaced (kept here as the reference).
@Suite("export checks: each shape against the byte loops it replaced")
struct ExportShapeTests {
    /// The shapes as they were tested before `ASCIISet`: a branch per class per byte.
    static func reference(_ shape: ExportChecks.Shape, _ v: [UInt8]) -> Bool {
        func isHex(_ b: UInt8) -> Bool { (b >= 0x30 && b <= 0x39) || (b | 0x20 >= 0x61 && b | 0x20 <= 0x66) }
        func isAlphanumeric(_ b: UInt8) -> Bool { (b >= 0x30 && b <= 0x39) || (b | 0x20 >= 0x61 && b | 0x20 <= 0x7A) }
        switch shape {
        case .serialNumber:
            return v.count <= 40 && v.allSatisfy { isAlphanumeric($0) || $0 == UInt8(ascii: "-") }
        case .udid:
            var run = 0, runs = 0, pattern: UInt64 = 0
            for b in v {
                if b == UInt8(ascii: "-") {
                    pattern = pattern << 8 | UInt64(min(run, 255)); runs += 1; run = 0
                    if runs > 4 { return false }
                } else if isHex(b) { run += 1 } else { return false }
            }
            pattern = pattern << 8 | UInt64(min(run, 255))
            return (runs == 0 && run == 40) || (runs == 1 && pattern == (8 << 8 | 16)) || (runs == 4 && pattern == (8 << 32 | 4 << 24 | 4 << 16 | 4 << 8 | 12))
        case .imei:
            var digits = 0
            for b in v {
                if b >= 0x30 && b <= 0x39 { digits += 1 } else if b != UInt8(ascii: " ") { return false }
            }
            return (14...16).contains(digits)
        case .macAddress:
            if v.count == 12 { return v.allSatisfy(isHex) }
            guard v.count == 17 else { return false }
            let separator = v[2]
            guard separator == UInt8(ascii: ":") || separator == UInt8(ascii: "-") else { return false }
            return (0..<17).allSatisfy { $0 % 3 == 2 ? v[$0] == separator : isHex(v[$0]) }
        case .email:
            var at = -1
            for (i, b) in v.enumerated() {
                if b == UInt8(ascii: " ") { return false }
                if b == UInt8(ascii: "@") && at < 0 { at = i }
            }
            return at > 0 && at < v.count - 1
        }
    }

    static let shapes: [ExportChecks.Shape] = [.serialNumber, .udid, .imei, .macAddress, .email]

    @Test("values of each shape and near misses: the same verdict as the reference, the expected one", arguments: [
        (ExportChecks.Shape.serialNumber, "C07T6QCZG9RM", true), (.serialNumber, "ABC-123", true), (.serialNumber, "10.0.0.12", false),
        (.serialNumber, String(repeating: "A", count: 41), false), (.serialNumber, "CØ7T", false),
        (.udid, "00008030-001A2B3C4D5E6F70", true), (.udid, "00008030001A2B3C4D5E6F7-", false), (.udid, "0000803-0001A2B3C4D5E6F70", false),
        (.udid, "6F9619FF-8B86-D011-B42D-00C04FC964FF", true), (.udid, "6F9619FF-8B86-D011-B42D00-C04FC964FF", false),
        (.udid, String(repeating: "a", count: 40), true), (.udid, String(repeating: "g", count: 40), false), (.udid, "00008030--01A2B3C4D5E6F70", false),
        (.imei, "35 209900 176148 1", true), (.imei, "352099001761481", true), (.imei, "3520990017614", false), (.imei, "35209900176148a", false),
        (.macAddress, "08:66:98:D7:A6:D0", true), (.macAddress, "08-66-98-D7-A6-D0", true), (.macAddress, "08:66-98:D7:A6:D0", false),
        (.macAddress, "086698D7A6D0", true), (.macAddress, "2026-11-01 10:22", false), (.macAddress, "08:66:98:D7:A6:DG", false),
        (.email, "jane@corp.example", true), (.email, "@corp", false), (.email, "jane@", false), (.email, "jane doe@corp", false), (.email, "jané@corp", true),
    ] as [(ExportChecks.Shape, String, Bool)])
    func examples(shape: ExportChecks.Shape, value: String, fits: Bool) {
        let bytes = Array(value.utf8)
        #expect(bytes.withView { shape.fits($0) } == fits)
        #expect(Self.reference(shape, bytes) == fits)
    }

    @Test("50,000 seeded values per shape, from the characters the shapes tell apart: the reference's verdict")
    func seeded() {
        var random = SplitMix64(seed: 0x5A9E)
        let alphabet = Array("0123456789abcdefABCDEFgGzZ-: @.\u{7F}".utf8) + [0x80, 0xAD, 0xC3, 0xA9, 0xFF]
        for shape in Self.shapes {
            var fitting = 0
            for _ in 0..<50_000 {
                // Lengths around each shape's: 12, 14-17, 25, 36, 40, and others.
                let count = [1, 11, 12, 13, 14, 15, 16, 17, 18, 24, 25, 26, 35, 36, 37, 39, 40, 41].randomElement(using: &random)!
                // Mostly one shape's characters, so that some values fit.
                let hexOnly = Bool.random(using: &random)
                var v = (0..<count).map { _ in hexOnly ? Array("0123456789abcdef".utf8).randomElement(using: &random)! : alphabet.randomElement(using: &random)! }
                for _ in 0..<Int.random(in: 0...4, using: &random) where count > 0 {
                    v[Int.random(in: 0..<count, using: &random)] = Array("-: @".utf8).randomElement(using: &random)!
                }
                if count == 36 && Bool.random(using: &random) { for i in [8, 13, 18, 23] { v[i] = UInt8(ascii: "-") } }
                if count == 25 && Bool.random(using: &random) { v[8] = UInt8(ascii: "-") }
                let expected = Self.reference(shape, v)
                if expected { fitting += 1 }
                let got = v.withView { shape.fits($0) }
                if got != expected { Issue.record("\(shape) \(v): \(got), the reference \(expected)") }
            }
            // Each shape met values that fit and values that do not.
            #expect(fitting > 0 && fitting < 50_000, "\(shape): \(fitting) fitting")
        }
    }
}
