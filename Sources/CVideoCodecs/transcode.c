#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "media.h"

// ---- The output: a growing buffer FFmpeg writes, seeks in and (for +faststart) reads back ----

typedef struct {
    uint8_t *data;
    size_t length, capacity;
    int64_t position;
    int64_t max;
    int over;       // a write went past max
} buffer;

static int buffer_write(void *opaque, uint8_t *bytes, int size) {
    buffer *b = opaque;
    int64_t end = b->position + size;
    if (b->max > 0 && end > b->max) {
        b->over = 1;
        return AVERROR(EFBIG);
    }
    if ((size_t)end > b->capacity) {
        size_t capacity = b->capacity ? b->capacity : 1 << 20;
        while (capacity < (size_t)end) capacity *= 2;
        uint8_t *grown = realloc(b->data, capacity);
        if (!grown) return AVERROR(ENOMEM);
        b->data = grown;
        b->capacity = capacity;
    }
    if (b->position > (int64_t)b->length) memset(b->data + b->length, 0, (size_t)(b->position - (int64_t)b->length));
    memcpy(b->data + b->position, bytes, (size_t)size);
    b->position = end;
    if ((size_t)end > b->length) b->length = (size_t)end;
    return size;
}

static int64_t buffer_seek_to(int64_t length, int64_t *position, int64_t offset, int whence) {
    int64_t target;
    switch (whence & ~AVSEEK_FORCE) {
        case AVSEEK_SIZE: return length;
        case SEEK_SET: target = offset; break;
        case SEEK_CUR: target = *position + offset; break;
        case SEEK_END: target = length + offset; break;
        default: return -1;
    }
    if (target < 0) return -1;
    *position = target;
    return target;
}

static int64_t buffer_seek(void *opaque, int64_t offset, int whence) {
    buffer *b = opaque;
    return buffer_seek_to((int64_t)b->length, &b->position, offset, whence);
}

// The muxer's second pass (moving the index to the front) opens "the file" again to read it.
typedef struct {
    buffer *source;
    int64_t position;
} reader;

static int reader_read(void *opaque, uint8_t *bytes, int size) {
    reader *r = opaque;
    int64_t left = (int64_t)r->source->length - r->position;
    if (left <= 0) return AVERROR_EOF;
    int n = left < size ? (int)left : size;
    memcpy(bytes, r->source->data + r->position, (size_t)n);
    r->position += n;
    return n;
}

static int64_t reader_seek(void *opaque, int64_t offset, int whence) {
    reader *r = opaque;
    return buffer_seek_to((int64_t)r->source->length, &r->position, offset, whence);
}

static int open_again(AVFormatContext *s, AVIOContext **pb, const char *url, int flags, AVDictionary **options) {
    (void)url; (void)options;
    if (flags & AVIO_FLAG_WRITE) return AVERROR(EPERM);
    reader *r = calloc(1, sizeof *r);
    uint8_t *bytes = FF(av_malloc)(65536);
    if (!r || !bytes) { free(r); FF(av_free)(bytes); return AVERROR(ENOMEM); }
    r->source = s->opaque;
    *pb = FF(avio_alloc_context)(bytes, 65536, 0, r, reader_read, NULL, reader_seek);
    if (!*pb) { free(r); FF(av_free)(bytes); return AVERROR(ENOMEM); }
    return 0;
}

static int close_again(AVFormatContext *s, AVIOContext *pb) {
    (void)s;
    free(pb->opaque);
    FF(av_freep)(&pb->buffer);
    FF(avio_context_free)(&pb);
    return 0;
}

typedef struct {
    AVFormatContext *mux;
    AVIOContext *io;
    buffer bytes;
    double end;     // seconds: where the latest packet written ends
} output;

/// Writes a packet (timed in its stream's time base), noting where it ends.
static int output_write(output *o, AVPacket *pkt) {
    const AVStream *st = o->mux->streams[pkt->stream_index];
    int64_t at = pkt->pts != AV_NOPTS_VALUE ? pkt->pts : pkt->dts;
    if (at != AV_NOPTS_VALUE) {
        double end = (double)(at + (pkt->duration > 0 ? pkt->duration : 0)) * av_q2d(st->time_base);
        if (end > o->end) o->end = end;
    }
    return FF(av_interleaved_write_frame)(o->mux, pkt);  // takes the packet's reference
}

/// `muxer`: "mp4", or "ipod" for a sound (M4A: the brand iOS takes as audio).
static attache_status output_open(output *o, const char *muxer, int64_t max_bytes, attache_media_options *options) {
    memset(o, 0, sizeof *o);
    o->bytes.max = max_bytes;
    int rc = FF(avformat_alloc_output_context2)(&o->mux, NULL, muxer, NULL);
    if (rc < 0) return attache_media_failure(options, rc, "mp4 muxer");
    uint8_t *io_buffer = FF(av_malloc)(65536);
    o->io = io_buffer ? FF(avio_alloc_context)(io_buffer, 65536, 1, &o->bytes, NULL, buffer_write, buffer_seek) : NULL;
    if (!o->io) { FF(av_free)(io_buffer); return ATTACHE_ERR_NOMEM; }
    o->mux->pb = o->io;
    o->mux->flags |= AVFMT_FLAG_CUSTOM_IO;
    o->mux->opaque = &o->bytes;
    o->mux->io_open = open_again;
    o->mux->io_close2 = close_again;
    return ATTACHE_OK;
}

