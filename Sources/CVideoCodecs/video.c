#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ffmpeg_loader.h"
#include "attache_video.h"
#include "media.h"


static int read_packet(void *opaque, uint8_t *buffer, int size) {
    attache_media *m = opaque;
    if (m->position >= (int64_t)m->length) return AVERROR_EOF;
    int64_t n = (int64_t)m->length - m->position;
    if (n > size) n = size;
    memcpy(buffer, m->data + m->position, (size_t)n);
    m->position += n;
    return (int)n;
}

static int64_t seek(void *opaque, int64_t offset, int whence) {
    attache_media *m = opaque;
    int64_t target;
    switch (whence & ~AVSEEK_FORCE) {
        case AVSEEK_SIZE: return (int64_t)m->length;
        case SEEK_SET: target = offset; break;
        case SEEK_CUR: target = m->position + offset; break;
        case SEEK_END: target = (int64_t)m->length + offset; break;
        default: return -1;
    }
    if (target < 0 || target > (int64_t)m->length) return -1;
    m->position = target;
    return target;
}

int attache_media_interrupted(void *opaque) {
    attache_media *m = opaque;
    return m->options->abort_fn && m->options->abort_fn(m->options->abort_context);
}

attache_status attache_media_failure(attache_media_options *o, int error, const char *what) {
    char text[AV_ERROR_MAX_STRING_SIZE] = { 0 };
    FF(av_strerror)(error, text, sizeof text);
    snprintf(o->message, sizeof o->message, "%s: %s", what, text);
    if (error == AVERROR_EXIT) return ATTACHE_ERR_ABORTED;
    if (error == AVERROR(ENOMEM)) return ATTACHE_ERR_NOMEM;
    return ATTACHE_ERR_INVALID;
}

void attache_media_close(attache_media *m) {
    if (!m) return;
    if (m->format) FF(avformat_close_input)(&m->format);
    if (m->io) {
        FF(av_freep)(&m->io->buffer);
        FF(avio_context_free)(&m->io);
    }
    free(m);
}

// MP4/MOV headers (moov) already give every stream's codec, size, sample rate, extradata, frame
// rate and the duration; avformat_find_stream_info would decode the first frames again only to
// confirm them (about 10 ms for a 1080p H.264 clip). Other containers, or a header with gaps, get
// the full probe.
static int needs_stream_info(const AVFormatContext *f) {
    if (strncmp(f->iformat->name, "mov,", 4) != 0) return 1;
    if (f->duration == AV_NOPTS_VALUE || f->duration <= 0) return 1;
    for (unsigned i = 0; i < f->nb_streams; i++) {
        const AVCodecParameters *p = f->streams[i]->codecpar;
        if (p->codec_id == AV_CODEC_ID_NONE) return 1;
        if (p->codec_type == AVMEDIA_TYPE_VIDEO) {
            if (p->width <= 0 || p->height <= 0) return 1;
            int needs_extradata = p->codec_id == AV_CODEC_ID_H264 || p->codec_id == AV_CODEC_ID_HEVC;
            if (needs_extradata && p->extradata_size <= 0) return 1;
        } else if (p->codec_type == AVMEDIA_TYPE_AUDIO) {
            if (p->sample_rate <= 0 || p->ch_layout.nb_channels <= 0) return 1;
        }
    }
    return 0;
}

static void copy_name(char *out, size_t size, const char *name) {
    snprintf(out, size, "%s", name ? name : "");
}

