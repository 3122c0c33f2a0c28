import AppConfigCore
import AppConfigCompiler
import AppConfigRender
import ArgumentParser
import Digest

/// `appconfig bench SPEC [--values FILE] [--devices N] [--format F]`: renders synthetic devices in
/// memory on one thread and prints devices per second: the quick figure for the VM and emitters
/// (the benchmark harness in Benchmarks/ measures more, with baselines).
struct BenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Render synthetic devices in memory on one thread and report devices per second."
    )

    @Argument(help: "The spec file (XML).")
    var spec: String

    @Option(help: "An admin values file.")
    var values: String?

    @Option(help: "How many devices to render per format.")
    var devices = 1_000_000

    @Option(help: "Formats to measure: binary, xml (repeatable; default both).")
    var format: [OutputFormat] = []

    @OptionGroup var policy: PolicyOptions

    func run() throws {
        let program = try policy.compile(spec: spec, values: values)
        let fleet = SyntheticFleet(slots: program.slots, count: min(devices, 100_000))
        let image = ProgramImage(program)
        writeStandardOutput("spec \(spec)\(values.map { " + \($0)" } ?? ""): \(program.keys.count) keys, \(program.slots.count) variables per device "
              + "(\(program.slots.map(\.description).joined(separator: ", "))), \(devices) devices, 1 thread")
        for f in format.isEmpty ? OutputFormat.allCases : format {
            let renderer = Renderer(image: image, format: f)
            var bytes = 0
            var failures = 0
            var firstFailure: String?
            // Warm up: buffers reach their size, caches fill.
            var slots = [SlotValue](repeating: .missing, count: fleet.slotCount)
            for i in 0..<min(1000, fleet.count) { _ = try? fleet.withDevice(i, into: &slots) { v throws(Problem) in try renderer.render(v) } }
            let start = monotonicSeconds()
            for i in 0..<devices {
                do {
                    bytes &+= try fleet.withDevice(i % fleet.count, into: &slots) { v throws(Problem) in try renderer.render(v).count }
                } catch {
                    failures += 1
                    if firstFailure == nil { firstFailure = "\(error)" }
                }
            }
            let seconds = monotonicSeconds() - start
            let rate = Double(devices) / seconds
            writeStandardOutput("\(f.rawValue.padding(6)) \(formatRate(rate)) devices/s  \(String(format1: seconds * 1e9 / Double(devices))) ns/device  "
                  + "\(bytes / max(devices - failures, 1)) bytes/device  \(failures) failed")
            if let firstFailure { writeStandardOutput("  first failure: \(firstFailure)") }
            let digest = Self.digestNanoseconds(renderer, fleet, devices: devices)
            writeStandardOutput("       sha256 \(String(format1: digest)) ns/device (\(SHA256.hasLanes ? "\(SHA256.lanes) lanes" : "one at a time"), as the sink hashes each device's bytes)")
        }
    }

    /// The SHA-256 of each device's bytes as the sink makes them for the manifest, a pass of
    /// `SHA256.lanes` devices at a time; the devices rendered first (up to 4,096, hashed again and
    /// again), so that the digest alone is timed.
    private static func digestNanoseconds(_ renderer: Renderer, _ fleet: SyntheticFleet, devices: Int) -> Double {
        var bytes: [UInt8] = [], ends: [Int] = []
        var slots = [SlotValue](repeating: .missing, count: fleet.slotCount)
        for i in 0..<min(4096, fleet.count) {
            guard let rendered = try? fleet.withDevice(i, into: &slots, { v throws(Problem) in Array(try renderer.render(v)) }) else { continue }
            bytes += rendered
            ends.append(bytes.count)
        }
        guard !ends.isEmpty else { return 0 }
        // Each pass's messages and their ends within it.
        let passes = stride(from: 0, to: ends.count, by: SHA256.lanes).map { first in
            let start = first == 0 ? 0 : ends[first - 1], last = min(first + SHA256.lanes, ends.count)
            return (start..<ends[last - 1], ends[first..<last].map { $0 - start })
        }
        var hashed = 0
        let start = monotonicSeconds()
        bytes.withView { all in
            while hashed < devices {
                for (range, passEnds) in passes where hashed < devices {
                    SHA256.digests(of: all[view: range], ends: passEnds) { _, _ in }
                    hashed += passEnds.count
                }
            }
        }
        let seconds = monotonicSeconds() - start
        return seconds * 1e9 / Double(hashed)
    }
}

/// Devices with distinct, valid-looking values for every slot, laid out as the batch will lay
/// them out: one byte buffer and a range per slot.
struct SyntheticFleet {
    let count: Int
    let slotCount: Int
    private let bytes: [UInt8]
    private let ranges: [(Int, Int)]

    init(slots: [Variable], count: Int) {
        self.count = count
        slotCount = slots.count
        var bytes: [UInt8] = []
        var ranges: [(Int, Int)] = []
        for i in 0..<count {
            for slot in slots {
                let value = Self.value(of: slot, device: i)
                ranges.append((bytes.count, value.utf8.count))
                bytes += Array(value.utf8)
            }
        }
        self.bytes = bytes
        self.ranges = ranges
    }

    /// Device identifiers in the shapes devices report them (a spec's patterns check those: a
    /// serial number of four characters failed the demo spec's `^[A-Z0-9]{8,14}$` on every device).
    static func value(of v: Variable, device i: Int) -> String {
        func digits(_ n: Int, _ radix: Int, width: Int) -> String {
            let s = String(n, radix: radix, uppercase: true)
            return String(repeating: "0", count: max(width - s.count, 0)) + s
        }
        return switch v {
        case .user(.cn): "User \(i)"
        case .user(.displayName): "User \(i), Engineering"
        case .user(.ou): "Unit\(i % 50)"
        case .user(.emailAddress), .user(.upn), .user(.userName): "user\(i)x@company.com"
        case .user(.emailAddressLocalPart), .user(.sAMAccountName): "user\(i)"
        case .user(.emailAddressDomain): "company.com"
        case .device(.serialNumber): "C02" + digits(i, 36, width: 9)
        case .device(.udid): "00008030-" + digits(i, 16, width: 16)
        case .device(.imei): "35" + digits(i, 10, width: 13)
        case .device(.meid): "A1" + digits(i, 16, width: 12)
        case .device(.iccid): "8901" + digits(i, 10, width: 15)
        case .device(.imsi): "310" + digits(i, 10, width: 12)
        case .device(.phoneNumber): "+1415" + digits(i % 10_000_000, 10, width: 7)
        case .device(.wifiMacAddress): "a4:83:e7:" + (0..<3).map { digits((i >> (8 * (2 - $0))) & 0xFF, 16, width: 2).lowercased() }.joined(separator: ":")
        case .device(.model): "iPad Pro"
        default: "value\(i)"
        }
    }

    /// Device `i`'s values laid into `slots` (room for `slotCount`), handed to `body` as a view.
    func withDevice<R, E: Error>(_ i: Int, into slots: inout [SlotValue], _ body: (BufferView<SlotValue>) throws(E) -> R) throws(E) -> R {
        try slots.withWorkerSlots { slots throws(E) in
            try bytes.withView { base throws(E) in
                for s in 0..<slotCount {
                    let (start, length) = ranges[i * slotCount + s]
                    slots[s] = SlotValue(base[view: start..<(start + length)])
                }
                return try body(slots.view(prefix: slotCount))
            }
        }
    }
}
