// swift-tools-version: 6.1
// libFuzzer targets for the parsers that read admins' files: the XML reader and spec parser, the
// values reader (JSON, and plists through libplist), the inventory CSV reader and the LDIF reader.
// A package of its own, built with -sanitize=fuzzer,address (which the main package's executable
// cannot be); each target's main hands libFuzzer's driver its callback. Run through
// tools/fuzz TARGET SECONDS.
import PackageDescription

let package = Package(
    name: "appconfig-fuzz",
    platforms: [.macOS(.v13)],
    dependencies: [.package(name: "appconfig", path: "..")],
    targets: [
        .target(name: "FuzzDriver"),
        .executableTarget(name: "FuzzSpec", dependencies: ["FuzzDriver", .product(name: "AppConfigCore", package: "appconfig"), .product(name: "AppConfigSpec", package: "appconfig")]),
        .executableTarget(name: "FuzzValues", dependencies: ["FuzzDriver", .product(name: "AppConfigCore", package: "appconfig"), .product(name: "AppConfigSpec", package: "appconfig")]),
        .executableTarget(name: "FuzzCSV", dependencies: ["FuzzDriver", .product(name: "AppConfigCore", package: "appconfig"), .product(name: "AppConfigSources", package: "appconfig")]),
        .executableTarget(name: "FuzzLDIF", dependencies: ["FuzzDriver", .product(name: "AppConfigCore", package: "appconfig"), .product(name: "AppConfigSources", package: "appconfig")]),
    ]
)