static attache_status output_start(output *o, attache_media_options *options) {
    AVDictionary *settings = NULL;
    FF(av_dict_set)(&settings, "movflags", "+faststart", 0);
    int rc = FF(avformat_write_header)(o->mux, &settings);
    FF(av_dict_free)(&settings);
    return rc < 0 ? attache_media_failure(options, rc, "mp4 header") : ATTACHE_OK;
}

static attache_status output_error(output *o, attache_media_options *options, int rc, const char *what) {
    if (o->bytes.over) {
        snprintf(options->message, sizeof options->message, "the output grew past its %lld-byte target", (long long)o->bytes.max);
        return ATTACHE_ERR_LIMITS;
    }
    return attache_media_failure(options, rc, what);
}

/// Moves the bytes to `out` (on success) and frees the rest.
static void output_close(output *o, attache_transcoded *out) {
    if (out) {
        out->data = o->bytes.data;
        out->length = o->bytes.length;
        o->bytes.data = NULL;
    }
    free(o->bytes.data);
    if (o->io) {
        FF(av_freep)(&o->io->buffer);
        FF(avio_context_free)(&o->io);
    }
    if (o->mux) FF(avformat_free_context)(o->mux);
    memset(o, 0, sizeof *o);
}

// ---- Encoders ----

int attache_h264_encoder(char *name, size_t size) {
    char message[160];
    if (!attache_ffmpeg_load(message, sizeof message)) { snprintf(name, size, "%s", ""); return 0; }
    // libx264 when Debian's FFmpeg has it; openh264 otherwise; any other (hardware) H.264
    // encoder only as a last try, since most need a device the helper cannot open.
    static const char *names[] = { "libx264", "libopenh264" };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        if (FF(avcodec_find_encoder_by_name)(names[i])) { snprintf(name, size, "%s", names[i]); return 1; }
    }
    const AVCodec *any = FF(avcodec_find_encoder)(AV_CODEC_ID_H264);
    snprintf(name, size, "%s", any ? any->name : "");
    return any != NULL;
}

typedef struct {
    AVCodecContext *codec;
    AVStream *stream;
    AVFrame *frame;           // what is handed to the encoder
    struct SwsContext *sws;
    int64_t last_pts;         // in the encoder's time base
    double interval;          // ticks between frames at the most frames a second (0: no bound)
    double due;               // the time the next frame is due
    int64_t frames;
    // Frames whose time on screen the caller gave (an animation's): their packets carry it, so
    // the last frame lasts its own time rather than none. Packets leave the encoder up to its
    // lookahead later than their frames went in; a ring of the latest is enough.
    int64_t shown_pts[512], shown_for[512];
    unsigned shown;
    // Set to keep a reference to every packet written (to write them again, looped).
    int keeps;
    AVPacket **kept;
    size_t kept_count, kept_capacity;
    int64_t kept_bytes;
} video_encoder;

/// `source`: the stream being transcoded, whose colour tags are kept (its pixels keep their
/// matrix); NULL for RGB frames.
static attache_status video_encoder_open(video_encoder *v, output *o, const attache_transcode_plan *plan, AVRational time_base,
                                         const AVCodecParameters *source, attache_media_options *options) {
    memset(v, 0, sizeof *v);
    v->last_pts = AV_NOPTS_VALUE;
    char name[32];
    if (!attache_h264_encoder(name, sizeof name)) {
        snprintf(options->message, sizeof options->message, "this FFmpeg has no H.264 encoder");
        return ATTACHE_ERR_UNSUPPORTED;
    }
    const AVCodec *codec = FF(avcodec_find_encoder_by_name)(name);
    v->codec = codec ? FF(avcodec_alloc_context3)(codec) : NULL;
    v->frame = FF(av_frame_alloc)();
    if (!v->codec || !v->frame) return ATTACHE_ERR_NOMEM;
    AVCodecContext *c = v->codec;
    c->width = plan->width;
    c->height = plan->height;
    c->pix_fmt = AV_PIX_FMT_YUV420P;
    c->time_base = time_base;
    // x264 plans its rate control per frame at this rate; without it, it takes the time base's
    // (1000 a second for WebM), and spends its bits and time as if every frame were a millisecond.
    double rate = plan->frame_rate > 0 ? plan->frame_rate : plan->max_fps > 0 ? plan->max_fps : 30;
    c->framerate = (AVRational){ (int)(rate * 1000 + 0.5), 1000 };
    c->sample_aspect_ratio = (AVRational){ 1, 1 };
    c->color_range = AVCOL_RANGE_MPEG;
    // RGB frames are sRGB, made BT.601 YUV by libswscale.
    c->colorspace = source ? source->color_space : AVCOL_SPC_SMPTE170M;
    c->color_primaries = source ? source->color_primaries : AVCOL_PRI_BT709;
    c->color_trc = source ? source->color_trc : AVCOL_TRC_IEC61966_2_1;
    c->thread_count = plan->threads;
    c->rc_max_rate = plan->max_rate;
    c->rc_buffer_size = (int)(plan->buf_size > INT32_MAX ? INT32_MAX : plan->buf_size);
    if (o->mux->oformat->flags & AVFMT_GLOBALHEADER) c->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
    if (strcmp(name, "libx264") == 0) {
        FF(av_opt_set)(c->priv_data, "preset", plan->preset ? plan->preset : "veryfast", 0);
        FF(av_opt_set)(c->priv_data, "profile", "high", 0);
        char crf[16];
        snprintf(crf, sizeof crf, "%d", plan->crf);
        FF(av_opt_set)(c->priv_data, "crf", crf, 0);
    } else {
        c->bit_rate = plan->max_rate;
    }
    int rc = FF(avcodec_open2)(c, codec, NULL);
    if (rc < 0) return attache_media_failure(options, rc, name);
    v->stream = FF(avformat_new_stream)(o->mux, NULL);
    if (!v->stream) return ATTACHE_ERR_NOMEM;
    v->stream->time_base = time_base;
    rc = FF(avcodec_parameters_from_context)(v->stream->codecpar, c);
    if (rc < 0) return attache_media_failure(options, rc, "video stream");
    v->frame->format = c->pix_fmt;
    v->frame->width = c->width;
    v->frame->height = c->height;
    rc = FF(av_frame_get_buffer)(v->frame, 0);
    if (rc < 0) return attache_media_failure(options, rc, "frame");
    v->interval = plan->max_fps > 0 ? 1.0 / plan->max_fps / av_q2d(time_base) : 0;
    return ATTACHE_OK;
}

