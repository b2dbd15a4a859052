@testable import AttacheEnrichment
import AttacheMedia
import Testing

/// A record's name is the digest of the key as reflection spells it, which replicas agree on; the
/// service spells it without reflecting every key, and the two spellings are the same.
@Suite struct SharedResultsTests {
    @Test func theKeyIsSpeltAsReflectionSpellsIt() {
        var thumbnailOnly = RenderOptions()
        thumbnailOnly.makesDisplayCopy = false
        let keys = [
            RenderKey(namespace: "", url: "https://cdn.example.com/a.jpg", render: RenderOptions(), thumbnailTime: nil,
                      posterMode: .fast, limits: nil, urlBase: "https://media.example.com/attache"),
            RenderKey(namespace: "tenant \"a\"\\", url: "https://x.example/é?q=\"1\"&b=\\n\u{0}", render: thumbnailOnly, thumbnailTime: 2.5,
                      posterMode: .exact, limits: MediaLimits(), urlBase: "file:///tmp/m"),
            RenderKey(namespace: "b", url: "", render: RenderOptions(transcode: TranscodeSettings()), thumbnailTime: 0,
                      posterMode: .fast, limits: nil, urlBase: ""),
        ]
        for key in keys + keys {  // the second time from what was kept
            #expect(SharedResults.spelling(of: key) == String(reflecting: key))
        }
    }
}
