// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "replay",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "ReplayCore", targets: ["ReplayCore"]),
        .library(name: "ReplaySync", targets: ["ReplaySync"]),
        .library(name: "ReplayModel", targets: ["ReplayModel"]),
        .library(name: "ReplayStore", targets: ["ReplayStore"]),
        .library(name: "ReplayProtocol", targets: ["ReplayProtocol"]),
        .library(name: "ReplayClient", targets: ["ReplayClient"]),
        .library(name: "ReplayServer", targets: ["ReplayServer"]),
        .library(name: "ReplayDerive", targets: ["ReplayDerive"]),
        // For the fuzzers (Fuzz/): the token oracle and the test helpers.
        .library(name: "ReplayAuth", targets: ["ReplayAuth"]),
        .library(name: "ReplayTesting", targets: ["ReplayTesting"]),
        .executable(name: "replayd", targets: ["replayd"]),
        .executable(name: "replayctl", targets: ["replayctl"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/swiftlang/swift-subprocess", from: "1.0.2"),
        // FilePath, which swift-subprocess takes (its own dependency, named for the tests' use).
        .package(url: "https://github.com/apple/swift-system", from: "1.8.1"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        // The Durable Streams HTTP front door. Without its default ConfigurationSupport trait:
        // replayd takes its settings from flags, and swift-configuration would only add build time.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1", traits: ["FullFoundation"]),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        // The PostgreSQL store (several daemons, one log).
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        // Durable Streams subscriptions: webhook signatures (Ed25519) and their callback
        // tokens (JWT), and the webhook deliveries' outbound HTTP.
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.8.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        // TLS and HTTP/2 on the HTTP door (hummingbird's TLS and HTTP/2 channels over them).
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        // Spans over OTLP/HTTP (`--otlp-endpoint`). Its HTTP exporter only: the gRPC one
        // would build grpc-swift for a transport the daemon does not need.
        .package(url: "https://github.com/swift-otel/swift-otel", from: "1.6.0", traits: ["OTLPHTTP"]),
        // W3C trace context: what a `traceparent` is made of, parsed once at the door.
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
    ],
    targets: [
        // One lock for every module (`Locked`), so that the store and the daemon need not
        // import the signal model to guard a value. No dependencies.
        .target(name: "ReplaySync"),
        // The signal model of the articles. Knows nothing of SQLite, sockets or the CLI.
        .target(name: "ReplayCore", dependencies: ["ReplaySync"]),
        // The vocabulary every layer shares (stream names, times); no dependencies, so the
        // store, the daemon and the clients all read and check them by the same rules.
        .target(name: "ReplayModel"),
        // Streams whose history lives in SQLite; plugs into ReplayCore's ReplayBuffer seam.
        .target(
            name: "ReplayStore",
            dependencies: [
                "ReplayCore", "ReplayModel", "ReplaySync",
                .product(name: "GRDB", package: "GRDB.swift"),
                // SQLite's C API, for the two per-event statements (see RawStatement).
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                // SHA-256 for each stream's hash chain (Chain/HashChain.swift).
                "CLibCrypto",
            ],
            // The schema's SQL files, compiled in (see Plugins/EmbedMigrations).
            plugins: ["EmbedMigrations"]
        ),
        .plugin(name: "EmbedMigrations", capability: .buildTool()),
        // Who may do what: the operations, grants and principals both doors authorize with,
        // and the scoped tokens (JWTs) that carry grants, verified and minted with jwt-kit.
        .target(
            name: "ReplayAuth",
            dependencies: [
                "ReplayModel",
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // Test support shared by the test targets: a virtual-time timeline recorder and the
        // replay-subject conformance scenarios that every ReplayBuffer must pass.
        .target(
            name: "ReplayTesting",
            dependencies: [
                "ReplayCore", "ReplayProtocol", "ReplaySync", "CReplayTesting",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // The test support's C parts: how many tests run at once (set before the test
        // binary's main) and process descriptors for its children.
        .target(name: "CReplayTesting"),
        .testTarget(name: "ReplayCoreTests", dependencies: ["ReplayCore", "ReplaySync", "ReplayTesting"]),
        // OpenSSL's libcrypto (Debian's libssl-dev): the hash chains' SHA-256, without an
        // allocation per hash (Sources/CLibCrypto/shim.h says why not swift-crypto's).
        .systemLibrary(name: "CLibCrypto", path: "Sources/CLibCrypto", providers: [.apt(["libssl-dev"])]),
        // jemalloc (Debian's libjemalloc-dev): replayd's memory allocator, linked into the
        // daemon alone (Sources/replayd/MemoryAllocator.swift says why).
        .systemLibrary(name: "CJemalloc", path: "Sources/CJemalloc", providers: [.apt(["libjemalloc-dev"])]),
        // jq's C library (Debian's libjq-dev), linked as SQLite is: a system library.
        .systemLibrary(name: "CJQ", path: "Sources/CJQ", providers: [.apt(["libjq-dev"])]),
        // Derived streams' computations: the articles' operators evaluated by jq, one
        // interpreter per derivation. Knows nothing of the store or the wire.
        // jq's allocations, counted per thread for its programs' memory limit.
        .target(name: "CJQMeter", dependencies: ["CJQ"]),
        // Plain JSON documents parsed to jq's values faster than jq's own parser.
        .target(name: "CJQPlainJSON", dependencies: ["CJQ"]),
        .target(name: "ReplayDerive", dependencies: ["CJQ", "CJQMeter", "CJQPlainJSON", "ReplayModel"]),
        .testTarget(name: "ReplayDeriveTests", dependencies: ["CJQ", "CJQPlainJSON", "ReplayDerive", "ReplayModel", "ReplayTesting"]),
        // The wire protocol: commands, frames, their codecs. Knows nothing of streams' storage.
        .target(
            name: "ReplayProtocol",
            dependencies: ["ReplayModel", .product(name: "NIOCore", package: "swift-nio")]
        ),
        .testTarget(
            name: "ReplayProtocolTests",
            dependencies: [
                "ReplayProtocol", "ReplayModel",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOTestUtils", package: "swift-nio"),
            ]
        ),
        // The daemon's machinery: streams' live state, connections, the listener. The only
        // module that joins the store and the wire.
        .target(
            name: "ReplayServer",
            dependencies: [
                "ReplayCore", "ReplayModel", "ReplayStore", "ReplayProtocol", "ReplaySync", "ReplayAuth", "ReplayDerive",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOExtras", package: "swift-nio-extras"),
                // The HTTP parts hummingbird's channels carry (`RequestHeadDeadline`), and the
                // HTTP/1 pipeline of `HTTP1Door`, built as hummingbird builds it.
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdHTTP2", package: "hummingbird"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "OTel", package: "swift-otel"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        // The Swift client library: async calls, subscriptions as AsyncSequence and as core
        // Signals, resuming subscriptions. replayctl is built on it.
        .target(
            name: "ReplayClient",
            dependencies: [
                "ReplayProtocol", "ReplayCore", "ReplayModel",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "DequeModule", package: "swift-collections"),
            ]
        ),
        .testTarget(
            name: "ReplayServerTests",
            dependencies: [
                "ReplayServer", "ReplayProtocol", "ReplayStore", "ReplayTesting", "ReplayClient", "ReplayCore", "ReplaySync",
                "ReplayModel", "ReplayAuth", "replayd", "replayctl",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOExtras", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "Crypto", package: "swift-crypto"),
                // The HTTP door run in the test process (`withDoor`), where the daemon's
                // process is not what a test is about.
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "ReplayClientTests",
            dependencies: ["ReplayClient", "ReplayCore", "ReplayProtocol", "ReplaySync", "ReplayTesting", "replayd", "replayctl"]
        ),
        .executableTarget(
            name: "replayd",
            dependencies: [
                "CJemalloc", "ReplayServer", "ReplayStore", "ReplayProtocol", "ReplayAuth",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .executableTarget(
            name: "replayctl",
            dependencies: [
                "ReplayClient", "ReplayProtocol", "ReplayModel", "ReplaySync", "ReplayAuth",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                // `replayctl work` runs a command per event.
                .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "SystemPackage", package: "swift-system"),
                // `replayctl verify --checkpoint` checks a checkpoint's Ed25519 signature.
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // A child process the store's crash test kills mid-append.
        .executableTarget(name: "ReplayStoreProbe", dependencies: ["ReplayStore"]),
        .testTarget(
            name: "ReplayStoreTests",
            dependencies: [
                "ReplayStore", "ReplayCore", "ReplayModel", "ReplaySync", "ReplayTesting", "ReplayStoreProbe",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            // A database written by an earlier release, opened by path (see MigrationTests).
            exclude: ["Fixtures"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
