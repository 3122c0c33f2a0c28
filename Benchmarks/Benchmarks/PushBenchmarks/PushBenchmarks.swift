import AppConfigBatch
import AppConfigCore
import AppConfigPush
import AppConfigSources
import Benchmark
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

// `appconfig push` of a 100k-device DDM generation (the demo spec over tools/gen-fleet's fleet)
// into a minimal server: SwiftNIO's HTTP server on one event-loop thread in this process, answering
// every write 204, a declaration read with a token and a set read with an empty list. The client is
// the library `push` runs, with its default 16 requests in flight. Measured: requests per second
// client-side, the client's CPU per request (the process's CPU less the server thread's), and the
// server thread's share, so that "the client is not the bottleneck" is a figure, not a claim.

let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()

/// The 100k fleet's DDM generation, rendered once into Benchmarks/.fleet/100000-ddm/out.
func generation(devices: Int) -> String {
    let dir = root.appendingPathComponent("Benchmarks/.fleet/\(devices)-ddm").path
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

/// Answers by method and route, from bytes made once; counts the server thread's CPU.
final class MinimalHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart
    static let token = ByteBuffer(string: #"{"ServerToken":"0123456789abcdef"}"#)
    static let empty = ByteBuffer(string: "[]")
    private var head: HTTPRequestHead?

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let h): head = h
        case .body: break
        case .end:
            guard let head else { return }
            var body: ByteBuffer?
            if head.method == .GET {
                body = head.uri.contains("/declarations/") ? Self.token : Self.empty
            }
            var headers = HTTPHeaders()
            headers.add(name: "Content-Length", value: String(body?.readableBytes ?? 0))
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: body == nil ? .noContent : .ok, headers: headers))), promise: nil)
            if let body { context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil) }
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
    }
}

func threadCPUSeconds() -> Double {
    var t = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)
    return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
}

func processCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
    return seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

let benchmarks: @Sendable () -> Void = {
    Benchmark("Push.100kDevices.ddm.minimalServer",
              configuration: .init(metrics: [.wallClock, .custom("requestsPerSecond", polarity: .prefersLarger, useScalingFactor: false),
                                             .custom("clientCPUNanosPerRequest", useScalingFactor: false),
                                             .custom("serverCPUPercentOfProcess", useScalingFactor: false)],
                                   warmupIterations: 0, maxDuration: .seconds(600), maxIterations: 3,
                                   thresholds: [.custom("requestsPerSecond", polarity: .prefersLarger, useScalingFactor: false): .init(relative: [.p90: 25.0]),
                                                .custom("clientCPUNanosPerRequest", useScalingFactor: false): .init(relative: [.p90: 25.0])])) { benchmark in
        let out = generation(devices: 100_000)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let channel = try! ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.backlog, value: 256)
            .childChannelInitializer { channel in
                channel.pipeline.configureHTTPServerPipeline().flatMap { channel.pipeline.addHandler(MinimalHandler()) }
            }
            .bind(host: "127.0.0.1", port: 0).wait()
        let journal = FileManager.default.temporaryDirectory.appendingPathComponent("push-bench-\(getpid()).journal").path
        unlink(journal)
        var options = PushOptions(source: out, server: .kmfddm, url: "http://127.0.0.1:\(channel.localAddress!.port!)", apiKey: "bench")
        options.journal = journal
        let serverStart = try! loop.submit { threadCPUSeconds() }.wait()
        let cpuStart = processCPUSeconds()
        let start = Date()
        benchmark.startMeasurement()
        let job = PushJob(options)
        let result = runBlocking { await job.run() }
        benchmark.stopMeasurement()
        let wall = Date().timeIntervalSince(start)
        let serverCPU = try! loop.submit { threadCPUSeconds() }.wait() - serverStart
        let cpu = processCPUSeconds() - cpuStart
        precondition(result.fatal == nil && result.failures.isEmpty, "the push failed: \(String(describing: result.fatal))")
        let requests = Double(result.summary.requestsTotal)
        benchmark.measurement(.custom("requestsPerSecond", polarity: .prefersLarger, useScalingFactor: false), Int(requests / wall))
        benchmark.measurement(.custom("clientCPUNanosPerRequest", useScalingFactor: false), Int((cpu - serverCPU) / requests * 1e9))
        benchmark.measurement(.custom("serverCPUPercentOfProcess", useScalingFactor: false), Int(serverCPU / cpu * 100))
        print("push: \(Int(requests)) requests in \(String(format: "%.1f", wall)) s: \(Int(requests / wall)) requests/s; client CPU \(String(format: "%.1f", (cpu - serverCPU) / requests * 1e6)) µs a request; server thread \(String(format: "%.1f", serverCPU)) s of \(String(format: "%.1f", cpu)) s")
        try! channel.close().wait()
        try! group.syncShutdownGracefully()
        unlink(journal)
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
