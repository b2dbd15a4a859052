// swift-tools-version:6.1
import PackageDescription

let strict: [SwiftSetting] = [.enableUpcomingFeature("ExistentialAny")]

let package = Package(
    name: "Attache",
    platforms: [.macOS(.v15)],
    products: [
        // Target names never differ from one another only by case (a macOS disk is case-insensitive
        // by default); the executables keep their lower-case names as products.
        .executable(name: "attache", targets: ["AttacheMain"]),
        .executable(name: "attache-serve", targets: ["AttacheServiceMain"]),
        // The sandboxed decoder helper the service, the worker and batch run their decoding in.
        .executable(name: "attache-decode", targets: ["AttacheDecoderMain"]),
        // What an extension author imports: the runtime and extension API, the payload model, the
        // fetch engine (an extension that fetches its own content uses it too), and the enrichment
        // (with the reasons of fetch and media errors, `Reason(fetchError)`).
        .library(name: "Attache", targets: ["Attache", "AttachePayload", "AttacheFetch", "AttacheEnrichment"]),
        .library(name: "AttacheTesting", targets: ["AttacheTesting", "AttacheOrigin"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        // NIOHTTPTypes: the HTTP parts the relay's own handlers see on a client's connection.
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        // Every setting is read through its ConfigReader (AttacheCommandLine); Reloading: the
        // tenants file is read through its ReloadingFileProvider. Not the default JSON trait: its
        // JSONSnapshot imports Foundation, which `attache` does not load.
        .package(url: "https://github.com/apple/swift-configuration.git", from: "1.4.0", traits: ["Reloading"]),
        // Traces: the API the doors and the enrichment make spans with (Hummingbird's too);
        // AttacheTracing records them and exports them over OTLP/HTTP when the OTEL_* variables
        // ask for it.
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
        // The tenants file's YAML, with the line of every node (errors name it).
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.2.2"),
        // FilePath, which swift-configuration's file providers take.
        .package(url: "https://github.com/apple/swift-system.git", from: "1.8.1"),
    ],
    targets: [
        // C libraries, one system-library target per pkg-config name.
        .systemLibrary(name: "CJPEG", pkgConfig: "libjpeg", providers: [.apt(["libjpeg62-turbo-dev"])]),
        .systemLibrary(name: "CPNG", pkgConfig: "libpng16", providers: [.apt(["libpng-dev"])]),
        .systemLibrary(name: "CGIF", providers: [.apt(["libgif-dev"])]),
        // The images iOS does not show, converted: HEIC, AVIF (stills and sequences), WebP, JPEG XL.
        // libheif, libavif and libjxl: headers only, the libraries loaded with dlopen on first use
        // (CImageCodecs/modern_loader.h), so no pkg-config (whose --libs would link them; libavif's
        // and libjxl's .pc files also add defines SwiftPM refuses with a warning on every build).
        .systemLibrary(name: "CHEIF", providers: [.apt(["libheif-dev"])]),
        .systemLibrary(name: "CAVIF", providers: [.apt(["libavif-dev"])]),
        .systemLibrary(name: "CWebP", pkgConfig: "libwebpdemux", providers: [.apt(["libwebp-dev"])]),
        .systemLibrary(name: "CJXL", providers: [.apt(["libjxl-dev"])]),
        // FFmpeg's headers; the libraries are loaded with dlopen on first use (see ffmpeg_loader.h).
        .systemLibrary(
            name: "CFFmpeg",
            providers: [.apt(["libavformat-dev", "libavcodec-dev", "libswscale-dev", "libavutil-dev"])]
        ),
        .systemLibrary(name: "CMalloc"),
        // SHA-256 by libcrypto (headers from libssl-dev), loaded with dlopen on first use: see
        // include/attache_digest.h.
        .target(name: "CDigest", linkerSettings: [.linkedLibrary("dl")]),
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
                .linkedLibrary("jpeg"), .linkedLibrary("png16"), .linkedLibrary("gif"),
                .linkedLibrary("webpdemux"), .linkedLibrary("webp"), .linkedLibrary("z"), .linkedLibrary("dl"),
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

        // The runtime and what it is made of (docs/architecture.md).
        .target(name: "AttachePayload", swiftSettings: strict),
        .target(
            name: "AttacheFetch",
            dependencies: ["CCurl", "AttacheSupport", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict
        ),
        .target(name: "AttacheSupport", dependencies: ["CDigest"], swiftSettings: strict),
        .target(name: "AttacheMedia", dependencies: ["CImageCodecs", "CVideoCodecs", "CSpawn", "AttacheSupport", "AttachePayload"], swiftSettings: strict),
        .target(name: "AttacheStore", dependencies: ["AttacheSupport", "AttacheFetch"], swiftSettings: strict),
        // Decoding in sandboxed helper processes: the pool that starts, feeds and replaces them.
        .target(
            name: "AttacheIsolation",
            dependencies: [
                "AttacheMedia", "AttachePayload", "AttacheSupport", "CSpawn",
                .product(name: "Logging", package: "swift-log"), .product(name: "Metrics", package: "swift-metrics"),
            ],
            swiftSettings: strict
        ),
        // The helper process: AttacheMedia's decoders behind CSandbox, jobs over a socket.
        .target(name: "AttacheDecoderHelper", dependencies: ["AttacheMedia", "AttachePayload", "AttacheSupport", "CMalloc", "CSandbox"], swiftSettings: strict),
        // attache-decode, the helper as shipped.
        .executableTarget(name: "AttacheDecoderMain", dependencies: ["AttacheDecoderHelper"], swiftSettings: strict),
        // The tests' helper: the same process with a job that makes forbidden calls in the
        // sandbox (CSandboxProbe). No product: built for AttacheIsolationTests, never installed.
        .target(name: "CSandboxProbe"),
        .executableTarget(name: "AttacheDecoderProbe", dependencies: ["AttacheDecoderHelper", "AttacheMedia", "AttachePayload", "CSandboxProbe"], swiftSettings: strict),
        .target(
            name: "Attache",
            dependencies: [
                "AttachePayload",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // The media enrichment every front door runs: the enricher, the cache, the FCM envelope,
        // what a scope (a tenant) may do, and the reasons fetch and media errors give.
        .target(
            name: "AttacheEnrichment",
            dependencies: [
                "Attache", "AttachePayload", "AttacheFetch", "AttacheMedia", "AttacheStore", "AttacheSupport", "AttacheIsolation",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),

        // The front doors: each depends on the runtime (and the long-running ones on
        // AttacheOperations), never on another front door.
        // What the long-running front doors share: their metrics, the enrichment as a service.
        .target(
            name: "AttacheOperations",
            dependencies: [
                "Attache", "AttacheEnrichment", "AttacheFetch", "AttacheTenants", "AttacheTracing",
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        // The process's tracer when the OTEL_* variables ask for traces: spans recorded in a
        // buffer and sent as OTLP/HTTP protobuf (or to the console), W3C Trace Context between
        // processes. An SDK's tracer made a task hop and a generated message per span, which
        // cost more than the payload the span was about.
        .target(
            name: "AttacheTracing",
            dependencies: [
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        // What the HTTP doors share (the service, the relay, the lab): the request context, bearer
        // auth, the error body, /media, the probes, the names of Attache's header fields.
        .target(
            name: "AttacheHTTPKit",
            dependencies: [
                "Attache", "AttachePayload", "AttacheStore", "AttacheSupport", "AttacheTenants",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // `attache serve`: the Hummingbird application.
        .target(
            name: "AttacheHTTPService",
            dependencies: [
                "Attache", "AttacheEnrichment", "AttacheHTTPKit", "AttacheOperations", "AttacheStore", "AttacheSupport", "AttacheTenants",
                "AttacheTracing",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Instrumentation", package: "swift-distributed-tracing"),
            ],
            // The contract it serves at /openapi.yaml: docs/openapi.yaml, linked here, compiled in.
            resources: [.embedInCode("openapi.yaml")],
            swiftSettings: strict
        ),
        // Tenants: the tenants file (hashed tokens, hosts, store prefix, caps, rate, concurrency,
        // quota), reloaded while the service runs; every front door asks it.
        .target(
            name: "AttacheTenants",
            dependencies: [
                "Attache", "AttacheEnrichment", "AttacheFetch", "AttacheMedia", "AttacheStore", "AttacheSupport",
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: strict
        ),
        // `attache worker`: payloads from a NATS JetStream stream, one payload out per payload in.
        .target(
            name: "AttacheQueueWorker",
            dependencies: [
                "Attache", "AttacheEnrichment", "AttacheOperations", "AttachePayload", "AttacheSupport", "AttacheTenants", "CNats",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        // `attache relay`: APNs and FCM send requests in over HTTP/2, enriched, forwarded upstream.
        .target(
            name: "AttacheRelay",
            dependencies: [
                "Attache", "AttacheEnrichment", "AttacheHTTPKit", "AttacheOperations", "AttachePayload", "AttacheSupport", "AttacheTenants",
                // IPAddress: an upstream given as an address literal gets no SNI.
                "AttacheFetch",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                // Both sides' HTTP/2, in frames: a few connections per upstream, many streams each.
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                // HTTP/1.1's request parts (RequestMustEnd).
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                // The clear-text front door: the preface decides HTTP/2 or HTTP/1.1, as ALPN does.
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                // ES256 provider tokens, when the relay holds the team's key; RS256 for FCM's OAuth.
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: strict
        ),
        // `attache lab`: a page in the browser that runs payloads through the enrichment, streams
        // their stages live, previews the notification and sweeps deadlines × faults. Served by
        // the service's HTTP stack (its auth, error shape and media route come from there).
        .target(
            name: "AttacheLab",
            dependencies: [
                "Attache", "AttacheEnrichment", "AttacheFetch", "AttacheHTTPKit", "AttacheOrigin", "AttachePayload", "AttacheSupport", "AttacheTimeline",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // `attache batch`: the runner, ordered and resumable output, the ledger.
        .target(name: "AttacheBatch", dependencies: ["Attache", "AttacheEnrichment", "AttachePayload", "AttacheStore", "AttacheSupport"], swiftSettings: strict),
        // `attache timeline`: the renderer and the deadline sweep.
        .target(name: "AttacheTimeline", dependencies: ["Attache", "AttacheEnrichment", "AttachePayload", "AttacheSupport"], swiftSettings: strict),
        // `attache origin`: media served on loopback with faults chosen per request.
        .target(name: "AttacheOrigin", dependencies: ["AttacheSupport"], swiftSettings: strict),

        // Tests only: fixtures and real servers (SeaweedFS, NATS) for the tests, and a trait that
        // keeps CPU-heavy tests off the test runner's cooperative threads (it imports Testing).
        .target(
            name: "AttacheTesting",
            dependencies: [
                "AttacheOrigin", "AttacheSupport", "AttacheMedia", "CSpawn",
                // The fake APNs and FCM upstreams: HTTP/2 servers that check tokens as Apple and Google do.
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: strict
        ),
        .target(name: "AttacheTestTraits", dependencies: ["AttacheSupport"], swiftSettings: strict),

        // The command line: every setting's one reader, the option groups, IO and logging that
        // both executables share.
        .target(
            name: "AttacheCommandLine",
            dependencies: [
                "Attache", "AttacheEnrichment", "AttacheFetch", "AttacheIsolation", "AttacheMedia", "AttachePayload", "AttacheStore", "AttacheSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // `attache`: every command but the long-running ones, which `attache serve`, `worker` and
        // `config` run from attache-serve: Hummingbird brings Foundation and ICU, which every
        // other command would pay for at start.
        .executableTarget(
            name: "AttacheMain",
            dependencies: [
                "Attache", "AttacheEnrichment", "AttacheBatch", "AttacheTimeline", "AttacheOrigin", "AttacheCommandLine", "AttacheIsolation", "AttacheSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // `attache-serve`: the service, the worker and `attache config`.
        .executableTarget(
            name: "AttacheServiceMain",
            dependencies: [
                "Attache", "AttacheEnrichment", "AttacheHTTPKit", "AttacheHTTPService", "AttacheQueueWorker", "AttacheRelay", "AttacheLab", "AttacheOperations", "AttacheCommandLine", "AttacheSupport", "AttacheTenants", "CMalloc",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                // The environment through swift-configuration: the service has Foundation already;
                // the CLI, which starts per payload, reads it with getenv.
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "SystemPackage", package: "swift-system"),
                // NIO's thread pool: blocking calls (malloc_trim) off the event loops.
                .product(name: "NIOPosix", package: "swift-nio"),
                "AttacheTracing",
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: strict
        ),

        .testTarget(name: "AttachePayloadTests", dependencies: ["AttachePayload", "AttacheTesting"]),
        .testTarget(
            name: "AttacheTracingTests",
            dependencies: ["AttacheTracing", .product(name: "Tracing", package: "swift-distributed-tracing")]
        ),
        .testTarget(
            name: "AttacheQueueWorkerTests",
            dependencies: ["AttacheHTTPKit", "AttacheQueueWorker", "Attache", "AttacheEnrichment", "AttacheHTTPService", "AttacheRelay", "AttacheOperations", "AttacheOrigin", "AttacheTesting", "AttacheSupport", "AttacheTenants", "AttachePayload",
                           .product(name: "HummingbirdTesting", package: "hummingbird"),
                           .product(name: "HTTPTypes", package: "swift-http-types"),
                           .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                           .product(name: "Logging", package: "swift-log")]
        ),
        .testTarget(name: "AttacheSupportTests", dependencies: ["AttacheSupport", "AttacheTesting"]),
        .testTarget(name: "AttacheTenantsTests", dependencies: ["AttacheTenants", "Attache", "AttacheEnrichment", "AttacheFetch", "AttacheMedia", "AttacheSupport", "AttacheTesting",
                                                                .product(name: "Logging", package: "swift-log"),
                                                                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")]),
        .testTarget(name: "AttacheStoreTests", dependencies: ["AttacheStore", "AttacheFetch", "AttacheSupport", "AttacheTesting", "AttacheTestTraits"]),
        .testTarget(
            name: "AttacheCommandLineTests",
            // Attache directly: its types (Enrichment.Configuration) are laid out in these tests, and an
            // incremental build only recompiles them when it sees the dependency.
            dependencies: [
                "AttacheCommandLine", "Attache", "AttacheEnrichment", "AttacheFetch", "AttachePayload",
                .product(name: "ArgumentParser", package: "swift-argument-parser"), .product(name: "Configuration", package: "swift-configuration"),
            ]
        ),
        .testTarget(name: "AttacheFetchTests", dependencies: ["AttacheFetch", "AttacheOrigin", "AttacheTesting"]),
        .testTarget(name: "AttacheMediaTests", dependencies: ["AttacheMedia", "AttacheTesting", "AttacheTestTraits"]),
        // The helpers (attache-decode and the probe) are built before the tests that start them.
        .testTarget(
            name: "AttacheIsolationTests",
            dependencies: [
                "AttacheIsolation", "AttacheDecoderMain", "AttacheDecoderProbe", "AttacheMedia", "AttacheTesting", "AttacheTestTraits",
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ]
        ),
        .testTarget(
            name: "AttacheTests",
            dependencies: ["Attache", "AttacheEnrichment", "AttacheIsolation", "AttacheBatch", "AttacheTimeline", "AttacheOrigin", "AttacheTesting", "AttacheTestTraits", .product(name: "Logging", package: "swift-log")]
        ),
        .testTarget(
            name: "AttacheRelayTests",
            dependencies: ["AttacheHTTPKit", 
                "AttacheRelay", "AttacheTenants", "Attache", "AttacheEnrichment", "AttacheFetch", "AttacheOperations", "AttacheOrigin", "AttacheSupport", "AttacheTesting",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdHTTP2", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "AttacheLabTests",
            dependencies: ["AttacheHTTPKit", 
                "AttacheLab", "Attache", "AttacheEnrichment", "AttacheOrigin", "AttachePayload", "AttacheSupport", "AttacheTesting", "AttacheTimeline",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "AttacheHTTPServiceTests",
            dependencies: ["AttacheHTTPKit", 
                "AttacheHTTPService", "AttacheOperations", "AttacheOrigin", "AttacheTesting", "AttacheTestTraits", "AttacheSupport",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
    ]
)
