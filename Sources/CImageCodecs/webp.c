// libwebp: stills through the incremental decoder (so the abort flag is looked at between slices
// of input), animations through libwebpdemux's WebPAnimDecoder, which composites each frame onto
// the canvas (blending and disposal as the format says).
#include <stdlib.h>
#include <string.h>
#include <webp/decode.h>
#include <webp/demux.h>
#include "frames.h"
#include "shrink.h"

// How much input the incremental decoder gets between two looks at the abort flag.
#define SLICE (64 * 1024)

static void keep_icc(const uint8_t *data, size_t length, attache_decode_options *options) {
    WebPData whole = { data, length };
    WebPDemuxer *demux = WebPDemux(&whole);
    if (!demux) return;
    WebPChunkIterator chunk;
    if (WebPDemuxGetChunk(demux, "ICCP", 1, &chunk)) {
        attache_keep_icc(options, chunk.chunk.bytes, chunk.chunk.size);
        WebPDemuxReleaseChunkIterator(&chunk);
    }
    WebPDemuxDelete(demux);
}

attache_status attache_webp_info(const uint8_t *data, size_t length, attache_decode_options *options, attache_image_info *info) {
    options->message[0] = 0;
    memset(info, 0, sizeof *info);
    WebPBitstreamFeatures features;
    if (WebPGetFeatures(data, length, &features) != VP8_STATUS_OK)
        return attache_fail(options, ATTACHE_ERR_INVALID, "WebP header does not parse");
    info->width = features.width;
    info->height = features.height;
    info->has_alpha = features.has_alpha;
    info->frames = 1;
    if (features.has_animation) {
        // The demuxer reads chunk headers only; a cut file still tells its canvas and frames so far.
        WebPData whole = { data, length };
        WebPDemuxState state;
        WebPDemuxer *demux = WebPDemuxPartial(&whole, &state);
        if (!demux || state == WEBP_DEMUX_PARSE_ERROR) {
            WebPDemuxDelete(demux);
            return attache_fail(options, ATTACHE_ERR_INVALID, "animated WebP does not parse");
        }
        info->width = (int)WebPDemuxGetI(demux, WEBP_FF_CANVAS_WIDTH);
        info->height = (int)WebPDemuxGetI(demux, WEBP_FF_CANVAS_HEIGHT);
        info->frames = (int)WebPDemuxGetI(demux, WEBP_FF_FRAME_COUNT);
        WebPDemuxDelete(demux);
        if (info->frames < 1) return attache_fail(options, ATTACHE_ERR_INVALID, "animated WebP without frames");
    }
    if (info->width <= 0 || info->height <= 0) return attache_fail(options, ATTACHE_ERR_INVALID, "WebP declares no pixels");
    return ATTACHE_OK;
}

static attache_status decode_still(const uint8_t *data, size_t length, const attache_image_info *info, attache_decode_options *options,
                                   attache_image *out) {
    const int has_alpha = info->has_alpha;
    WebPDecoderConfig config;
    if (!WebPInitDecoderConfig(&config)) return attache_fail(options, ATTACHE_ERR_UNSUPPORTED, "libwebp version mismatch");
    config.output.colorspace = has_alpha ? MODE_rgbA : MODE_RGB;  // premultiplied, as the pipeline keeps it
    // Shrinking: libwebp's own rescaler (area-averaging) works row by row as it decodes, so the full
    // image is never converted to RGB or held (as vipsthumbnail does too).
    int shrink = options->shrink > 1 ? options->shrink : 1;
    if (shrink > 1) {
        config.options.use_scaling = 1;
        config.options.scaled_width = (info->width + shrink - 1) / shrink;
        config.options.scaled_height = (info->height + shrink - 1) / shrink;
    }
    WebPIDecoder *decoder = WebPIDecode(NULL, 0, &config);
    if (!decoder) return attache_fail(options, ATTACHE_ERR_NOMEM, "out of memory");
    VP8StatusCode status = VP8_STATUS_SUSPENDED;
    size_t given = 0;
    while (status == VP8_STATUS_SUSPENDED && given < length) {
        size_t slice = length - given < SLICE ? length - given : SLICE;
        status = WebPIAppend(decoder, data + given, slice);
        given += slice;
        if (attache_should_abort(options)) {
            WebPIDelete(decoder);
            WebPFreeDecBuffer(&config.output);
            return attache_fail(options, ATTACHE_ERR_ABORTED, "aborted");
        }
    }
    WebPIDelete(decoder);
    attache_status result;
    if (status == VP8_STATUS_OK) {
        const WebPRGBABuffer *rgba = &config.output.u.RGBA;
        result = attache_shrink_buffer(rgba->rgba, config.output.width, config.output.height, (size_t)rgba->stride,
                                       has_alpha ? 4 : 3, 0, config.options.use_scaling ? 1 : shrink, out);
        if (result != ATTACHE_OK) attache_fail(options, result, "out of memory");
    } else if (status == VP8_STATUS_SUSPENDED || status == VP8_STATUS_NOT_ENOUGH_DATA) {
        result = attache_fail(options, ATTACHE_ERR_INVALID, "WebP is cut short");
    } else if (status == VP8_STATUS_OUT_OF_MEMORY) {
        result = attache_fail(options, ATTACHE_ERR_NOMEM, "out of memory");
    } else {
        result = attache_fail(options, ATTACHE_ERR_INVALID, "WebP bitstream does not decode");
    }
    WebPFreeDecBuffer(&config.output);
    return result;
}

