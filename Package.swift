// swift-tools-version:6.0
import PackageDescription

let strict: [SwiftSetting] = [.enableUpcomingFeature("ExistentialAny")]

let package = Package(
    name: "Attache",
    platforms: [.macOS(.v15)],
    products: [
        // Target names never differ from one another only by case (a macOS disk is case-insensitive
        // by default); the executables keep their lower-case names as products.
        .executable(name: "attache", targets: ["AttacheCLI"]),
        .executable(name: "attache-serve", targets: ["AttacheServe"]),
        // The sandboxed decoder helper the service, the worker and batch run their decoding in.
        .executable(name: "attache-decode", targets: ["AttacheDecode"]),
        // What an extension author imports: the runtime and extension API, the payload model, and
        // the fetch engine (an extension that fetches its own content uses it too).
        .library(name: "Attache", targets: ["Attache", "AttachePayload", "AttacheFetch"]),
        .library(name: "AttacheTesting", targets: ["AttacheTesting"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-configuration.git", from: "1.4.0"),
    ],
    targets: [
        // C libraries, one system-library target per pkg-config name.
        .systemLibrary(name: "CJPEG", pkgConfig: "libjpeg", providers: [.apt(["libjpeg62-turbo-dev"])]),
        .systemLibrary(name: "CPNG", pkgConfig: "libpng16", providers: [.apt(["libpng-dev"])]),
        .systemLibrary(name: "CGIF", providers: [.apt(["libgif-dev"])]),
        // The images iOS does not show, converted: HEIC, AVIF (stills and sequences), WebP, JPEG XL.
        // libavif and libjxl without pkg-config: their .pc files add only defines for Windows DLLs
        // and highway, which SwiftPM refuses with a warning on every build.
        .systemLibrary(name: "CHEIF", pkgConfig: "libheif", providers: [.apt(["libheif-dev"])]),
        .systemLibrary(name: "CAVIF", providers: [.apt(["libavif-dev"])]),
        .systemLibrary(name: "CWebP", pkgConfig: "libwebpdemux", providers: [.apt(["libwebp-dev"])]),
        .systemLibrary(name: "CJXL", providers: [.apt(["libjxl-dev"])]),
        // FFmpeg's headers; the libraries are loaded with dlopen on first use (see ffmpeg_loader.h).
        .systemLibrary(
            name: "CFFmpeg",
            providers: [.apt(["libavformat-dev", "libavcodec-dev", "libswscale-dev", "libavutil-dev"])]
        ),
        .systemLibrary(name: "CMalloc"),
        .systemLibrary(name: "COpenSSL", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        // libcurl (headers from libcurl4-openssl-dev), loaded with dlopen on first use: see
        // include/attache_curl.h.
        .target(name: "CCurl", linkerSettings: [.linkedLibrary("dl")]),
        // nats.c (Debian's libnats), for the queue worker only: linked into attache-serve, which
        // runs `attache worker`, not into attache.
        .target(name: "CNats", linkerSettings: [.linkedLibrary("nats")]),
        // Decoders and encoders written against those libraries; setjmp/longjmp stays in here.
        .target(
            name: "CImageCodecs",
            dependencies: ["CJPEG", "CPNG", "CGIF", "CHEIF", "CAVIF", "CWebP", "CJXL"],
            linkerSettings: [
                .linkedLibrary("jpeg"), .linkedLibrary("png16"), .linkedLibrary("gif"), .linkedLibrary("heif"),
                .linkedLibrary("avif"), .linkedLibrary("webpdemux"), .linkedLibrary("webp"), .linkedLibrary("jxl"),
            ]
        ),
        // The decoder helper's sandbox: rlimits, no new privileges, a libseccomp filter.
        .target(name: "CSandbox", linkerSettings: [.linkedLibrary("seccomp")]),
        // Starting that helper with nothing of the service's but its socket, and handing it files.
        .target(name: "CSpawn"),
        // Probe and poster frames on FFmpeg; its macros stay in here.
        .target(
            name: "CVideoCodecs",
            dependencies: ["CFFmpeg", "CImageCodecs"],
            linkerSettings: [.linkedLibrary("dl")]
        ),

        .target(name: "AttachePayload", swiftSettings: strict),
        .target(
            name: "AttacheFetch",
            dependencies: ["CCurl", "AttacheSupport", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict
        ),
        .target(name: "AttacheSupport", dependencies: ["COpenSSL"], swiftSettings: strict),
        .target(name: "AttacheMedia", dependencies: ["CImageCodecs", "CVideoCodecs", "CSpawn", "AttacheSupport", "AttachePayload"], swiftSettings: strict),
        .target(name: "AttacheStore", dependencies: ["AttacheSupport", "AttacheFetch"], swiftSettings: strict),
        // Decoding in sandboxed helper processes: the pool that starts, feeds and replaces them.
        .target(
            name: "AttacheIsolation",
            dependencies: ["AttacheMedia", "AttachePayload", "AttacheSupport", "CSpawn", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict
        ),
        // attache-decode, the helper: AttacheMedia's decoders behind CSandbox, jobs over a socket.
        .executableTarget(name: "AttacheDecode", dependencies: ["AttacheMedia", "AttachePayload", "AttacheSupport", "CMalloc", "CSandbox"], swiftSettings: strict),
        .target(
            name: "Attache",
            dependencies: [
                "AttachePayload", "AttacheFetch", "AttacheMedia", "AttacheStore", "AttacheSupport", "AttacheIsolation",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // What the command line runs besides enrichment: the batch runner (ordered, resumable
        // output) and the fallback-timing lab (timeline renderer, deadline sweep).
        .target(
            name: "AttacheTools",
            dependencies: ["Attache", "AttachePayload", "AttacheStore", "AttacheSupport"],
            swiftSettings: strict
        ),
        .target(
            name: "AttacheServer",
            dependencies: [
                "Attache", "AttacheStore", "AttacheSupport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        // `attache worker`: payloads from a NATS JetStream stream, one payload out per payload in.
        .target(
            name: "AttacheWorker",
            dependencies: [
                "Attache", "AttachePayload", "AttacheServer", "AttacheSupport", "CNats",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        .target(name: "AttacheTesting", dependencies: ["AttacheSupport", "CSpawn"], swiftSettings: strict),
        // Tests only (it imports Testing; AttacheTesting ships inside attache-tools): a trait that
        // keeps CPU-heavy tests off the test runner's cooperative threads.
        .target(name: "AttacheTestTraits", dependencies: ["AttacheSupport"], swiftSettings: strict),
        // What both executables share: file and stream IO, logging, argument parsing.
        .target(
            name: "AttacheCommandLine",
            dependencies: [
                "Attache", "AttacheFetch", "AttacheIsolation", "AttacheMedia", "AttachePayload", "AttacheStore", "AttacheSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // Every command but the service, which `attache serve` runs from attache-serve: Hummingbird
        // brings Foundation and ICU, which every other command would pay for at start.
        .executableTarget(
            name: "AttacheCLI",
            dependencies: [
                "Attache", "AttacheTools", "AttacheCommandLine", "AttacheIsolation", "AttacheTesting", "AttacheSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "AttacheServe",
            dependencies: [
                "Attache", "AttacheServer", "AttacheWorker", "AttacheCommandLine", "AttacheSupport", "CMalloc",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                // The environment through swift-configuration: the service has Foundation already;
                // the CLI, which starts per payload, reads it with getenv.
                .product(name: "Configuration", package: "swift-configuration"),
            ],
            swiftSettings: strict
        ),

        .testTarget(name: "AttachePayloadTests", dependencies: ["AttachePayload", "AttacheTesting"]),
        .testTarget(
            name: "AttacheWorkerTests",
            dependencies: ["AttacheWorker", "Attache", "AttacheServer", "AttacheTesting", "AttacheSupport",
                           .product(name: "HummingbirdTesting", package: "hummingbird"),
                           .product(name: "HTTPTypes", package: "swift-http-types"),
                           .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                           .product(name: "Logging", package: "swift-log")]
        ),
        .testTarget(name: "AttacheSupportTests", dependencies: ["AttacheSupport", "AttacheTesting"]),
        .testTarget(name: "AttacheStoreTests", dependencies: ["AttacheStore", "AttacheFetch", "AttacheSupport", "AttacheTesting", "AttacheTestTraits"]),
        .testTarget(
            name: "AttacheCommandLineTests",
            // Attache directly: its types (EnrichmentOptions) are laid out in these tests, and an
            // incremental build only recompiles them when it sees the dependency.
            dependencies: ["AttacheCommandLine", "Attache", "AttacheFetch", "AttachePayload", .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),
        .testTarget(name: "AttacheFetchTests", dependencies: ["AttacheFetch", "AttacheTesting"]),
        .testTarget(name: "AttacheMediaTests", dependencies: ["AttacheMedia", "AttacheTesting", "AttacheTestTraits"]),
        // AttacheDecode: the helper is built before the tests that start it.
        .testTarget(name: "AttacheIsolationTests", dependencies: ["AttacheIsolation", "AttacheDecode", "AttacheMedia", "AttacheTesting", "AttacheTestTraits"]),
        .testTarget(
            name: "AttacheTests",
            dependencies: ["Attache", "AttacheIsolation", "AttacheTools", "AttacheTesting", "AttacheTestTraits", .product(name: "Logging", package: "swift-log")]
        ),
        .testTarget(
            name: "AttacheServerTests",
            dependencies: [
                "AttacheServer", "AttacheTesting", "AttacheTestTraits", "AttacheSupport",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
    ]
)