static void video_encoder_close(video_encoder *v) {
    for (size_t i = 0; i < v->kept_count; i++) FF(av_packet_free)(&v->kept[i]);
    free(v->kept);
    if (v->sws) FF(sws_freeContext)(v->sws);
    FF(av_frame_free)(&v->frame);
    FF(avcodec_free_context)(&v->codec);
}

/// The time on screen given for the frame at `pts`, or 0.
static int64_t shown_for(const video_encoder *v, int64_t pts) {
    unsigned n = v->shown < 512 ? v->shown : 512;
    for (unsigned i = 1; i <= n; i++) {
        unsigned at = (v->shown - i) % 512;
        if (v->shown_pts[at] == pts) return v->shown_for[at];
    }
    return 0;
}

/// A reference to a packet about to be written, for `v->kept`.
static attache_status keep(video_encoder *v, const AVPacket *pkt) {
    if (v->kept_count == v->kept_capacity) {
        size_t grown = v->kept_capacity ? v->kept_capacity * 2 : 256;
        AVPacket **kept = realloc(v->kept, grown * sizeof *kept);
        if (!kept) return ATTACHE_ERR_NOMEM;
        v->kept = kept;
        v->kept_capacity = grown;
    }
    AVPacket *copy = FF(av_packet_clone)(pkt);
    if (!copy) return ATTACHE_ERR_NOMEM;
    v->kept[v->kept_count++] = copy;
    v->kept_bytes += pkt->size;
    return ATTACHE_OK;
}

/// Sends the encoder's waiting packets to the muxer. `v`: the video encoder whose packets these
/// are (their shown times, the packets kept), or NULL.
static attache_status drain(AVCodecContext *c, AVStream *st, output *o, video_encoder *v, attache_media_options *options) {
    AVPacket *pkt = FF(av_packet_alloc)();
    if (!pkt) return ATTACHE_ERR_NOMEM;
    attache_status status = ATTACHE_OK;
    for (;;) {
        int rc = FF(avcodec_receive_packet)(c, pkt);
        if (rc == AVERROR(EAGAIN) || rc == AVERROR_EOF) break;
        if (rc < 0) { status = attache_media_failure(options, rc, "encode"); break; }
        if (v && pkt->duration <= 0 && v->shown > 0) pkt->duration = shown_for(v, pkt->pts);
        FF(av_packet_rescale_ts)(pkt, c->time_base, st->time_base);
        if (v && v->keeps && (status = keep(v, pkt)) != ATTACHE_OK) break;
        pkt->stream_index = st->index;
        rc = output_write(o, pkt);
        if (rc < 0) { status = output_error(o, options, rc, "write"); break; }
    }
    FF(av_packet_free)(&pkt);
    return status;
}

/// Scales `source` (any format and size) into the encoder's frame and encodes it at `pts`
/// (the encoder's time base); frames too close to the last one, or not after it, are dropped.
/// `shown`: how long the frame is on screen, when the caller knows (else 0); a dropped frame's
/// time goes to the frame before it.
static attache_status video_encode(video_encoder *v, output *o, const uint8_t *const *planes, const int *strides, int width, int height,
                                   enum AVPixelFormat format, enum AVColorSpace space, int full_range, int64_t pts, int64_t shown,
                                   attache_media_options *options) {
    // Frames are kept on a grid of due times (a tenth of a frame early is on time: timestamps
    // jitter); one that comes before its time is dropped, as is one not after the last kept.
    if (v->last_pts != AV_NOPTS_VALUE && (pts <= v->last_pts || (double)pts < v->due - v->interval * 0.1)) {
        if (shown > 0 && v->shown > 0) v->shown_for[(v->shown - 1) % 512] += shown;
        return ATTACHE_OK;
    }
    if (shown > 0) {
        v->shown_pts[v->shown % 512] = pts;
        v->shown_for[v->shown % 512] = shown;
        v->shown++;
    }
    v->due = (v->last_pts == AV_NOPTS_VALUE || (double)pts > v->due + v->interval ? (double)pts : v->due) + v->interval;
    v->sws = FF(sws_getCachedContext)(v->sws, width, height, format, v->codec->width, v->codec->height, AV_PIX_FMT_YUV420P,
                                      SWS_BICUBIC, NULL, NULL, NULL);
    if (!v->sws) {
        snprintf(options->message, sizeof options->message, "cannot convert %s", FF(av_get_pix_fmt_name)(format));
        return ATTACHE_ERR_UNSUPPORTED;
    }
    // Pixels keep their matrix: RGB becomes BT.601 YUV (libswscale's own conversion, and what the
    // stream is tagged with), YUV keeps its own (the stream carries the source's tags); only
    // full-range YUV is brought to the limited range H.264 players expect.
    int rgb = format == AV_PIX_FMT_RGB24 || format == AV_PIX_FMT_RGBA;
    if (!rgb && full_range) {
        const int *table = FF(sws_getCoefficients)(space == AVCOL_SPC_BT709 ? SWS_CS_ITU709 : SWS_CS_DEFAULT);
        FF(sws_setColorspaceDetails)(v->sws, table, 1, table, 0, 0, 1 << 16, 1 << 16);
    }
    int rc = FF(av_frame_make_writable)(v->frame);
    if (rc < 0) return attache_media_failure(options, rc, "frame");
    FF(sws_scale)(v->sws, planes, strides, 0, height, v->frame->data, v->frame->linesize);
    v->frame->pts = pts;
    v->last_pts = pts;
    rc = FF(avcodec_send_frame)(v->codec, v->frame);
    if (rc < 0) return attache_media_failure(options, rc, "encode");
    v->frames++;
    return drain(v->codec, v->stream, o, v, options);
}

