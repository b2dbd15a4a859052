// Probing and poster frames with FFmpeg (libavformat, libavcodec, libswscale, libavutil).
// FFmpeg never opens a URL or a file name here: it reads the bytes it is given through a custom
// AVIOContext, with the demuxer named by the caller's own sniffing, a format whitelist, no
// protocols at all, no mov drefs, small probe limits, and an interrupt callback.
#ifndef ATTACHE_VIDEO_H
#define ATTACHE_VIDEO_H
#include <stddef.h>
#include <stdint.h>
#include "attache_codecs.h"

typedef struct {
    char container[32];
    char video_codec[32];
    char audio_codec[32];
    int width;            // coded size, before rotation
    int height;
    int rotation;         // degrees clockwise to display upright: 0, 90, 180 or 270
    double duration;      // seconds, 0 if unknown
    double frame_rate;
    int64_t bit_rate;
    int has_video;
    int has_audio;
    int has_cover;        // an attached picture (cover art)
    int streams;
    int channels;         // of the first audio stream
    int sample_rate;
} attache_media_facts;

typedef struct {
    const char *demuxer;  // FFmpeg short name: mov, avi, mpeg, mpegts, mp3, wav, aiff, matroska
    int64_t max_pixels;   // per frame, enforced by the decoder
    int max_streams;
    attache_abort_fn abort_fn;
    void *abort_context;
    char message[160];
} attache_media_options;

typedef struct attache_media attache_media;

/// Loads FFmpeg's libraries now rather than at the first file (the decoder helper does, before its
/// sandbox forbids opening them). 1 on success; 0 with a message.
int attache_video_load(char *message, size_t size);

/// Opens and probes; on success `*out` must be closed with attache_media_close.
attache_status attache_media_open(const uint8_t *data, size_t length, attache_media_options *options,
                                  attache_media **out, attache_media_facts *facts);
/// A frame near `seconds` (negative: cover art if any, else the default time chosen by the caller),
/// scaled so its longest edge is at most `max_edge`, as RGB. `exact` decodes forward to the first
/// frame at or after the time (at most `max_frames`, else the keyframe); otherwise the keyframe at
/// or before it. `*shown_at` gets the chosen frame's time.
attache_status attache_media_poster(attache_media *media, double seconds, int exact, int max_frames, int max_edge,
                                    attache_image *out, double *shown_at);
void attache_media_close(attache_media *media);

// MP4 out: H.264 and AAC as iOS and Android play them, made in memory (the muxer's second pass
// for +faststart reads the bytes back from memory too, never from a file).

typedef enum {
    ATTACHE_STREAM_DROP = 0,
    ATTACHE_STREAM_COPY = 1,    // packets as they are (a remux)
    ATTACHE_STREAM_ENCODE = 2   // decoded and encoded again: H.264 or AAC
} attache_stream_mode;

typedef struct {
    int video;              // attache_stream_mode of the first video stream
    int audio;              // of the first audio stream
    int width, height;      // what H.264 is encoded at (even numbers)
    int crf;                // H.264 quality, capped by the VBV below
    int64_t max_rate;       // bits/s; with buf_size the bound that keeps the file under its target
    int64_t buf_size;       // bits
    double max_fps;         // a frame sooner than 1/max_fps after the last one kept is dropped
    double frame_rate;      // the rate the encoder plans for (its rate control and VBV); 0: max_fps
    int audio_rate;         // AAC bits/s
    int sample_rate;
    int channels;           // 1 or 2
    double max_seconds;     // keep at most this much from the start (0: all of it)
    double limit_seconds;   // a packet this far past the start refuses the file (ATTACHE_ERR_LIMITS),
                            // whatever its header declared or left out (0: no limit)
    int64_t max_bytes;      // the output may not grow past this
    int threads;            // encoder and decoder threads (0: as many as cores)
    const char *preset;     // x264's speed preset
} attache_transcode_plan;

typedef struct {
    uint8_t *data;          // malloc'd; attache_transcoded_free
    size_t length;
    double duration;        // seconds written
    int width, height;      // of the video written (0 without video)
    int64_t video_frames;
    int loops;              // times an animation is written one after the other (0 or 1: once)
    char video_encoder[32]; // "copy", "libx264", ... ("" without video)
    char audio_encoder[32];
} attache_transcoded;

/// The H.264 encoder FFmpeg has here, by name, in `name` ("" and 0 when there is none).
int attache_h264_encoder(char *name, size_t size);

/// Writes the opened media as MP4 (or M4A, audio alone) by `plan`. The messages go to the
/// options the media was opened with.
attache_status attache_media_transcode(attache_media *media, const attache_transcode_plan *plan, attache_transcoded *out);
void attache_transcoded_free(attache_transcoded *out);

/// Frames the caller decoded (an animation), each shown for its time, as an H.264 MP4 without
/// sound. Every frame is plan->width x plan->height, RGB or RGBA.
typedef struct attache_movie_writer attache_movie_writer;
attache_status attache_movie_writer_open(const attache_transcode_plan *plan, attache_media_options *options, attache_movie_writer **out);
attache_status attache_movie_writer_add(attache_movie_writer *writer, const attache_image *frame, int milliseconds);
/// `play_seconds`: an animation shorter than this is written again after itself until it plays
/// at least this long (as it would loop), while the bytes stay within the target.
attache_status attache_movie_writer_finish(attache_movie_writer *writer, double play_seconds, attache_transcoded *out);
void attache_movie_writer_free(attache_movie_writer *writer);
#endif
