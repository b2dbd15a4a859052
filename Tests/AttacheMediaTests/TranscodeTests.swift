import AttacheSupport
import AttacheTesting
import AttacheTestTraits
import Testing
@testable import AttacheMedia

/// Movies and sounds iOS would refuse come out as ones it plays: each output is probed again
/// (codec, duration, size under the target) and its frames decoded.
@Suite(.onTestThreads) struct TranscodeTests {
    let pipeline = VideoPipeline()

    func convert(_ name: String, _ settings: TranscodeSettings = TranscodeSettings()) throws -> (MovieRendition, ConvertedMovie) {
        let rendition = try pipeline.render(Fixtures.bytes(name), options: RenderOptions(transcode: settings), time: nil)
        let converted = try #require(rendition.converted, "\(name) was not converted")
        return (rendition, converted)
    }

    /// What the device gets, probed as a download would be, with a poster decoded from it.
    func played(_ converted: ConvertedMovie) throws -> MediaFacts {
        let facts = try pipeline.probe(converted.bytes)
        #expect(facts.isSupported, "\(facts.unsupportedBecause ?? "")")
        if facts.hasVideo {
            let again = try pipeline.render(converted.bytes, options: RenderOptions(), time: max(0, facts.duration - 0.2))
            #expect(again.thumbnail != nil)
        }
        return facts
    }

    @Test(arguments: [("clip-vp9.webm", 2.0), ("clip-av1.webm", 1.0)])
    func webMBecomesH264AndAAC(_ name: String, _ seconds: Double) throws {
        let (rendition, converted) = try convert(name)
        #expect(converted.method == .transcode)
        #expect(converted.format == .mp4)
        #expect(converted.videoEncoder == VideoPipeline.h264Encoder())
        #expect(converted.audioEncoder == "aac")
        #expect(rendition.thumbnail != nil)
        let facts = try played(converted)
        #expect(facts.format == .mp4)
        #expect(facts.videoCodec == "h264")
        #expect(facts.audioCodec == "aac")
        #expect((facts.width, facts.height) == (320, 180))
        #expect(abs(facts.duration - seconds) < 0.15)
        #expect(converted.bytes.count <= TranscodeSettings().movieBytes)
        // The index is at the front (+faststart): a player starts before the whole file is in.
        #expect(String(decoding: converted.bytes[4..<8], as: UTF8.self) == "ftyp")
        let moov = converted.bytes.firstRange(of: Array("moov".utf8))?.lowerBound ?? .max
        let mdat = converted.bytes.firstRange(of: Array("mdat".utf8))?.lowerBound ?? -1
        #expect(moov < mdat)
    }

    @Test(arguments: [("clip-h264.mkv", "h264", "aac"), ("clip-hevc.mkv", "hevc", nil as String?)])
    func streamsThatFitAreCopied(_ name: String, _ video: String, _ audio: String?) throws {
        let (_, converted) = try convert(name)
        #expect(converted.method == .remux)
        #expect(converted.videoEncoder == "copy")
        let facts = try played(converted)
        #expect(facts.videoCodec == video)
        #expect(facts.audioCodec == audio)
        if video == "hevc" {
            // iOS plays HEVC in MP4 only as hvc1 (the sample is hev1 in Matroska).
            #expect(converted.bytes.firstRange(of: Array("hvc1".utf8)) != nil)
            #expect(converted.bytes.firstRange(of: Array("hev1".utf8)) == nil)
        }
    }

    @Test(arguments: [("voice.opus", 3.0), ("sound.ogg", 2.0), ("sound.flac", 1.0)])
    func soundsBecomeAACInM4A(_ name: String, _ seconds: Double) throws {
        let (rendition, converted) = try convert(name)
        #expect(rendition.facts.kind == .audio)
        #expect(converted.format == .m4a)
        #expect(converted.uti == "public.mpeg-4-audio")
        let facts = try played(converted)
        #expect(facts.format == .m4a)
        #expect(facts.audioCodec == "aac")
        #expect(!facts.hasVideo)
        #expect(abs(facts.duration - seconds) < 0.1)
    }

    @Test func aSoundOverItsTargetIsEncodedUnderIt() throws {
        // The WAV is 88 KB: with a 40 KB target, AAC at a lower rate, all two seconds of it.
        let settings = TranscodeSettings(soundBytes: 40_000)
        let (_, converted) = try convert("sound.wav", settings)
        #expect(converted.bytes.count <= 40_000)
        #expect(converted.keptSeconds == nil)
        let facts = try played(converted)
        #expect(abs(facts.duration - 2) < 0.1)
    }

    @Test func aSupportedFileUnderItsCapIsLeftAlone() throws {
        for name in ["clip.mp4", "sound.m4a", "sound.mp3"] {
            let rendition = try pipeline.render(Fixtures.bytes(name), options: RenderOptions(transcode: TranscodeSettings()), time: nil)
            #expect(rendition.converted == nil, "\(name)")
        }
    }