typedef struct {
    AVCodecContext *codec;
    AVStream *stream;
    SwrContext *swr;
    AVAudioFifo *fifo;
    AVFrame *frame;
    int64_t samples;          // handed to the encoder
    int64_t max_samples;      // 0: no cut
    int in_rate, in_format;
    AVChannelLayout in_layout;
} audio_encoder;

static attache_status audio_encoder_open(audio_encoder *a, output *o, const attache_transcode_plan *plan, attache_media_options *options) {
    memset(a, 0, sizeof *a);
    if (plan->channels < 1 || plan->channels > 2 || plan->sample_rate <= 0) {
        snprintf(options->message, sizeof options->message, "%d channels at %d Hz is not a sound plan", plan->channels, plan->sample_rate);
        return ATTACHE_ERR_INVALID;
    }
    const AVCodec *codec = FF(avcodec_find_encoder_by_name)("aac");
    if (!codec) {
        snprintf(options->message, sizeof options->message, "this FFmpeg has no AAC encoder");
        return ATTACHE_ERR_UNSUPPORTED;
    }
    a->codec = FF(avcodec_alloc_context3)(codec);
    a->frame = FF(av_frame_alloc)();
    if (!a->codec || !a->frame) return ATTACHE_ERR_NOMEM;
    AVCodecContext *c = a->codec;
    c->sample_fmt = AV_SAMPLE_FMT_FLTP;
    c->sample_rate = plan->sample_rate;
    FF(av_channel_layout_default)(&c->ch_layout, plan->channels);
    c->bit_rate = plan->audio_rate;
    c->time_base = (AVRational){ 1, plan->sample_rate };
    if (o->mux->oformat->flags & AVFMT_GLOBALHEADER) c->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
    int rc = FF(avcodec_open2)(c, codec, NULL);
    if (rc < 0) return attache_media_failure(options, rc, "aac");
    a->stream = FF(avformat_new_stream)(o->mux, NULL);
    if (!a->stream) return ATTACHE_ERR_NOMEM;
    a->stream->time_base = c->time_base;
    rc = FF(avcodec_parameters_from_context)(a->stream->codecpar, c);
    if (rc < 0) return attache_media_failure(options, rc, "audio stream");
    a->fifo = FF(av_audio_fifo_alloc)(AV_SAMPLE_FMT_FLTP, plan->channels, c->frame_size > 0 ? c->frame_size * 4 : 4096);
    if (!a->fifo) return ATTACHE_ERR_NOMEM;
    a->max_samples = plan->max_seconds > 0 ? (int64_t)(plan->max_seconds * plan->sample_rate) : 0;
    return ATTACHE_OK;
}

static void audio_encoder_close(audio_encoder *a) {
    FF(swr_free)(&a->swr);
    if (a->fifo) FF(av_audio_fifo_free)(a->fifo);
    FF(av_frame_free)(&a->frame);
    FF(avcodec_free_context)(&a->codec);
    FF(av_channel_layout_uninit)(&a->in_layout);
}

/// Encodes whole encoder frames from the FIFO (and, at the end, what is left).
static attache_status audio_flush_fifo(audio_encoder *a, output *o, int final, attache_media_options *options) {
    int frame_size = a->codec->frame_size > 0 ? a->codec->frame_size : 1024;
    while (FF(av_audio_fifo_size)(a->fifo) >= frame_size || (final && FF(av_audio_fifo_size)(a->fifo) > 0)) {
        int n = FF(av_audio_fifo_size)(a->fifo);
        if (n > frame_size) n = frame_size;
        FF(av_frame_unref)(a->frame);
        a->frame->nb_samples = n;
        a->frame->format = AV_SAMPLE_FMT_FLTP;
        a->frame->sample_rate = a->codec->sample_rate;
        int rc = FF(av_channel_layout_copy)(&a->frame->ch_layout, &a->codec->ch_layout);
        if (rc >= 0) rc = FF(av_frame_get_buffer)(a->frame, 0);
        if (rc < 0) return attache_media_failure(options, rc, "audio frame");
        FF(av_audio_fifo_read)(a->fifo, (void **)a->frame->data, n);
        a->frame->pts = a->samples;
        a->samples += n;
        rc = FF(avcodec_send_frame)(a->codec, a->frame);
        if (rc < 0) return attache_media_failure(options, rc, "encode audio");
        attache_status s = drain(a->codec, a->stream, o, NULL, options);
        if (s != ATTACHE_OK) return s;
    }
    return ATTACHE_OK;
}