// A sound's duration as its packets say, not as its header claims: an MP3's Xing header (or a
// WAV's data size) still promises the whole length when the file was cut in half. Demuxing reads
// each packet's timing without decoding it, so this costs a pass over the bytes and little else.
static attache_status measure_sound(attache_media *m, int stream, attache_media_facts *facts) {
    AVPacket *pkt = FF(av_packet_alloc)();
    if (!pkt) return ATTACHE_ERR_NOMEM;
    const AVStream *st = m->format->streams[stream];
    int64_t start = st->start_time, end = AV_NOPTS_VALUE;
    int rc;
    while ((rc = FF(av_read_frame)(m->format, pkt)) >= 0) {
        if (pkt->stream_index == stream) {
            int64_t at = pkt->pts != AV_NOPTS_VALUE ? pkt->pts : pkt->dts;
            if (at != AV_NOPTS_VALUE) {
                if (start == AV_NOPTS_VALUE || at < start) start = at;
                int64_t stop = at + (pkt->duration > 0 ? pkt->duration : 0);
                if (end == AV_NOPTS_VALUE || stop > end) end = stop;
            }
        }
        FF(av_packet_unref)(pkt);
    }
    FF(av_packet_free)(&pkt);
    m->consumed = 1;
    // Any other error ends the readable part, which is what gets reported.
    if (rc == AVERROR_EXIT) return attache_media_failure(m->options, rc, "read");
    if (end == AV_NOPTS_VALUE) {
        snprintf(m->options->message, sizeof m->options->message, "no audio packet can be read");
        return ATTACHE_ERR_INVALID;
    }
    facts->duration = (double)(end - start) * av_q2d(st->time_base);
    return ATTACHE_OK;
}

enum AVPixelFormat attache_media_frame_format(const AVFrame *f, int *full_range) {
    *full_range = f->color_range == AVCOL_RANGE_JPEG;
    switch (f->format) {  // the deprecated "J" formats mean full range
        case AV_PIX_FMT_YUVJ420P: *full_range = 1; return AV_PIX_FMT_YUV420P;
        case AV_PIX_FMT_YUVJ422P: *full_range = 1; return AV_PIX_FMT_YUV422P;
        case AV_PIX_FMT_YUVJ444P: *full_range = 1; return AV_PIX_FMT_YUV444P;
        default: return f->format;
    }
}

int attache_video_load(char *message, size_t size) {
    if (!attache_ffmpeg_load(message, size)) return 0;
    FF(av_log_set_level)(AV_LOG_QUIET);
    return 1;
}