    @Test func whatCannotFitWholeIsCutAndSaysSo() throws {
        // 60 KB cannot hold 2 s of watchable video (250 kb/s at least): the first second is kept.
        let settings = TranscodeSettings(movieBytes: 60_000, keepSeconds: 1)
        let (_, converted) = try convert("clip-vp9.webm", settings)
        #expect(converted.keptSeconds == 1)
        #expect(converted.bytes.count <= 60_000)
        let facts = try played(converted)
        #expect(abs(facts.duration - 1) < 0.15)
    }

    @Test func aMovieOverItsTargetIsMadeSmaller() throws {
        // clip-h264.mkv copies as it is; under a 30 KB target it must be encoded again, smaller.
        let (_, converted) = try convert("clip-h264.mkv", TranscodeSettings(movieBytes: 30_000, keepSeconds: 30))
        #expect(converted.method == .transcode)
        #expect(converted.bytes.count <= 30_000)
        _ = try played(converted)
    }

    /// A GIF over the image cap (a 14 MB one, here one over a cap a third its size) and animations
    /// iOS does not show become an H.264 movie of every frame, from the project's own decoders,
    /// the last frame lasting its own time too, looped to play at least 5 s; the thumbnail is the
    /// first frame.
    @Test(arguments: [("movie.webp", 20, 2.0, 0), ("animated.avif", 7, 0.7, 0), ("gif-of-movie.webp", 20, 2.0, 3)])
    func animationsBecomeMovies(_ name: String, _ frames: Int, _ seconds: Double, _ capDivisor: Int) throws {
        var bytes = Fixtures.bytes(name)
        var limits = MediaLimits()
        if name.hasPrefix("gif-of-") {
            // The animated WebP as a GIF, then a cap it is over.
            bytes = try #require(try ImagePipeline().render(Fixtures.bytes("movie.webp"), header: ImagePipeline().inspect(Fixtures.bytes("movie.webp")),
                                                            options: RenderOptions()).display).bytes
            limits.imageBytes = bytes.count * 2 / 3
        }
        let pipeline = ImagePipeline(limits: limits)
        let rendition = try pipeline.render(bytes, header: pipeline.inspect(bytes), options: RenderOptions(transcode: TranscodeSettings()))
        let movie = try #require(rendition.display)
        let loops = Int((AnimationConverter.playsAtLeast / seconds).rounded(.up))
        #expect(movie.format == .mp4)
        #expect(movie.frames == frames * loops)
        #expect(rendition.convertedFrom == rendition.header.format)
        #expect(rendition.thumbnail.format == .jpeg)
        let facts = try played(ConvertedMovie(bytes: movie.bytes, format: .mp4, method: .transcode, duration: 0))
        #expect(facts.videoCodec == "h264")
        #expect(abs(facts.duration - seconds * Double(loops)) < 0.01, "\(facts.duration) s")
        #expect(movie.bytes.count < bytes.count || capDivisor == 0)
        // Beside a WebP's or AVIF's movie, a GIF copy within the image cap, every frame; a GIF
        // over the cap has none.
        if name.hasPrefix("gif-of-") {
            #expect(rendition.gif == nil)
        } else {
            let gif = try #require(rendition.gif)
            #expect(gif.format == .gif && gif.frames == frames)
            #expect(gif.bytes.count <= limits.imageBytes)
            #expect(try ImagePipeline().inspect(gif.bytes).frames == frames)
        }
    }

    /// `attache convert` writes the movie alone.
    @Test func aMovieAloneWhenNoCopyIsWanted() throws {
        let bytes = Fixtures.bytes("animated.avif")
        var options = RenderOptions(transcode: TranscodeSettings())
        options.keepsGIFCopy = false
        let rendition = try ImagePipeline().render(bytes, header: ImagePipeline().inspect(bytes), options: options)
        #expect(rendition.display?.format == .mp4)
        #expect(rendition.gif == nil)
    }

    /// Loops stop short of the target: a movie that would not fit looped eight times is looped
    /// fewer times, whole loops only.
    @Test func loopsStayWithinTheTarget() throws {
        let bytes = Fixtures.bytes("animated.avif")
        let pipeline = ImagePipeline()
        let rendition = try pipeline.render(bytes, header: pipeline.inspect(bytes),
                                            options: RenderOptions(transcode: TranscodeSettings(movieBytes: 5_000)))
        let movie = try #require(rendition.display)
        #expect(movie.bytes.count <= 5_000)
        #expect(movie.frames % 7 == 0 && movie.frames > 7 && movie.frames < 56, "\(movie.frames) frames")
        let facts = try played(ConvertedMovie(bytes: movie.bytes, format: .mp4, method: .transcode, duration: 0))
        #expect(abs(facts.duration - 0.1 * Double(movie.frames)) < 0.01, "\(facts.duration) s")
    }

    @Test func withoutSettingsWebMIsStillRefused() throws {
        #expect { try pipeline.render(Fixtures.bytes("clip-vp9.webm"), options: RenderOptions(), time: nil) } throws: {
            ($0 as? MediaError)?.code == .unsupportedType
        }
    }

    // MARK: hostile files: a clear reason within the limits, never a hang

    @Test func aThousandFramesASecondAreThinnedToSixty() throws {
        let (_, converted) = try convert("hostile/100k-frames.mkv", TranscodeSettings(keepSeconds: 5))
        // H.264 in Matroska would be copied as it is, but not at 1000 frames a second, 2 pixels
        // wide: it is encoded again at 60 at most, 16 pixels a side at least.
        #expect(converted.method == .transcode)
        #expect(converted.bytes.count <= TranscodeSettings().movieBytes)
        let facts = try played(converted)
        #expect(facts.videoCodec == "h264")
        #expect(facts.width >= 16 && facts.height >= 16)
        #expect(try #require(facts.frameRate) <= 61)
    }

    @Test func framesThatStopDecodingAreAnError() throws {
        #expect { try convert("hostile/noise-after-1s.webm") } throws: { error in
            let error = error as? MediaError
            return error?.code == .invalidMedia && error?.message.contains("could be read and decoded") == true
        }
    }

    @Test func twoHundredFiftyFiveChannelsAreRefused() throws {
        #expect { try convert("hostile/255-channels.wav") } throws: { error in
            let error = error as? MediaError
            return error?.code == .limitsExceeded && error?.message.contains("255") == true
        }
    }

    @Test func aDeclaredThirtyHoursIsOverTheLimit() throws {
        #expect { try convert("hostile/30-hours.mp4") } throws: { ($0 as? MediaError)?.code == .limitsExceeded }
    }

    /// A live stream declares no duration: the limit holds on its packets' times, whether they
    /// are copied (H.264 in Matroska) or decoded and encoded again (VP9).
    @Test(arguments: ["hostile/live-700s.mkv", "hostile/live-700s-vp9.webm"])
    func anUndeclaredLengthPastTheLimitIsRefusedWhileReading(_ name: String) throws {
        #expect { try convert(name) } throws: { error in
            let error = error as? MediaError
            return error?.code == .limitsExceeded && error?.message.contains("past the 600 s limit") == true
        }
    }

    /// The cost of making a movie of an animation is known from its header: 160 frames of
    /// 2000x2000 (17 KB) are refused before a frame is decoded.
    @Test func anAnimationOfTooManyPixelsIsNotMadeAMovie() throws {
        let start = ContinuousClock.now
        let images = ImagePipeline(limits: MediaLimits())
        let bytes = Fixtures.bytes("hostile/160-frames-2000px.webp")
        #expect {
            try images.render(bytes, header: try images.inspect(bytes, format: nil), options: RenderOptions(transcode: TranscodeSettings()))
        } throws: { error in
            let error = error as? MediaError
            return error?.code == .limitsExceeded && error?.message.contains("640 million pixels") == true
        }
        #expect(start.duration(to: .now) < .seconds(1), "refused from the header, not after decoding")
    }

    /// A conversion's cost is known from the header: two minutes of 4K at 30 frames a second are
    /// refused before a frame is decoded; two seconds of the same are converted.
    @Test func aConversionsCostIsBoundedFromItsHeader() throws {
        var facts = try pipeline.probe(Fixtures.bytes("clip-vp9.webm"))
        facts.width = 3840
        facts.height = 2160
        func raw(_ seconds: Double) -> RawMediaFacts {
            RawMediaFacts(container: "matroska,webm", videoCodec: "vp9", audioCodec: nil, width: 3840, height: 2160, rotation: 0,
                          duration: seconds, frameRate: 30, bitRate: nil, hasVideo: true, hasAudio: false, hasCover: false,
                          streams: 1, channels: 0, sampleRate: 0)
        }
        facts.duration = 120
        #expect { try TranscodePlanner.plan(raw(120), facts: facts, size: 1_000_000, settings: TranscodeSettings()) } throws: { error in
            let error = error as? MediaError
            return error?.code == .limitsExceeded && error?.message.contains("billion pixels to decode") == true
        }
        facts.duration = 2
        #expect(try TranscodePlanner.plan(raw(2), facts: facts, size: 1_000_000, settings: TranscodeSettings())?.method == .transcode)
    }

    @Test func aVideoTrackWithoutFramesIsNotAMovie() throws {
        #expect { try convert("hostile/empty-video-track.webm") } throws: { ($0 as? MediaError)?.code == .invalidMedia }
    }

    @Test func cancellingStopsATranscode() throws {
        let abort = AbortFlag()
        abort.set()
        #expect {
            try pipeline.render(Fixtures.bytes("clip-vp9.webm"), options: RenderOptions(transcode: TranscodeSettings()), time: nil, abort: abort)
        } throws: { $0 is CancellationError }
    }
}