/// Resamples a decoded frame into the FIFO (NULL: what the resampler still holds). Returns 1 in
/// `*done` once the cut is reached.
static attache_status audio_add(audio_encoder *a, output *o, AVFrame *f, int *done, attache_media_options *options) {
    if (f && (!a->swr || f->sample_rate != a->in_rate || f->format != a->in_format
              || f->ch_layout.nb_channels != a->in_layout.nb_channels)) {
        FF(swr_free)(&a->swr);
        int rc = FF(swr_alloc_set_opts2)(&a->swr, &a->codec->ch_layout, AV_SAMPLE_FMT_FLTP, a->codec->sample_rate,
                                         &f->ch_layout, f->format, f->sample_rate, 0, NULL);
        if (rc >= 0) rc = FF(swr_init)(a->swr);
        if (rc < 0) return attache_media_failure(options, rc, "resample");
        a->in_rate = f->sample_rate;
        a->in_format = f->format;
        FF(av_channel_layout_uninit)(&a->in_layout);
        FF(av_channel_layout_copy)(&a->in_layout, &f->ch_layout);
    }
    if (!a->swr) return ATTACHE_OK;
    int capacity = FF(swr_get_out_samples)(a->swr, f ? f->nb_samples : 0);
    if (capacity <= 0) return ATTACHE_OK;
    float *planes[2] = { 0 };
    int channels = a->codec->ch_layout.nb_channels;
    for (int i = 0; i < channels; i++) {
        planes[i] = malloc((size_t)capacity * sizeof(float));
        if (!planes[i]) { free(planes[0]); return ATTACHE_ERR_NOMEM; }
    }
    int n = FF(swr_convert)(a->swr, (uint8_t **)planes, capacity, f ? (const uint8_t **)f->extended_data : NULL, f ? f->nb_samples : 0);
    attache_status status = ATTACHE_OK;
    if (n < 0) {
        status = attache_media_failure(options, n, "resample");
    } else if (n > 0) {
        int64_t queued = a->samples + FF(av_audio_fifo_size)(a->fifo);
        if (a->max_samples > 0 && queued + n >= a->max_samples) {
            n = (int)(a->max_samples - queued);
            *done = 1;
        }
        if (n > 0 && FF(av_audio_fifo_write)(a->fifo, (void **)planes, n) < n) status = ATTACHE_ERR_NOMEM;
        if (status == ATTACHE_OK) status = audio_flush_fifo(a, o, 0, options);
    }
    for (int i = 0; i < channels; i++) free(planes[i]);
    return status;
}

static attache_status finish_encoder(AVCodecContext *c, AVStream *st, output *o, video_encoder *v, attache_media_options *options) {
    int rc = FF(avcodec_send_frame)(c, NULL);
    if (rc < 0 && rc != AVERROR_EOF) return attache_media_failure(options, rc, "encode");
    return drain(c, st, o, v, options);
}

static attache_status output_finish(output *o, attache_media_options *options, attache_transcoded *out) {
    int rc = FF(av_write_trailer)(o->mux);
    if (rc < 0 || o->io->error < 0) return output_error(o, options, rc < 0 ? rc : o->io->error, "mp4 trailer");
    output_close(o, out);
    return ATTACHE_OK;
}

// ---- A file in, MP4 out ----

typedef struct {
    int index;                // in the input
    int mode;
    AVStream *in, *out;       // out: the copy's stream
    AVCodecContext *decoder;
    int done;
    int64_t packets, refused; // decoded or refused by the decoder
    int64_t start;            // the input's first time, in the stream's time base
    int64_t cut;              // the last time kept (exclusive), or INT64_MAX
    int64_t limit;            // a time past the movie length limit, or INT64_MAX
} route;

static int pick(attache_media *m, enum AVMediaType type) {
    for (unsigned i = 0; i < m->format->nb_streams; i++) {
        AVStream *st = m->format->streams[i];
        if (st->codecpar->codec_type == type && !(st->disposition & AV_DISPOSITION_ATTACHED_PIC)) return (int)i;
    }
    return -1;
}

static attache_status route_open(attache_media *m, route *r, int index, int mode, output *o, const attache_transcode_plan *plan) {
    memset(r, 0, sizeof *r);
    r->index = index;
    r->mode = index >= 0 ? mode : ATTACHE_STREAM_DROP;
    r->done = r->mode == ATTACHE_STREAM_DROP;
    if (r->done) return ATTACHE_OK;
    r->in = m->format->streams[index];
    int64_t start = m->format->start_time != AV_NOPTS_VALUE ? m->format->start_time : 0;
    r->start = FF(av_rescale_q)(start, AV_TIME_BASE_Q, r->in->time_base);
    r->cut = plan->max_seconds > 0
        ? r->start + FF(av_rescale_q)((int64_t)(plan->max_seconds * AV_TIME_BASE), AV_TIME_BASE_Q, r->in->time_base)
        : INT64_MAX;
    r->limit = plan->limit_seconds > 0
        ? r->start + FF(av_rescale_q)((int64_t)(plan->limit_seconds * AV_TIME_BASE), AV_TIME_BASE_Q, r->in->time_base)
        : INT64_MAX;
    if (r->mode == ATTACHE_STREAM_COPY) {
        r->out = FF(avformat_new_stream)(o->mux, NULL);
        if (!r->out) return ATTACHE_ERR_NOMEM;
        int rc = FF(avcodec_parameters_copy)(r->out->codecpar, r->in->codecpar);
        if (rc < 0) return attache_media_failure(m->options, rc, "copy");
        // iOS plays HEVC in MP4 only under the hvc1 tag (parameter sets in the header);
        // everything else takes the muxer's own tag.
        r->out->codecpar->codec_tag = r->in->codecpar->codec_id == AV_CODEC_ID_HEVC ? MKTAG('h', 'v', 'c', '1') : 0;
        r->out->time_base = r->in->time_base;
        return ATTACHE_OK;
    }
    return attache_media_open_decoder(m, r->in, plan->threads, &r->decoder);
}

