import AttachePayload
import AttacheSupport
import AttacheTesting
import AttacheTestTraits
import Testing
@testable import AttacheMedia

@Suite(.onTestThreads) struct VideoPipelineTests {
    let pipeline = VideoPipeline()

    @Test(arguments: [
        ("clip.mp4", MediaKind.video, "h264" as String?, "aac" as String?, 320, 240, 0),
        ("clip-moov-at-end.mp4", .video, "h264", "aac", 320, 240, 0),
        ("portrait.mp4", .video, "h264", nil, 240, 320, 270),
        ("hevc.mp4", .video, "hevc", nil, 320, 240, 0),
        ("sound.m4a", .audio, nil, "aac", 0, 0, 0),
        ("sound.mp3", .audio, nil, "mp3", 0, 0, 0),
    ])
    func probesEachSample(_ name: String, _ kind: MediaKind, _ video: String?, _ audio: String?, _ width: Int, _ height: Int, _ rotation: Int) throws {
        let facts = try pipeline.probe(Fixtures.bytes(name))
        #expect(facts.kind == kind)
        #expect(facts.videoCodec == video)
        #expect(facts.audioCodec == audio)
        #expect(facts.rotation == rotation)
        if kind == .video {
            #expect((facts.width, facts.height) == (width, height))
            #expect(facts.frameRate == 24)
        }
        #expect(facts.duration > 1.9 && facts.duration < 3.1)
        #expect(facts.isSupported)
    }

    @Test func utiFollowsTheContainer() throws {
        #expect(try pipeline.probe(Fixtures.bytes("clip.mp4")).uti == "public.mpeg-4")
        #expect(try pipeline.probe(Fixtures.bytes("sound.m4a")).uti == "com.apple.m4a-audio")
        #expect(try pipeline.probe(Fixtures.bytes("sound.mp3")).uti == "public.mp3")
    }