typedef struct {
    attache_frames base;
    WebPAnimDecoder *decoder;
    int width, height, previous_ms;
} webp_frames;

static attache_status webp_next(attache_frames *frames, attache_decode_options *options, attache_image *out, int *duration_ms) {
    webp_frames *f = (webp_frames *)frames;
    if (!WebPAnimDecoderHasMoreFrames(f->decoder)) return ATTACHE_ERR_INVALID;  // the end: no message
    if (attache_should_abort(options)) return attache_fail(options, ATTACHE_ERR_ABORTED, "aborted");
    uint8_t *canvas;
    int timestamp;
    if (!WebPAnimDecoderGetNext(f->decoder, &canvas, &timestamp))
        return attache_fail(options, ATTACHE_ERR_INVALID, "a WebP frame does not decode");
    *duration_ms = timestamp - f->previous_ms;
    f->previous_ms = timestamp;
    // MODE_rgbA: the canvas is premultiplied already.
    attache_status status = attache_shrink_buffer(canvas, f->width, f->height, (size_t)f->width * 4, 4, 0, options->shrink, out);
    return status == ATTACHE_OK ? ATTACHE_OK : attache_fail(options, status, "out of memory");
}

static void webp_close(attache_frames *frames) {
    webp_frames *f = (webp_frames *)frames;
    WebPAnimDecoderDelete(f->decoder);
    free(f);
}

attache_status attache_webp_frames_open(const uint8_t *data, size_t length, attache_decode_options *options, attache_frames **out) {
    options->message[0] = 0;
    *out = NULL;
    WebPAnimDecoderOptions settings;
    if (!WebPAnimDecoderOptionsInit(&settings)) return attache_fail(options, ATTACHE_ERR_UNSUPPORTED, "libwebpdemux version mismatch");
    settings.color_mode = MODE_rgbA;
    settings.use_threads = 0;
    WebPData whole = { data, length };
    webp_frames *f = calloc(1, sizeof *f);
    if (!f) return attache_fail(options, ATTACHE_ERR_NOMEM, "out of memory");
    f->decoder = WebPAnimDecoderNew(&whole, &settings);  // parses the whole container, frames stay undecoded
    WebPAnimInfo info;
    if (!f->decoder || !WebPAnimDecoderGetInfo(f->decoder, &info)) {
        if (f->decoder) WebPAnimDecoderDelete(f->decoder);
        free(f);
        return attache_fail(options, ATTACHE_ERR_INVALID, "animated WebP does not parse (cut short?)");
    }
    if ((uint64_t)info.canvas_width * info.canvas_height > options->max_pixels) {
        WebPAnimDecoderDelete(f->decoder);
        free(f);
        return attache_fail(options, ATTACHE_ERR_LIMITS, "WebP canvas exceeds the pixel limit");
    }
    keep_icc(data, length, options);
    f->width = (int)info.canvas_width;
    f->height = (int)info.canvas_height;
    f->base.next = webp_next;
    f->base.close = webp_close;
    *out = &f->base;
    return ATTACHE_OK;
}

attache_status attache_webp_decode(const uint8_t *data, size_t length, attache_decode_options *options, attache_image *out) {
    memset(out, 0, sizeof *out);
    attache_image_info info;
    attache_status status = attache_webp_info(data, length, options, &info);
    if (status != ATTACHE_OK) return status;
    if ((uint64_t)info.width * info.height > options->max_pixels)
        return attache_fail(options, ATTACHE_ERR_LIMITS, "WebP exceeds the pixel limit");
    if (info.frames > 1) {  // the first frame, composited
        attache_frames *frames;
        status = attache_webp_frames_open(data, length, options, &frames);
        if (status != ATTACHE_OK) return status;
        int duration;
        status = attache_frames_next(frames, options, out, &duration);
        attache_frames_close(frames);
        return status;
    }
    keep_icc(data, length, options);
    return decode_still(data, length, &info, options, out);
}