/// The rotation a player applies, carried to the copy or the encoded stream.
static void keep_rotation(AVStream *in, AVStream *out) {
    size_t size = 0;
    const uint8_t *matrix = FF(av_stream_get_side_data)(in, AV_PKT_DATA_DISPLAYMATRIX, &size);
    if (!matrix || size < 9 * sizeof(int32_t)) return;
    uint8_t *copy = FF(av_stream_new_side_data)(out, AV_PKT_DATA_DISPLAYMATRIX, size);
    if (copy) memcpy(copy, matrix, size);
}

/// A decoded video frame to the encoder; sets `*done` past the cut.
static attache_status video_frame(attache_media *m, route *r, video_encoder *v, output *o, AVFrame *f) {
    int64_t pts = f->best_effort_timestamp;
    if (pts == AV_NOPTS_VALUE) pts = v->last_pts == AV_NOPTS_VALUE ? r->start : v->last_pts + 1;
    if (pts >= r->cut) { r->done = 1; return ATTACHE_OK; }
    int full;
    enum AVPixelFormat format = attache_media_frame_format(f, &full);
    return video_encode(v, o, (const uint8_t *const *)f->data, f->linesize, f->width, f->height, format, f->colorspace, full,
                        pts - r->start, 0, m->options);
}

static attache_status decode_packet(attache_media *m, route *r, const AVPacket *pkt, AVFrame *frame, video_encoder *v,
                                    audio_encoder *a, output *o) {
    int rc = FF(avcodec_send_packet)(r->decoder, pkt);
    if (pkt) r->packets++;
    // A packet the decoder refuses is skipped, as players do; how many is judged at the end.
    if (rc < 0 && rc != AVERROR(EAGAIN) && rc != AVERROR_EOF) { r->refused++; return ATTACHE_OK; }
    for (;;) {
        rc = FF(avcodec_receive_frame)(r->decoder, frame);
        if (rc == AVERROR(EAGAIN) || rc == AVERROR_EOF) return ATTACHE_OK;
        if (rc < 0) { r->refused++; return ATTACHE_OK; }
        attache_status s = ATTACHE_OK;
        if (!r->done) s = r->decoder->codec_type == AVMEDIA_TYPE_VIDEO ? video_frame(m, r, v, o, frame) : audio_add(a, o, frame, &r->done, m->options);
        FF(av_frame_unref)(frame);
        if (s != ATTACHE_OK) return s;
        if (attache_media_interrupted(m)) return ATTACHE_ERR_ABORTED;
    }
}