    @Test func webmIsRecognisedButRefused() throws {
        let facts = try pipeline.probe(Fixtures.bytes("clip.webm"))
        #expect(facts.videoCodec == "vp9")
        #expect(!facts.isSupported)
        #expect { try pipeline.render(Fixtures.bytes("clip.webm"), options: RenderOptions(), time: nil) } throws: {
            ($0 as? MediaError)?.code == .unsupportedType
        }
    }

    @Test func aPlaylistNamedMP4IsNeverOpened() {
        // Its one entry points at the metadata address: it must not be read as a playlist at all.
        #expect { try pipeline.probe(Fixtures.bytes("playlist.mp4")) } throws: { ($0 as? MediaError)?.code == .unsupportedType }
    }

    /// The sample's Info header promises 2.04 s whatever follows it: half the file is reported
    /// with the duration its packets hold.
    @Test func aCutSoundReportsTheDurationItHolds() throws {
        let sound = Fixtures.bytes("sound.mp3")
        let whole = try pipeline.probe(sound)
        let half = try pipeline.probe(Array(sound.prefix(sound.count / 2)))
        #expect(whole.duration > 1.9)
        #expect(half.duration > 0.7 && half.duration < 1.2)
        #expect { try pipeline.probe(Array(sound.prefix(300))) } throws: { ($0 as? MediaError)?.code == .invalidMedia }
    }

    @Test func aTruncatedMP4IsInvalid() {
        let clip = Fixtures.bytes("clip.mp4")
        for cut in [2_000, 40_000, clip.count - 100] {
            #expect { try pipeline.probe(Array(clip.prefix(cut))) } throws: { ($0 as? MediaError)?.code == .invalidMedia }
        }
        // Moov at the end: cutting it off leaves no index at all.
        let tail = Fixtures.bytes("clip-moov-at-end.mp4")
        #expect { try pipeline.probe(Array(tail.prefix(tail.count - 2_000))) } throws: { ($0 as? MediaError)?.code == .invalidMedia }
    }

    @Test func posterFramesHaveTheDisplayedShape() throws {
        let clip = try pipeline.render(Fixtures.bytes("clip.mp4"), options: RenderOptions(), time: 2)
        #expect((clip.thumbnail?.width, clip.thumbnail?.height) == (320, 240))
        #expect(clip.thumbnailTime == 2)  // a keyframe every second
        let portrait = try pipeline.render(Fixtures.bytes("portrait.mp4"), options: RenderOptions(), time: nil)
        #expect((portrait.thumbnail?.width, portrait.thumbnail?.height) == (240, 320))
        let hevc = try pipeline.render(Fixtures.bytes("hevc.mp4"), options: RenderOptions(thumbnailSize: 160), time: 0.5)
        #expect((hevc.thumbnail?.width, hevc.thumbnail?.height) == (160, 120))
        #expect(hevc.thumbnail.map { Sniffer.sniff($0.bytes) } == .jpeg)
    }

    @Test func fastTakesTheKeyframeExactTheFrameAtTheTime() throws {
        let bytes = Fixtures.bytes("gop10s-1080p.mp4")  // one keyframe every 10 s
        let fast = try pipeline.render(bytes, options: RenderOptions(), time: 5)
        #expect(fast.thumbnailTime == 0)
        #expect((fast.thumbnail?.width, fast.thumbnail?.height) == (320, 180))
        let exact = try VideoPipeline(posterMode: .exact).render(bytes, options: RenderOptions(), time: 5)
        #expect(abs((exact.thumbnailTime ?? 0) - 5) < 0.05)
        // Over its frame budget, exact mode settles for the keyframe.
        let capped = try VideoPipeline(posterMode: .exact, maxExactFrames: 10).render(bytes, options: RenderOptions(), time: 5)
        #expect(capped.thumbnailTime == 0)
    }

    @Test func defaultTimeIsOneSecondOrATenthOfShortClips() {
        #expect(pipeline.defaultTime(60) == 1)
        #expect(pipeline.defaultTime(3) == 0.30000000000000004 || abs(pipeline.defaultTime(3) - 0.3) < 1e-9)
        #expect(pipeline.clamp(99, duration: 3) < 3)
    }

    @Test func soundsHaveNoThumbnail() throws {
        let sound = try pipeline.render(Fixtures.bytes("sound.mp3"), options: RenderOptions(), time: nil)
        #expect(sound.thumbnail == nil)
        #expect(sound.facts.kind == .audio)
    }

    @Test func durationAndPixelLimits() {
        let short = VideoPipeline(limits: MediaLimits(maxDuration: 1))
        #expect { try short.render(Fixtures.bytes("clip.mp4"), options: RenderOptions(), time: nil) } throws: {
            ($0 as? MediaError)?.code == .limitsExceeded
        }
        let small = VideoPipeline(limits: MediaLimits(maxVideoPixels: 320 * 200))
        #expect { try small.render(Fixtures.bytes("clip.mp4"), options: RenderOptions(), time: nil) } throws: {
            ($0 as? MediaError)?.code == .limitsExceeded
        }
    }

    @Test func anAbortStopsFFmpeg() {
        let abort = AbortFlag()
        abort.set()
        #expect(throws: CancellationError.self) {
            try VideoPipeline(posterMode: .exact).render(Fixtures.bytes("gop10s-1080p.mp4"), options: RenderOptions(), time: 9, abort: abort)
        }
    }

    @Test func corruptMoviesAreErrorsNotCrashes() {
        var bytes = Fixtures.bytes("clip.mp4")
        for i in stride(from: 4_000, to: bytes.count - 200, by: 997) { bytes[i] ^= 0xA5 }
        do {
            _ = try pipeline.render(bytes, options: RenderOptions(), time: 1)
        } catch let error as MediaError {
            #expect([MediaError.Code.invalidMedia, .unsupportedType].contains(error.code))
        } catch {
            Issue.record("unexpected \(error)")
        }
    }
}
