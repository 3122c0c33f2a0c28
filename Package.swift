// swift-tools-version: 6.1
// The AppConfig render engine: compiles Apple managed app configuration specs and renders them for
// whole fleets. See README.md for the commands and docs/design.md for the layers and the data flow.
import PackageDescription

let package = Package(
    name: "appconfig",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "appconfig", targets: ["appconfig"]),
        // Libraries for embedding the engine, and for the benchmark harness (Benchmarks/, path: "../").
        .library(name: "AppConfigSpec", targets: ["AppConfigSpec"]),
        .library(name: "AppConfigCompiler", targets: ["AppConfigCompiler"]),
        .library(name: "AppConfigRender", targets: ["AppConfigRender"]),
        .library(name: "AppConfigSources", targets: ["AppConfigSources"]),
        .library(name: "AppConfigOutput", targets: ["AppConfigOutput"]),
        .library(name: "AppConfigBatch", targets: ["AppConfigBatch"]),
        .library(name: "AppConfigPush", targets: ["AppConfigPush"]),
        .library(name: "AppConfigStatus", targets: ["AppConfigStatus"]),
        .library(name: "AppConfigExport", targets: ["AppConfigExport"]),
        .library(name: "LibPlist", targets: ["LibPlist"]),
        .library(name: "AppConfigCore", targets: ["AppConfigCore"]),
        .library(name: "Digest", targets: ["Digest"]),
    ],
    dependencies: [
        // Third-party packages: the command line, and HTTP for `push` (AsyncHTTPClient over SwiftNIO:
        // keep-alive pools, TLS with our own trust roots, deadlines; see docs/design.md). Everything
        // else is the toolchain and Debian C libraries (libplist, libldap, libpcre2, libcrypto,
        // libxxhash), declared as system libraries below.
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
    ],
    targets: [
        // MARK: System-library shims: module.modulemap + shim.h, found through pkg-config.
        .systemLibrary(
            name: "CPlist",
            pkgConfig: "libplist-2.0",
            providers: [.apt(["libplist-dev"]), .brew(["libplist"])]
        ),
        .systemLibrary(
            name: "CLDAP",
            pkgConfig: "ldap",
            providers: [.apt(["libldap2-dev"]), .brew(["openldap"])]
        ),
        .systemLibrary(
            name: "CCrypto",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"]), .brew(["openssl"])]
        ),
        .systemLibrary(
            name: "CXXHash",
            pkgConfig: "libxxhash",
            providers: [.apt(["libxxhash-dev"]), .brew(["xxhash"])]
        ),
        .systemLibrary(
            name: "CPCRE2",
            pkgConfig: "libpcre2-8",
            providers: [.apt(["libpcre2-dev"]), .brew(["pcre2"])]
        ),

        // MARK: Small wrappers that keep the unsafe C calls in one place each.
        /// Reads property lists through libplist into a Swift value (admin values files, test oracle).
        .target(name: "LibPlist", dependencies: ["CPlist"]),
        /// SHA-256 through OpenSSL's libcrypto (content-addressed delivery assets, declaration tokens) and
        /// XXH3-128 through libxxhash (the inputs' fingerprints); SHA-256 of sixteen messages at once
        /// (AVX-512 lanes, by hand: no Debian library has it) for the devices' outputs.
        .target(name: "Digest", dependencies: ["AppConfigCore", "CCrypto", "CXXHash", "CSHA256Lanes"]),
        /// PCRE2 patterns: compiled once, matched by the spec linter and the VM.
        .target(name: "AppConfigPattern", dependencies: ["AppConfigCore", "CPCRE2"]),
        /// Sixteen bytes at a time (SSE2) for the CSV scanner's hot loop.
        .target(name: "CByteScan"),
        /// Pages of a mapped file cut off under it read as zeros and are counted (no SIGBUS).
        .target(name: "CMappedFile"),
        /// SHA-256 of up to sixteen messages in the lanes of AVX-512 registers (see its header).
        .target(name: "CSHA256Lanes"),
        /// syncfs(2): a generation flushed in one call before its manifest marks it complete.
        .target(name: "CFileSync"),

        // MARK: The engine.
        /// What every module shares, with no dependencies but its C guard of mapped files: Problem,
        /// Location, Variable, DistinguishedName, ExitStatus, Parallelism, the C library (once); FNV-1a,
        /// byte comparison, UTF-8, file reading and mapping, the byte-key table, XML and JSON escaping.
        .target(name: "AppConfigCore", dependencies: ["CByteScan", "CMappedFile"]),
        /// XML -> Spec model, every rule of the AppConfig reference, admin values.
        .target(name: "AppConfigSpec", dependencies: ["AppConfigCore", "AppConfigPattern", "LibPlist"]),
        /// Spec + values -> Program: instructions, pre-encoded constants, slots, checks, disassembler.
        .target(name: "AppConfigCompiler", dependencies: ["AppConfigCore", "AppConfigSpec", "AppConfigPattern"]),
        /// Where variables come from: inventory CSV, LDIF and LDAP directories, DNs, the join, FleetSources.
        .target(name: "AppConfigSources", dependencies: ["AppConfigCore", "AppConfigSpec", "CByteScan", "CLDAP", "CXXHash"]),
        /// Where a generation goes: the output contract (`OutputDestination`, `OutputContainer`,
        /// `DeviceEncoding`), folder generations, tar archives, atomic files, output names, the lock.
        .target(name: "AppConfigOutput", dependencies: ["AppConfigCore", "Digest", "CFileSync"]),
        /// RenderJob (the whole job as a library call), the parallel renderer, the output sinks, shards, the report, verify.
        .target(name: "AppConfigBatch", dependencies: ["AppConfigCore", "AppConfigOutput", "AppConfigRender", "AppConfigCompiler", "AppConfigSources", "AppConfigSpec", "CByteScan", "CCrypto", "Digest", "LibPlist", "AppConfigPattern", "CFileSync"]),
        /// `appconfig push`: a published generation into a DDM server (KMFDDM, NanoHUB) or an MDM
        /// command queue (NanoMDM): only what changed (a journal), in an order no device sees a
        /// dangling reference in, resumable, with retries; HTTP through AsyncHTTPClient.
        .target(name: "AppConfigPush", dependencies: [
            "AppConfigCore", "AppConfigOutput", "AppConfigBatch", "AppConfigSpec", "AppConfigSources", "Digest",
            .product(name: "AsyncHTTPClient", package: "async-http-client"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
            .product(name: "NIOSSL", package: "swift-nio-ssl"),
        ]),
        /// `appconfig status`: what devices reported (webhook events, a DDM server's status
        /// endpoints), folded per device and joined to the generation and the push journal.
        .target(name: "AppConfigExport", dependencies: ["AppConfigCore", "AppConfigOutput", "AppConfigSpec"]),
        .target(name: "AppConfigStatus", dependencies: ["AppConfigCore", "AppConfigOutput", "AppConfigSpec", "AppConfigPush", "AppConfigBatch", "Digest", "LibPlist",
                                                       .product(name: "NIOHTTP1", package: "swift-nio")]),
        /// The VM and the two emitters (XML, binary): one device at a time into a reusable buffer.
        .target(name: "AppConfigRender", dependencies: ["AppConfigCore", "AppConfigCompiler", "AppConfigPattern"]),

        // MARK: Command line: a testable library of commands and a thin @main.
        .target(
            name: "AppConfigCLI",
            dependencies: [
                "AppConfigCore",
                "AppConfigSpec",
                "AppConfigCompiler",
                "AppConfigRender",
                "AppConfigSources",
                "AppConfigBatch",
                "AppConfigOutput",
                "AppConfigPush",
                "AppConfigStatus",
                "AppConfigExport",
                "Digest",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(name: "appconfig", dependencies: ["AppConfigCLI", "AppConfigBatch"]),

        // MARK: Tests.
        /// Paths to the fixtures and to ../shared/corpus (absent in a user's clone: tests skip).
        .target(name: "TestSupport", path: "Tests/TestSupport"),
        /// Specs and values compiled from text, for the compiler's and the renderer's tests.
        .target(name: "CompileSupport", dependencies: ["AppConfigCompiler", "AppConfigSpec"], path: "Tests/CompileSupport"),
        /// A stand-in for KMFDDM, NanoHUB and NanoMDM (SwiftNIO's HTTP server), written from the
        /// facts measured on the real servers, with fault injection: what the push tests talk to.
        .target(name: "ServerStandIn", dependencies: [
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
            .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
        ], path: "Tests/ServerStandIn"),
        .testTarget(name: "AppConfigExportTests", dependencies: ["AppConfigExport", "AppConfigCLI", "AppConfigCore", "AppConfigSpec", "LibPlist", "TestSupport"]),
        .testTarget(name: "AppConfigStatusTests", dependencies: ["AppConfigStatus", "AppConfigPush", "AppConfigCLI", "AppConfigCore", "AppConfigSpec", "ServerStandIn", "TestSupport"]),
        .testTarget(name: "AppConfigPushTests", dependencies: ["AppConfigPush", "AppConfigCLI", "AppConfigBatch", "AppConfigOutput", "AppConfigCore", "Digest", "ServerStandIn", "TestSupport"]),
        .testTarget(name: "AppConfigCoreTests", dependencies: ["AppConfigCore", "TestSupport"]),
        .testTarget(name: "DigestTests", dependencies: ["Digest", "TestSupport"]),
        .testTarget(name: "AppConfigPatternTests", dependencies: ["AppConfigPattern", "AppConfigCore", "TestSupport"]),
        .testTarget(name: "LibPlistTests", dependencies: ["LibPlist", "TestSupport"]),
        .testTarget(name: "AppConfigOutputTests", dependencies: ["AppConfigOutput", "AppConfigCore", "CFileSync", "Digest", "TestSupport"]),
        .testTarget(name: "AppConfigCompilerTests", dependencies: ["AppConfigCompiler", "CompileSupport", "AppConfigCore", "AppConfigPattern", "AppConfigSpec", "TestSupport"]),
        .testTarget(name: "AppConfigBatchTests",
                    dependencies: ["AppConfigBatch", "AppConfigOutput", "AppConfigCompiler", "AppConfigCore", "AppConfigRender", "AppConfigSources", "AppConfigSpec",
                                   "Digest", "LibPlist", "TestSupport"]),
        .testTarget(name: "AppConfigSpecTests", dependencies: ["AppConfigCore", "AppConfigSpec", "TestSupport", "LibPlist"]),
        .testTarget(name: "AppConfigRenderTests",
                    dependencies: ["AppConfigCore", "AppConfigRender", "AppConfigCompiler", "AppConfigSpec", "CompileSupport", "LibPlist", "TestSupport"]),
        .testTarget(name: "AppConfigSourcesTests", dependencies: ["AppConfigCore", "AppConfigSources", "AppConfigSpec", "CByteScan", "TestSupport"]),
        .testTarget(name: "AppConfigCLITests", dependencies: ["AppConfigCLI", "AppConfigCore", .product(name: "ArgumentParser", package: "swift-argument-parser"), "AppConfigBatch", "AppConfigOutput", "AppConfigCompiler", "AppConfigRender", "AppConfigSources", "AppConfigSpec", "Digest", "LibPlist", "TestSupport"]),
    ]
)
