// swift-tools-version: 6.1
// libFuzzer harness for the protocol decoder and the connection state machine, and (with
// FUZZ_TARGET=tokens) for the HTTP door's Authorization header and token verification.
//   tools/fuzz.sh [seconds]     builds with -sanitize=fuzzer,address and runs the fuzzer
// Built without those flags, the same executable replays corpus files (regressions).
import Foundation
import PackageDescription

// A path dependency is known by its folder's name, which is whatever the clone is called.
let replay = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().lastPathComponent

let package = Package(
    name: "replay-fuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(path: "..")],
    targets: [
        .executableTarget(
            name: "ReplayFuzzer",
            dependencies: [
                .product(name: "ReplayProtocol", package: replay),
                .product(name: "ReplayServer", package: replay),
                .product(name: "ReplayTesting", package: replay),
            ]
        )
    ],
    swiftLanguageModes: [.v6]
)
