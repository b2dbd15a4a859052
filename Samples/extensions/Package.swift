// swift-tools-version:6.0
// The extensions an NSE author starts from, as a package of their own that depends on Attache the
// way a user's package would (here by path; elsewhere by its URL and a version). `make test` builds
// and tests it.
import PackageDescription

let package = Package(
    name: "AttacheExtensionSamples",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "TitleRewriter", targets: ["TitleRewriter"]),
        .library(name: "Decrypt", targets: ["Decrypt"]),
        .library(name: "ContentFetch", targets: ["ContentFetch"]),
    ],
    dependencies: [
        .package(name: "Attache", path: "../.."),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
    ],
    targets: [
        // Changing the text: prefixes the title, iOS-shaped (a content handler).
        .target(name: "TitleRewriter", dependencies: [.product(name: "Attache", package: "Attache")]),
        // Decrypting content: an AES-GCM sealed alert, opened with a key chosen by its id.
        .target(
            name: "Decrypt",
            dependencies: [.product(name: "Attache", package: "Attache"), .product(name: "Crypto", package: "swift-crypto")]
        ),
        // Fetching content: the alert's text from the app's own server, by message id.
        .target(name: "ContentFetch", dependencies: [.product(name: "Attache", package: "Attache")]),
        .testTarget(
            name: "ExtensionSampleTests",
            dependencies: [
                "TitleRewriter", "Decrypt", "ContentFetch",
                .product(name: "Attache", package: "Attache"),
                .product(name: "AttacheTesting", package: "Attache"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
    ]
)