attache_status attache_media_transcode(attache_media *m, const attache_transcode_plan *plan, attache_transcoded *out) {
    memset(out, 0, sizeof *out);
    attache_media_options *options = m->options;
    options->message[0] = 0;
    output o;
    video_encoder v = { 0 };
    audio_encoder a = { 0 };
    route routes[2];
    memset(routes, 0, sizeof routes);
    AVPacket *pkt = FF(av_packet_alloc)();
    AVFrame *frame = FF(av_frame_alloc)();
    int video_index = pick(m, AVMEDIA_TYPE_VIDEO), audio_index = pick(m, AVMEDIA_TYPE_AUDIO);
    int sound = video_index < 0 || plan->video == ATTACHE_STREAM_DROP;
    attache_status status = output_open(&o, sound ? "ipod" : "mp4", plan->max_bytes, options);
    if (!pkt || !frame) status = ATTACHE_ERR_NOMEM;
    if (status == ATTACHE_OK) status = route_open(m, &routes[0], video_index, plan->video, &o, plan);
    if (status == ATTACHE_OK && routes[0].mode == ATTACHE_STREAM_ENCODE) {
        status = video_encoder_open(&v, &o, plan, routes[0].in->time_base, routes[0].in->codecpar, options);
        if (status == ATTACHE_OK) { keep_rotation(routes[0].in, v.stream); snprintf(out->video_encoder, sizeof out->video_encoder, "%s", v.codec->codec->name); }
    } else if (status == ATTACHE_OK && routes[0].mode == ATTACHE_STREAM_COPY) {
        keep_rotation(routes[0].in, routes[0].out);
        snprintf(out->video_encoder, sizeof out->video_encoder, "copy");
    }
    if (status == ATTACHE_OK) status = route_open(m, &routes[1], audio_index, plan->audio, &o, plan);
    if (status == ATTACHE_OK && routes[1].mode == ATTACHE_STREAM_ENCODE) {
        status = audio_encoder_open(&a, &o, plan, options);
        if (status == ATTACHE_OK) snprintf(out->audio_encoder, sizeof out->audio_encoder, "aac");
    } else if (status == ATTACHE_OK && routes[1].mode == ATTACHE_STREAM_COPY) {
        snprintf(out->audio_encoder, sizeof out->audio_encoder, "copy");
    }
    if (status == ATTACHE_OK && routes[0].done && routes[1].done) {
        snprintf(options->message, sizeof options->message, "nothing to write");
        status = ATTACHE_ERR_INVALID;
    }
    if (status == ATTACHE_OK) status = output_start(&o, options);
    if (status != ATTACHE_OK) goto done;

    for (unsigned i = 0; i < m->format->nb_streams; i++)
        m->format->streams[i]->discard = ((int)i == video_index && !routes[0].done) || ((int)i == audio_index && !routes[1].done)
            ? AVDISCARD_DEFAULT : AVDISCARD_ALL;
    // From the top when the probe read on (a sound measured); a movie is read from where its
    // header ends, with no seek (an index at the end of a damaged file could send it astray).
    if (m->consumed) FF(avformat_seek_file)(m->format, -1, INT64_MIN, 0, 0, 0);
    int64_t copied = 0;
    for (;;) {
        if (routes[0].done && routes[1].done) break;
        int rc = FF(av_read_frame)(m->format, pkt);
        if (rc == AVERROR_EXIT) { status = ATTACHE_ERR_ABORTED; goto done; }
        if (rc < 0) break;  // the end, or where the file stops being readable
        route *r = pkt->stream_index == video_index ? &routes[0] : pkt->stream_index == audio_index ? &routes[1] : NULL;
        if (!r || r->done) { FF(av_packet_unref)(pkt); continue; }
        // The length limit holds on what the packets say, not only on the declared duration: a
        // live Matroska stream declares none and may run for hours.
        int64_t stamp = pkt->dts != AV_NOPTS_VALUE ? pkt->dts : pkt->pts;
        if (stamp != AV_NOPTS_VALUE && stamp > r->limit) {
            snprintf(options->message, sizeof options->message, "the %s runs past the %.0f s limit",
                     r == &routes[0] ? "video" : "sound", plan->limit_seconds);
            FF(av_packet_unref)(pkt);
            status = ATTACHE_ERR_LIMITS;
            goto done;
        }
        if (r->mode == ATTACHE_STREAM_COPY) {
            int64_t at = pkt->dts != AV_NOPTS_VALUE ? pkt->dts : pkt->pts;
            if (at != AV_NOPTS_VALUE && at >= r->cut) { r->done = 1; FF(av_packet_unref)(pkt); continue; }
            if (pkt->pts != AV_NOPTS_VALUE) pkt->pts -= r->start;
            if (pkt->dts != AV_NOPTS_VALUE) pkt->dts -= r->start;
            FF(av_packet_rescale_ts)(pkt, r->in->time_base, r->out->time_base);
            pkt->stream_index = r->out->index;
            pkt->pos = -1;
            if (r == &routes[0]) copied++;
            rc = output_write(&o, pkt);
            if (rc < 0) { status = output_error(&o, options, rc, "write"); goto done; }
        } else {
            status = decode_packet(m, r, pkt, frame, &v, &a, &o);
            FF(av_packet_unref)(pkt);
            if (status != ATTACHE_OK) goto done;
        }
        if (attache_media_interrupted(m)) { status = ATTACHE_ERR_ABORTED; goto done; }
    }
    // What the decoders still hold, then the encoders.
    for (int i = 0; i < 2; i++) {
        if (routes[i].mode != ATTACHE_STREAM_ENCODE) continue;
        if (!routes[i].done) {
            status = decode_packet(m, &routes[i], NULL, frame, &v, &a, &o);
            if (status != ATTACHE_OK) goto done;
        }
    }
    if (routes[1].mode == ATTACHE_STREAM_ENCODE) {
        int ignored = 0;
        if (!routes[1].done) status = audio_add(&a, &o, NULL, &ignored, options);
        if (status == ATTACHE_OK) status = audio_flush_fifo(&a, &o, 1, options);
        if (status == ATTACHE_OK) status = finish_encoder(a.codec, a.stream, &o, NULL, options);
        if (status != ATTACHE_OK) goto done;
    }
    if (routes[0].mode == ATTACHE_STREAM_ENCODE) {
        if (v.frames == 0) {
            snprintf(options->message, sizeof options->message, "no video frame could be decoded");
            status = ATTACHE_ERR_INVALID;
            goto done;
        }
        status = finish_encoder(v.codec, v.stream, &o, &v, options);
        if (status != ATTACHE_OK) goto done;
    }
    // A few damaged packets play as a glitch; more than one in twenty is a broken file, not a
    // shorter or blurrier movie.
    for (int i = 0; i < 2; i++) {
        route *r = &routes[i];
        if (r->mode != ATTACHE_STREAM_ENCODE || r->refused == 0 || r->refused * 20 < r->packets) continue;
        snprintf(options->message, sizeof options->message, "%lld of %lld %s packets do not decode",
                 (long long)r->refused, (long long)r->packets, i == 0 ? "video" : "audio");
        status = ATTACHE_ERR_INVALID;
        goto done;
    }
    if (routes[0].mode == ATTACHE_STREAM_COPY && copied == 0) {
        snprintf(options->message, sizeof options->message, "no video packet could be read");
        status = ATTACHE_ERR_INVALID;
        goto done;
    }
    if (routes[1].mode == ATTACHE_STREAM_ENCODE && routes[0].mode == ATTACHE_STREAM_DROP && a.samples == 0) {
        snprintf(options->message, sizeof options->message, "no audio could be decoded");
        status = ATTACHE_ERR_INVALID;
        goto done;
    }
    {
        double duration = o.end;
        if (routes[0].mode == ATTACHE_STREAM_ENCODE) {
            out->width = v.codec->width;
            out->height = v.codec->height;
            out->video_frames = v.frames;
        } else if (routes[0].mode == ATTACHE_STREAM_COPY) {
            out->width = routes[0].in->codecpar->width;
            out->height = routes[0].in->codecpar->height;
            out->video_frames = copied;
        }
        status = output_finish(&o, options, out);
        out->duration = duration;
    }
done:
    for (int i = 0; i < 2; i++) FF(avcodec_free_context)(&routes[i].decoder);
    video_encoder_close(&v);
    audio_encoder_close(&a);
    FF(av_packet_free)(&pkt);
    FF(av_frame_free)(&frame);
    output_close(&o, NULL);
    if (status != ATTACHE_OK) attache_transcoded_free(out);
    return status;
}

