// What video.c (probing, posters) and transcode.c (MP4 out) share of an opened file.
#ifndef ATTACHE_MEDIA_H
#define ATTACHE_MEDIA_H
#include "ffmpeg_loader.h"
#include "attache_video.h"

struct attache_media {
    const uint8_t *data;
    size_t length;
    int64_t position;
    AVFormatContext *format;
    AVIOContext *io;
    attache_media_options *options;
    int video_stream;
    int consumed;   // packets were read past the header (a sound measured): seek back to read again
};

/// The options' abort function, as FFmpeg's interrupt callback (opaque: the attache_media).
int attache_media_interrupted(void *opaque);
/// Puts FFmpeg's text for `error` in the options' message and maps it to a status.
attache_status attache_media_failure(attache_media_options *o, int error, const char *what);
/// The frame's pixel format, the deprecated full-range "J" formats named as their plain ones, and
/// whether its samples are full range.
enum AVPixelFormat attache_media_frame_format(const AVFrame *f, int *full_range);
attache_status attache_media_open_decoder(attache_media *m, AVStream *st, int threads, AVCodecContext **out);
#endif
