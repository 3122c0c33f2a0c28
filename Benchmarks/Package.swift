// swift-tools-version: 6.1
// The benchmark harness: ordo-one/benchmark over the engine (path: "../"). Run with tools/bench.
import PackageDescription

let package = Package(
    name: "appconfig-benchmarks",
    platforms: [.macOS(.v13)],
    dependencies: [
        .package(name: "appconfig", path: "../"),
        // MallocInterposer: allocation counts per benchmark (the render loop's target is zero).
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    ],
    targets: [
        .executableTarget(
            name: "RenderBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "AppConfigCore", package: "appconfig"),
                .product(name: "AppConfigSpec", package: "appconfig"),
                .product(name: "AppConfigCompiler", package: "appconfig"),
                .product(name: "AppConfigRender", package: "appconfig"),
                .product(name: "AppConfigSources", package: "appconfig"),
                .product(name: "AppConfigBatch", package: "appconfig"),
                .product(name: "LibPlist", package: "appconfig"),
            ],
            path: "Benchmarks/RenderBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // `appconfig push` into a minimal local server (SwiftNIO, in process, one thread): requests
        // per second client-side and the client's CPU per request.
        .executableTarget(
            name: "PushBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "AppConfigCore", package: "appconfig"),
                .product(name: "AppConfigBatch", package: "appconfig"),
                .product(name: "AppConfigSources", package: "appconfig"),
                .product(name: "AppConfigPush", package: "appconfig"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            path: "Benchmarks/PushBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // `appconfig status --events` over 1M generated webhook events: read, fold, join.
        .executableTarget(
            name: "StatusBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "AppConfigCore", package: "appconfig"),
                .product(name: "AppConfigBatch", package: "appconfig"),
                .product(name: "AppConfigSources", package: "appconfig"),
                .product(name: "AppConfigStatus", package: "appconfig"),
            ],
            path: "Benchmarks/StatusBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ]
)
