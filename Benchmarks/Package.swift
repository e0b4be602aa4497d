// swift-tools-version: 6.1
// In-process micro-benchmarks of the core and the store (ordo-one/benchmark). A package of
// its own so that building the product and running its tests never builds the harness.
//   cd Benchmarks && swift package benchmark
import Foundation
import PackageDescription

// A path dependency is known by its folder's name, which is whatever the clone is called.
let replay = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().lastPathComponent

let package = Package(
    name: "replay-benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
    ],
    targets: [
        // The end-to-end load generator: the daemon over its socket, and Redis Streams.
        .executableTarget(
            name: "replay-bench",
            dependencies: [
                .product(name: "ReplayProtocol", package: replay),
                .product(name: "ReplayModel", package: replay),
                .product(name: "ReplaySync", package: replay),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOCore", package: "swift-nio"),
                "CEpoll",
            ],
            path: "LoadGenerator",
            // The load generator must not be the bottleneck it measures. Its clients (replay's
            // and Redis's alike) parse every frame through class properties, and the dynamic
            // exclusivity checks on them took a quarter of its time in a catch-up.
            swiftSettings: [.unsafeFlags(["-enforce-exclusivity=unchecked"])]
        ),
        // <sys/epoll.h>, which Swift's Glibc module leaves out, for the SSE readers.
        .target(name: "CEpoll", path: "CEpoll"),
        // The floor under replay's HTTP appends: its HTTP pipeline answering with no store.
        .executableTarget(
            name: "http-floor",
            dependencies: [
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
            ],
            path: "HTTPFloor"
        ),
        .executableTarget(
            name: "StoreBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "ReplayStore", package: replay),
            ],
            path: "Benchmarks/StoreBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "CoreBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "ReplayCore", package: replay),
            ],
            path: "Benchmarks/CoreBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
