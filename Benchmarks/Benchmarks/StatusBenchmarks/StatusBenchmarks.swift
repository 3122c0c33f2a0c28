import AppConfigBatch
import AppConfigCore
import AppConfigSources
import AppConfigStatus
import Benchmark
import Foundation

// `appconfig status --events` over a generated file of 1M webhook events: a DDM generation of the
// demo spec over tools/gen-fleet's fleet (rendered once into Benchmarks/.fleet/), and for every
// device one `mdm.DeclarativeManagement` event whose check-in plist carries a full status report
// (management.declarations with its set, app.managed.list with config-state), as a device sends
// after a push. Measured: reading the events, folding them per enrollment, joining them to the
// generation (the target: under 10 s for 1M on this 2-core machine); events per second.
// APPCONFIG_STATUS_BENCH_DEVICES shrinks the fleet for a quick look.

let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()
let devices = Int(ProcessInfo.processInfo.environment["APPCONFIG_STATUS_BENCH_DEVICES"] ?? "") ?? 1_000_000

/// The fleet's DDM generation, rendered once.
func generation(devices: Int) -> String {
    let dir = root.appendingPathComponent("Benchmarks/.fleet/\(devices)-ddm-status").path
    let out = dir + "/out"
    if FileManager.default.fileExists(atPath: out + "/index.jsonl") { return out }
    let fleet = root.appendingPathComponent("Benchmarks/.fleet/\(devices)").path
    if !FileManager.default.fileExists(atPath: fleet + "/inventory.csv") {
        let p = Process()
        p.executableURL = root.appendingPathComponent("tools/gen-fleet")
        p.arguments = ["--devices", String(devices), "--out", fleet]
        try! p.run()
        p.waitUntilExit()
    }
    try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    var job = RenderJob(spec: root.appendingPathComponent("Fixtures/demo/spec.xml").path,
                        sources: FleetSources(inventory: fleet + "/inventory.csv", directory: .ldif(fleet + "/directory.ldif")))
    job.values = root.appendingPathComponent("Fixtures/demo/values.json").path
    job.delivery.delivery = .ddm
    job.delivery.assetBaseURL = "https://cdn.example.com/appconfig"
    job.output = .directory(out)
    _ = try! job.run()
    return out
}

/// One event per device of the generation: its full status report, every declaration valid and
/// active at its token, the app managed with a valid configuration. Written once beside the output.
func events(for out: String) -> String {
    let path = out + ".events.jsonl"
    if FileManager.default.fileExists(atPath: path) { return path }
    var tokens: [Substring: Substring] = [:]
    let declarations = try! String(contentsOfFile: out + "/declarations.jsonl", encoding: .utf8)
    for line in declarations.split(separator: "\n") {
        let id = line.split(separator: "\"")[3]
        let token = line.range(of: #""ServerToken":""#).map { line[$0.upperBound...].prefix(32) }!
        tokens[id] = token
    }
    let handle = FileHandle(forWritingAtPath: { FileManager.default.createFile(atPath: path, contents: nil); return path }())!
    var batch = ""
    let index = try! String(contentsOfFile: out + "/index.jsonl", encoding: .utf8)
    for line in index.split(separator: "\n") {
        let parts = line.split(separator: "\"")
        let device = parts[3]
        let ids = Array(parts[7...].prefix { $0 != "]," && !$0.hasPrefix("],") }.enumerated().filter { $0.offset % 2 == 0 }.map(\.element))
        func entry(_ id: Substring) -> String { #"{"active":true,"identifier":"\#(id)","server-token":"\#(tokens[id] ?? "")","valid":"valid"}"# }
        let report = #"{"FullReport":true,"StatusItems":{"management":{"declarations":{"activations":[\#(entry(ids[0]))],"configurations":[\#(entry(ids[1])),\#(entry(ids[2]))],"assets":[\#(ids.dropFirst(3).map(entry).joined(separator: ","))],"management":[]}},"app":{"managed":{"list":[{"identifier":"com.northwind.fieldservice","declaration-identifier":"\#(ids[1])","state":"managed","config-state":{"app-config-state":{"state":"valid"}}}]}}},"Errors":[]}"#
        let plist = """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0"><dict><key>Data</key><data>\(Data(report.utf8).base64EncodedString())</data><key>Endpoint</key><string>status</string><key>MessageType</key><string>DeclarativeManagement</string><key>UDID</key><string>\(device)</string></dict></plist>
            """
        batch += #"{"checkin_event":{"enrollment_id":"\#(device)","raw_payload":"\#(Data(plist.utf8).base64EncodedString())","udid":"\#(device)"},"created_at":"2026-11-28T06:00:00Z","topic":"mdm.DeclarativeManagement"}"# + "\n"
        if batch.utf8.count > 8 << 20 {
            handle.write(Data(batch.utf8))
            batch = ""
        }
    }
    handle.write(Data(batch.utf8))
    try! handle.close()
    return path
}

let benchmarks: @Sendable () -> Void = {
    Benchmark("Status.\(devices / 1000)kEvents.foldAndJoin",
              configuration: .init(metrics: [.wallClock, .cpuTotal, .peakMemoryResident,
                                             .custom("eventsPerSecond", polarity: .prefersLarger, useScalingFactor: false)],
                                   warmupIterations: 0, maxDuration: .seconds(600), maxIterations: 3,
                                   thresholds: [.wallClock: .init(relative: [.p90: 25.0])])) { benchmark in
        // As `appconfig status` does before it runs the job.
        HeapGrowth.inLargeSteps()
        let out = generation(devices: devices)
        let file = events(for: out)
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("status-bench-\(getpid()).state").path
        var options = StatusOptions(source: out)
        options.reports = .events(file)
        options.statePath = state
        options.journal = out + ".no-journal"
        unlink(state)
        let start = Date()
        benchmark.startMeasurement()
        let job = StatusJob(options)
        let result = runBlocking { try! await job.run() }
        benchmark.stopMeasurement()
        let wall = Date().timeIntervalSince(start)
        defer { StatusJob.awaitReleased() }
        precondition(result.problems.isEmpty && result.summary.allDone, "status: \(result.problems.prefix(3)) \(result.summary.states)")
        benchmark.measurement(.custom("eventsPerSecond", polarity: .prefersLarger, useScalingFactor: false), Int(Double(result.summary.events) / wall))
        print("status: \(result.summary.events) events folded and joined to \(result.summary.devices) devices in \(String(format: "%.2f", wall)) s")
        unlink(state)
    }
}

/// Waits for an async call from the benchmark's synchronous closure.
final class ResultBox<T>: @unchecked Sendable { var value: T? }

func runBlocking<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
    let box = ResultBox<T>()
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        box.value = await body()
        done.signal()
    }
    done.wait()
    return box.value!
}