attache_status attache_media_open(const uint8_t *data, size_t length, attache_media_options *o,
                                  attache_media **out, attache_media_facts *facts) {
    *out = NULL;
    memset(facts, 0, sizeof *facts);
    o->message[0] = 0;
    if (!attache_ffmpeg_load(o->message, sizeof o->message)) return ATTACHE_ERR_UNSUPPORTED;
    FF(av_log_set_level)(AV_LOG_QUIET);
    const AVInputFormat *demuxer = FF(av_find_input_format)(o->demuxer);
    if (!demuxer) {
        snprintf(o->message, sizeof o->message, "no demuxer %s", o->demuxer);
        return ATTACHE_ERR_UNSUPPORTED;
    }
    attache_media *m = calloc(1, sizeof *m);
    if (!m) return ATTACHE_ERR_NOMEM;
    m->data = data;
    m->length = length;
    m->options = o;
    m->video_stream = -1;
    const int io_size = 32768;
    uint8_t *buffer = FF(av_malloc)(io_size);
    m->io = buffer ? FF(avio_alloc_context)(buffer, io_size, 0, m, read_packet, NULL, seek) : NULL;
    m->format = FF(avformat_alloc_context)();
    if (!m->io || !m->format) {
        if (!m->io) FF(av_free)(buffer);
        attache_media_close(m);
        return ATTACHE_ERR_NOMEM;
    }
    m->format->pb = m->io;
    m->format->flags |= AVFMT_FLAG_CUSTOM_IO;
    m->format->interrupt_callback.callback = attache_media_interrupted;
    m->format->interrupt_callback.opaque = m;

    AVDictionary *settings = NULL;
    FF(av_dict_set)(&settings, "format_whitelist", "mov,mp4,m4a,3gp,3g2,mj2,avi,mpeg,mpegts,mp3,wav,aiff,matroska,webm,ogg,flac", 0);
    FF(av_dict_set)(&settings, "protocol_whitelist", "", 0);       // nothing may be opened by name
    FF(av_dict_set)(&settings, "enable_drefs", "0", 0);            // mov: no external data references
    FF(av_dict_set)(&settings, "probesize", "1000000", 0);
    FF(av_dict_set)(&settings, "analyzeduration", "1000000", 0);
    FF(av_dict_set_int)(&settings, "max_streams", o->max_streams, 0);
    int rc = FF(avformat_open_input)(&m->format, NULL, demuxer, &settings);
    FF(av_dict_free)(&settings);
    if (rc < 0) {
        m->format = NULL;  // freed by avformat_open_input on failure
        attache_status s = attache_media_failure(o, rc, "open");
        attache_media_close(m);
        return s;
    }
    if ((int)m->format->nb_streams > o->max_streams) {
        snprintf(o->message, sizeof o->message, "%u streams (limit %d)", m->format->nb_streams, o->max_streams);
        attache_media_close(m);
        return ATTACHE_ERR_LIMITS;
    }
    if (needs_stream_info(m->format)) {
        rc = FF(avformat_find_stream_info)(m->format, NULL);
        if (rc < 0) {
            attache_status s = attache_media_failure(o, rc, "probe");
            attache_media_close(m);
            return s;
        }
    }

    // A container that indexes its samples (MP4/MOV, AVI) says where each one is: an index that
    // points past the end of the bytes means the file was cut short.
    for (unsigned i = 0; i < m->format->nb_streams; i++) {
        AVStream *st = m->format->streams[i];
        int entries = FF(avformat_index_get_entries_count)(st);
        if (entries <= 0) continue;
        const AVIndexEntry *last = FF(avformat_index_get_entry)(st, entries - 1);
        if (last && last->pos + last->size > (int64_t)length) {
            snprintf(o->message, sizeof o->message, "truncated: stream %u has samples up to byte %lld of %zu",
                     i, (long long)(last->pos + last->size), length);
            attache_media_close(m);
            return ATTACHE_ERR_INVALID;
        }
    }

    copy_name(facts->container, sizeof facts->container, m->format->iformat->name);
    facts->streams = (int)m->format->nb_streams;
    if (m->format->duration != AV_NOPTS_VALUE && m->format->duration > 0)
        facts->duration = (double)m->format->duration / AV_TIME_BASE;
    facts->bit_rate = m->format->bit_rate;
    int audio_stream = -1;
    if (facts->bit_rate <= 0 && facts->duration > 0)  // what find_stream_info would estimate
        facts->bit_rate = (int64_t)((double)length * 8 / facts->duration);
    for (unsigned i = 0; i < m->format->nb_streams; i++) {
        AVStream *st = m->format->streams[i];
        AVCodecParameters *p = st->codecpar;
        if (p->codec_type == AVMEDIA_TYPE_VIDEO && (st->disposition & AV_DISPOSITION_ATTACHED_PIC)) {
            facts->has_cover = 1;
        } else if (p->codec_type == AVMEDIA_TYPE_VIDEO && m->video_stream < 0) {
            m->video_stream = (int)i;
            facts->has_video = 1;
            copy_name(facts->video_codec, sizeof facts->video_codec, FF(avcodec_get_name)(p->codec_id));
            facts->width = p->width;
            facts->height = p->height;
            if (st->avg_frame_rate.den > 0) facts->frame_rate = av_q2d(st->avg_frame_rate);
            size_t size = 0;
            const uint8_t *matrix = FF(av_stream_get_side_data)(st, AV_PKT_DATA_DISPLAYMATRIX, &size);
            if (matrix && size >= 9 * sizeof(int32_t)) {
                // av_display_rotation_get is counter-clockwise; players turn the picture the other way.
                double ccw = FF(av_display_rotation_get)((const int32_t *)matrix);
                int cw = (int)((-ccw >= 0 ? -ccw + 45 : -ccw - 45) / 90) * 90;
                facts->rotation = ((cw % 360) + 360) % 360;
            }
        } else if (p->codec_type == AVMEDIA_TYPE_AUDIO && !facts->has_audio) {
            facts->has_audio = 1;
            audio_stream = (int)i;
            copy_name(facts->audio_codec, sizeof facts->audio_codec, FF(avcodec_get_name)(p->codec_id));
            facts->channels = p->ch_layout.nb_channels;
            facts->sample_rate = p->sample_rate;
        }
    }
    if (!facts->has_video && audio_stream >= 0) {
        attache_status status = measure_sound(m, audio_stream, facts);
        if (status != ATTACHE_OK) {
            attache_media_close(m);
            return status;
        }
    }
    *out = m;
    return ATTACHE_OK;
}

