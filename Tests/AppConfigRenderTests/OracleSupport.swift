import AppConfigCompiler
import AppConfigCore
import AppConfigRender
import AppConfigSpec
import Foundation
import LibPlist
import TestSupport
import Testing

/// A plist dictionary in plist key order (code points), as every decoder returns it.
func plistDict(_ pairs: [String: PlistValue]) -> PlistValue {
    .dictionary(pairs.sorted { Array($0.key.utf8).lexicographicallyPrecedes(Array($1.key.utf8)) }.map { (key: $0.key, value: $0.value) })
}

func date(_ iso: String) -> PlistValue { .date(ISO8601.parse(iso)!.secondsSince2001) }

/// What a format can carry: XML dates have whole seconds (every writer drops the fraction).
func expected(_ value: PlistValue, for format: OutputFormat) -> PlistValue {
    guard format == .xml else { return value }
    switch value {
    case .date(let d): return .date(d.rounded(.down))
    case .array(let items): return .array(items.map { expected($0, for: format) })
    case .dictionary(let pairs): return .dictionary(pairs.map { (key: $0.key, value: expected($0.value, for: format)) })
    default: return value
    }
}

/// libplist 2.2 hands dates out as whole seconds (truncated toward zero) and microseconds, and gives
/// the microseconds of a negative date a positive sign (-0.5 s reads as 0 s + 500000 µs; seen with
/// a C program against libplist 2.2.0). Compare at that precision and through that reading; plistlib
/// checks the same dates exactly.
func microsecondDates(_ value: PlistValue) -> PlistValue {
    switch value {
    case .date(let d):
        let whole = d.rounded(.towardZero)
        return .date(whole + ((d - whole).magnitude * 1_000_000).rounded() / 1_000_000)
    case .array(let items): return .array(items.map(microsecondDates))
    case .dictionary(let pairs): return .dictionary(pairs.map { (key: $0.key, value: microsecondDates($0.value)) })
    default: return value
    }
}

/// The oracle script's value notation: type-tagged, reals as bit patterns, dates as microseconds.
func tagged(_ value: PlistValue) -> Any {
    switch value {
    case .string(let s): return ["t": "str", "v": s]
    case .integer(let i): return ["t": "int", "v": String(i)]
    case .boolean(let b): return ["t": "bool", "v": b]
    case .real(let d): return ["t": "real", "bits": String(d.bitPattern)]
    case .date(let d): return ["t": "date", "micros": String(Int64((d * 1_000_000).rounded()))]
    case .array(let items): return ["t": "array", "v": items.map(tagged)]
    case .dictionary(let pairs): return ["t": "dict", "v": pairs.map { [$0.key, tagged($0.value)] }]
    case .data, .uid: return ["t": "unsupported"]
    }
}

/// One document to render and check: a program, one device's variables, what it must decode to.
struct OracleCase {
    var name: String
    var program: Program
    var device: [Variable: String]
    var expected: PlistValue
    /// False where we differ from plistlib's bytes on purpose (a carriage return: `&#13;`).
    var xmlBytesEqualPlistlib = true
}

/// Renders every case in both formats; libplist decodes each in-process, then plistlib checks the
/// whole batch (values and bytes) in one subprocess. Also renders each twice: same bytes.
func checkWithOracles(_ cases: [OracleCase]) throws {
    try withTemporaryDirectory { dir in
        var manifest: [[String: Any]] = []
        for c in cases {
            let image = ProgramImage(c.program)
            for format in OutputFormat.allCases {
                let renderer = Renderer(image: image, format: format)
                let bytes = try renderer.renderCopy(c.device)
                #expect(try renderer.renderCopy(c.device) == bytes, "\(c.name) \(format): a second render differs")
                #expect(try Renderer(image: image, format: format).renderCopy(c.device) == bytes, "\(c.name) \(format): a fresh renderer differs")
                let want = expected(c.expected, for: format)
                let decoded = try LibPlist.decode(bytes)
                #expect(decoded == microsecondDates(want), "libplist, \(c.name) \(format)")
                let file = dir.url.appendingPathComponent("\(c.name).\(format.rawValue).plist").path
                try Data(bytes).write(to: URL(fileURLWithPath: file))
                manifest.append(["file": file, "format": format.rawValue, "expected": tagged(want),
                                 "bytes_equal": format == .binary || c.xmlBytesEqualPlistlib])
            }
        }
        let manifestPath = dir.path("manifest.json")
        try JSONSerialization.data(withJSONObject: manifest).write(to: URL(fileURLWithPath: manifestPath))
        let python = try #require(which("python3"), "python3 is needed for the plistlib oracle")
        let script = Paths.root.appendingPathComponent("Tests/Oracles/plistlib_oracle.py").path
        let run = try runProcess(python, [script, manifestPath])
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        #expect(run.stdout.hasSuffix("plistlib oracle: \(manifest.count) files ok, 0 files wrong\n"), "\(run.stdout)")
    }
}