void attache_transcoded_free(attache_transcoded *out) {
    free(out->data);
    out->data = NULL;
    out->length = 0;
}

// ---- Frames in, MP4 out ----

struct attache_movie_writer {
    output out;
    video_encoder video;
    attache_media_options *options;
    int64_t at;   // milliseconds
};

attache_status attache_movie_writer_open(const attache_transcode_plan *plan, attache_media_options *options, attache_movie_writer **out) {
    *out = NULL;
    options->message[0] = 0;
    if (!attache_ffmpeg_load(options->message, sizeof options->message)) return ATTACHE_ERR_UNSUPPORTED;
    FF(av_log_set_level)(AV_LOG_QUIET);
    attache_movie_writer *w = calloc(1, sizeof *w);
    if (!w) return ATTACHE_ERR_NOMEM;
    w->options = options;
    attache_status status = output_open(&w->out, "mp4", plan->max_bytes, options);
    if (status == ATTACHE_OK) status = video_encoder_open(&w->video, &w->out, plan, (AVRational){ 1, 1000 }, NULL, options);
    if (status == ATTACHE_OK) status = output_start(&w->out, options);
    w->video.keeps = 1;
    if (status != ATTACHE_OK) {
        attache_movie_writer_free(w);
        return status;
    }
    *out = w;
    return ATTACHE_OK;
}

attache_status attache_movie_writer_add(attache_movie_writer *w, const attache_image *frame, int milliseconds) {
    if (frame->width <= 0 || frame->height <= 0 || (frame->channels != 3 && frame->channels != 4)) return ATTACHE_ERR_INVALID;
    const uint8_t *planes[4] = { frame->pixels, NULL, NULL, NULL };
    int strides[4] = { frame->width * frame->channels, 0, 0, 0 };
    attache_status s = video_encode(&w->video, &w->out, planes, strides, frame->width, frame->height,
                                    frame->channels == 4 ? AV_PIX_FMT_RGBA : AV_PIX_FMT_RGB24, AVCOL_SPC_RGB, 1, w->at, milliseconds > 0 ? milliseconds : 1,
                                    w->options);
    w->at += milliseconds > 0 ? milliseconds : 1;
    return s;
}

/// The encoded animation written again `loops - 1` times after itself, each time later by its
/// length: the packets as they are (every loop starts at the first, a keyframe), nothing encoded
/// again. Fewer loops when the bytes would pass the target or the times would not rise.
static attache_status write_loops(attache_movie_writer *w, int *loops) {
    video_encoder *v = &w->video;
    int64_t length = FF(av_rescale_q)(w->at, (AVRational){ 1, 1000 }, v->stream->time_base);
    if (*loops < 2 || v->kept_count == 0 || length <= 0) { *loops = 1; return ATTACHE_OK; }
    // Room for the index too, which grows with every packet.
    int64_t room = w->out.bytes.max > 0 ? w->out.bytes.max * 9 / 10 : INT64_MAX;
    int most = (int)(room / (v->kept_bytes + (int64_t)v->kept_count * 16 + 1));
    if (*loops > most) *loops = most < 1 ? 1 : most;
    int64_t last_dts = INT64_MIN, first_dts = v->kept[0]->dts;
    for (size_t i = 0; i < v->kept_count; i++) if (v->kept[i]->dts > last_dts) last_dts = v->kept[i]->dts;
    if (first_dts == AV_NOPTS_VALUE || first_dts + length <= last_dts) *loops = 1;
    for (int k = 1; k < *loops; k++) {
        for (size_t i = 0; i < v->kept_count; i++) {
            AVPacket *again = FF(av_packet_clone)(v->kept[i]);
            if (!again) return ATTACHE_ERR_NOMEM;
            if (again->pts != AV_NOPTS_VALUE) again->pts += length * k;
            if (again->dts != AV_NOPTS_VALUE) again->dts += length * k;
            int rc = output_write(&w->out, again);
            FF(av_packet_free)(&again);
            if (rc < 0) return output_error(&w->out, w->options, rc, "write");
        }
    }
    return ATTACHE_OK;
}

attache_status attache_movie_writer_finish(attache_movie_writer *w, double play_seconds, attache_transcoded *out) {
    memset(out, 0, sizeof *out);
    if (w->video.frames == 0) {
        snprintf(w->options->message, sizeof w->options->message, "no frames");
        return ATTACHE_ERR_INVALID;
    }
    attache_status s = finish_encoder(w->video.codec, w->video.stream, &w->out, &w->video, w->options);
    int64_t play_ms = play_seconds > 0 && play_seconds < 3600 ? (int64_t)(play_seconds * 1000) : 0;
    int loops = w->at > 0 && play_ms > w->at ? (int)((play_ms + w->at - 1) / w->at) : 1;
    if (loops > 100) loops = 100;
    if (s == ATTACHE_OK) s = write_loops(w, &loops);
    out->width = w->video.codec->width;
    out->height = w->video.codec->height;
    out->video_frames = w->video.frames * loops;
    out->loops = loops;
    out->duration = (double)w->at * loops / 1000;
    snprintf(out->video_encoder, sizeof out->video_encoder, "%s", w->video.codec->codec->name);
    if (s == ATTACHE_OK) s = output_finish(&w->out, w->options, out);
    if (s != ATTACHE_OK) attache_transcoded_free(out);
    return s;
}

void attache_movie_writer_free(attache_movie_writer *w) {
    if (!w) return;
    video_encoder_close(&w->video);
    output_close(&w->out, NULL);
    free(w);
}