attache_status attache_media_open_decoder(attache_media *m, AVStream *st, int threads, AVCodecContext **out) {
    const AVCodec *codec = FF(avcodec_find_decoder)(st->codecpar->codec_id);
    if (!codec) {
        snprintf(m->options->message, sizeof m->options->message, "no decoder for %s", FF(avcodec_get_name)(st->codecpar->codec_id));
        return ATTACHE_ERR_UNSUPPORTED;
    }
    AVCodecContext *c = FF(avcodec_alloc_context3)(codec);
    if (!c) return ATTACHE_ERR_NOMEM;
    int rc = FF(avcodec_parameters_to_context)(c, st->codecpar);
    if (rc >= 0) {
        c->max_pixels = m->options->max_pixels;
        c->thread_count = threads;
        c->thread_type = FF_THREAD_FRAME | FF_THREAD_SLICE;
        rc = FF(avcodec_open2)(c, codec, NULL);
    }
    if (rc < 0) {
        FF(avcodec_free_context)(&c);
        return attache_media_failure(m->options, rc, "decoder");
    }
    *out = c;
    return ATTACHE_OK;
}

// Scales straight from the decoder's YUV into RGB with the longest edge at most max_edge,
// honouring the frame's colour range and matrix.
static attache_status to_rgb(attache_media *m, const AVFrame *f, int max_edge, attache_image *out) {
    int w = f->width, h = f->height;
    if (w <= 0 || h <= 0) return ATTACHE_ERR_INVALID;
    int longest = w > h ? w : h;
    int dw = w, dh = h;
    if (longest > max_edge) {
        dw = (int)((int64_t)w * max_edge / longest);
        dh = (int)((int64_t)h * max_edge / longest);
        if (dw < 1) dw = 1;
        if (dh < 1) dh = 1;
    }
    int full_range;
    enum AVPixelFormat format = attache_media_frame_format(f, &full_range);
    struct SwsContext *sws = FF(sws_getContext)(w, h, format, dw, dh, AV_PIX_FMT_RGB24,
                                            dw < w ? SWS_AREA : SWS_BICUBIC, NULL, NULL, NULL);
    if (!sws) {
        snprintf(m->options->message, sizeof m->options->message, "cannot convert %s", FF(av_get_pix_fmt_name)(format));
        return ATTACHE_ERR_UNSUPPORTED;
    }
    int space = f->colorspace == AVCOL_SPC_BT709 ? SWS_CS_ITU709 : SWS_CS_DEFAULT;
    FF(sws_setColorspaceDetails)(sws, FF(sws_getCoefficients)(space), full_range, FF(sws_getCoefficients)(SWS_CS_DEFAULT), 1, 0, 1 << 16, 1 << 16);
    // libswscale writes whole SIMD blocks: a row of a few pixels gets bytes past its end (a 2x2
    // frame corrupted the heap). It writes padded rows, closed up afterwards.
    int tight = dw * 3, padded = (tight + 63) & ~63;
    uint8_t *pixels = malloc((size_t)padded * dh + 64);
    if (!pixels) {
        FF(sws_freeContext)(sws);
        return ATTACHE_ERR_NOMEM;
    }
    uint8_t *planes[4] = { pixels, NULL, NULL, NULL };
    int strides[4] = { padded, 0, 0, 0 };
    FF(sws_scale)(sws, (const uint8_t *const *)f->data, f->linesize, 0, h, planes, strides);
    FF(sws_freeContext)(sws);
    for (int y = 1; y < dh; y++) memmove(pixels + (size_t)y * tight, pixels + (size_t)y * padded, (size_t)tight);
    out->pixels = pixels;
    out->width = dw;
    out->height = dh;
    out->channels = 3;
    return ATTACHE_OK;
}

