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
#endif