static attache_status cover_art(attache_media *m, int max_edge, attache_image *out) {
    for (unsigned i = 0; i < m->format->nb_streams; i++) {
        AVStream *st = m->format->streams[i];
        if (!(st->disposition & AV_DISPOSITION_ATTACHED_PIC) || st->attached_pic.size <= 0) continue;
        AVCodecContext *c = NULL;
        attache_status s = attache_media_open_decoder(m, st, 1, &c);
        if (s != ATTACHE_OK) return s;
        AVFrame *f = FF(av_frame_alloc)();
        int rc = f ? FF(avcodec_send_packet)(c, &st->attached_pic) : AVERROR(ENOMEM);
        if (rc >= 0) FF(avcodec_send_packet)(c, NULL);
        if (rc >= 0) rc = FF(avcodec_receive_frame)(c, f);
        s = rc >= 0 ? to_rgb(m, f, max_edge, out) : attache_media_failure(m->options, rc, "cover art");
        FF(av_frame_free)(&f);
        FF(avcodec_free_context)(&c);
        return s;
    }
    return ATTACHE_ERR_UNSUPPORTED;
}

attache_status attache_media_poster(attache_media *m, double seconds, int exact, int max_frames, int max_edge,
                                    attache_image *out, double *shown_at) {
    memset(out, 0, sizeof *out);
    *shown_at = 0;
    m->options->message[0] = 0;
    if (seconds < 0) {
        if (cover_art(m, max_edge, out) == ATTACHE_OK) return ATTACHE_OK;
        seconds = 0;
    }
    if (m->video_stream < 0) {
        snprintf(m->options->message, sizeof m->options->message, "no video stream");
        return ATTACHE_ERR_UNSUPPORTED;
    }
    AVStream *st = m->format->streams[m->video_stream];
    for (unsigned i = 0; i < m->format->nb_streams; i++)
        m->format->streams[i]->discard = (int)i == m->video_stream ? AVDISCARD_DEFAULT : AVDISCARD_ALL;

    AVCodecContext *c = NULL;
    // One decoder thread: frame threads hold a picture set each (over 64 MB at 1080p with two),
    // and exact mode makes up for it by skipping what it never shows (below).
    attache_status status = attache_media_open_decoder(m, st, 1, &c);
    if (status != ATTACHE_OK) return status;
    if (!exact) {
        c->skip_frame = AVDISCARD_NONKEY;
        // One frame, shrunk several times over, and nothing predicted from it: the deblocking
        // filter would change nothing visible.
        c->skip_loop_filter = AVDISCARD_ALL;
    } else {
        // Frames nothing refers to (most B-frames) shown before the target are never seen and
        // never needed to decode later ones; the decoder skips them until the target is near.
        c->skip_frame = AVDISCARD_NONREF;
    }

    int64_t start = st->start_time != AV_NOPTS_VALUE ? st->start_time : 0;
    int64_t target = start + FF(av_rescale_q)((int64_t)(seconds * AV_TIME_BASE), AV_TIME_BASE_Q, st->time_base);
    // The keyframe at or before the target; if the file cannot seek, decoding starts at the top.
    if (FF(avformat_seek_file)(m->format, m->video_stream, INT64_MIN, target, target, 0) < 0)
        FF(avformat_seek_file)(m->format, m->video_stream, INT64_MIN, start, start, 0);

    AVPacket *pkt = FF(av_packet_alloc)();
    AVFrame *frame = FF(av_frame_alloc)();
    // The first frame decoded (the keyframe) is the fallback of exact mode. It is kept already
    // scaled: holding the decoder's picture would pin a full-size buffer (3 MB at 1080p).
    attache_image key = { 0 };
    int64_t key_pts = AV_NOPTS_VALUE;
    if (!pkt || !frame) { status = ATTACHE_ERR_NOMEM; goto done; }
    int have_key = 0, use_key = 0, have = 0, decoded = 0, draining = 0, rc = 0;
    while (!have) {
        if (!draining) {
            rc = FF(av_read_frame)(m->format, pkt);
            if (rc == AVERROR_EXIT) { status = ATTACHE_ERR_ABORTED; goto done; }
            if (rc < 0) {
                draining = 1;
                FF(avcodec_send_packet)(c, NULL);
            } else if (pkt->stream_index != m->video_stream) {
                FF(av_packet_unref)(pkt);
                continue;
            } else {
                // Packets come in decode order: once one is due at or after the target, frames
                // around it may be the one shown, so nothing more is skipped.
                int64_t due = pkt->pts != AV_NOPTS_VALUE ? pkt->pts : pkt->dts;  // no time at all: stop skipping
                if (exact && c->skip_frame != AVDISCARD_DEFAULT && (due == AV_NOPTS_VALUE || due >= target))
                    c->skip_frame = AVDISCARD_DEFAULT;
                rc = FF(avcodec_send_packet)(c, pkt);
                FF(av_packet_unref)(pkt);
                // Fast mode: one key packet, then drain, so B-frame delay never forces reading on.
                if (!exact && rc >= 0) { FF(avcodec_send_packet)(c, NULL); draining = 1; }
            }
        }
        for (;;) {
            rc = FF(avcodec_receive_frame)(c, frame);
            if (rc == AVERROR(EAGAIN)) break;
            if (rc < 0) break;
            decoded++;
            int64_t pts = frame->best_effort_timestamp;
            if (!exact || pts == AV_NOPTS_VALUE || pts >= target) { have = 1; break; }
            if (!have_key) {
                status = to_rgb(m, frame, max_edge, &key);
                if (status != ATTACHE_OK) goto done;
                key_pts = pts;
                have_key = 1;
            }
            if (decoded >= max_frames) {  // over budget: settle for the keyframe
                use_key = have = 1;
                break;
            }
            FF(av_frame_unref)(frame);
            if (attache_media_interrupted(m)) { status = ATTACHE_ERR_ABORTED; goto done; }
        }
        if (have) break;
        if (rc == AVERROR_EOF || (draining && rc < 0 && rc != AVERROR(EAGAIN))) {
            if (have_key) {  // the clip ended before the time: its keyframe will do
                use_key = have = 1;
                break;
            }
            status = rc == AVERROR_EOF ? ATTACHE_ERR_INVALID : attache_media_failure(m->options, rc, "decode");
            if (!m->options->message[0]) snprintf(m->options->message, sizeof m->options->message, "no decodable frame");
            goto done;
        }
        if (attache_media_interrupted(m)) { status = ATTACHE_ERR_ABORTED; goto done; }
    }
    {
        int64_t pts = use_key ? key_pts : frame->best_effort_timestamp;
        *shown_at = pts == AV_NOPTS_VALUE ? seconds : av_q2d(st->time_base) * (double)(pts - start);
        if (use_key) {
            *out = key;
            key = (attache_image){ 0 };
        } else {
            status = to_rgb(m, frame, max_edge, out);
        }
    }
done:
    attache_image_free(&key);
    FF(av_packet_free)(&pkt);
    FF(av_frame_free)(&frame);
    FF(avcodec_free_context)(&c);
    return status;
}
