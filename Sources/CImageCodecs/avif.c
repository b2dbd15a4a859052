// libavif, for AVIF stills and image sequences (libheif 1.15 has no sequence API). One thread
// (dav1d then starts none, which the decoder sandbox's filter would refuse), its own size and
// count limits set from ours. libavif does not apply irot/imir: they are handed back as an EXIF
// orientation, applied with the rest of the pipeline's orientation handling.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <avif/avif.h>
#include "modern_loader.h"
#include "frames.h"
#include "shrink.h"

typedef struct {
    attache_frames base;
    avifDecoder *decoder;
    avifRGBImage rgb;
} avif_frames;

static attache_status avif_failed(attache_decode_options *options, avifResult result, const char *what) {
    attache_status status = ATTACHE_ERR_INVALID;
    if (result == AVIF_RESULT_OUT_OF_MEMORY) status = ATTACHE_ERR_NOMEM;
    else if (result == AVIF_RESULT_NO_CODEC_AVAILABLE || result == AVIF_RESULT_NOT_IMPLEMENTED) status = ATTACHE_ERR_UNSUPPORTED;
    snprintf(options->message, sizeof options->message, "AVIF %s: %s", what,
             result == AVIF_RESULT_TRUNCATED_DATA ? "cut short" : M(avifResultToString)(result));
    return status;
}

// irot (anticlockwise quarter turns), then imir (mode 0: top-bottom, 1: left-right), as EXIF 1-8.
static int orientation(const avifImage *image) {
    static const int table[4][3] = { { 1, 4, 2 }, { 8, 5, 7 }, { 3, 2, 4 }, { 6, 7, 5 } };
    int angle = image->transformFlags & AVIF_TRANSFORM_IROT ? image->irot.angle & 3 : 0;
    int mirror = image->transformFlags & AVIF_TRANSFORM_IMIR ? 1 + (image->imir.mode & 1) : 0;
    return table[angle][mirror];
}

static attache_status open_decoder(const uint8_t *data, size_t length, attache_decode_options *options, avifDecoder **out) {
    if (!attache_modern_load(ATTACHE_LIB_AVIF, options->message, sizeof options->message)) return ATTACHE_ERR_UNSUPPORTED;
    avifDecoder *decoder = M(avifDecoderCreate)();
    if (!decoder) return attache_fail(options, ATTACHE_ERR_NOMEM, "out of memory");
    decoder->maxThreads = 1;
    // libavif's own limits, set explicitly: a file past them does not parse (invalid). Ours, lower,
    // are checked on what parsing found, so that a file between the two is told apart as over a
    // limit.
    decoder->imageSizeLimit = AVIF_DEFAULT_IMAGE_SIZE_LIMIT;
    decoder->imageDimensionLimit = AVIF_DEFAULT_IMAGE_DIMENSION_LIMIT;
    decoder->imageCountLimit = AVIF_DEFAULT_IMAGE_COUNT_LIMIT;
    decoder->ignoreExif = AVIF_TRUE;
    decoder->ignoreXMP = AVIF_TRUE;
    avifResult result = M(avifDecoderSetIOMemory)(decoder, data, length);
    if (result == AVIF_RESULT_OK) result = M(avifDecoderParse)(decoder);
    if (result != AVIF_RESULT_OK) {
        M(avifDecoderDestroy)(decoder);
        return avif_failed(options, result, "does not parse");
    }
    if ((uint64_t)decoder->image->width * decoder->image->height > options->max_pixels) {
        M(avifDecoderDestroy)(decoder);
        return attache_fail(options, ATTACHE_ERR_LIMITS, "AVIF exceeds the pixel limit");
    }
    if (options->max_frames > 0 && decoder->imageCount > options->max_frames) {
        M(avifDecoderDestroy)(decoder);
        return attache_fail(options, ATTACHE_ERR_LIMITS, "AVIF has too many frames");
    }
    *out = decoder;
    return ATTACHE_OK;
}

attache_status attache_avif_info(const uint8_t *data, size_t length, attache_decode_options *options, attache_image_info *info) {
    options->message[0] = 0;
    memset(info, 0, sizeof *info);
    avifDecoder *decoder;
    attache_status status = open_decoder(data, length, options, &decoder);
    if (status != ATTACHE_OK) return status;
    info->width = (int)decoder->image->width;
    info->height = (int)decoder->image->height;
    info->has_alpha = decoder->alphaPresent;
    info->frames = decoder->imageCount > 0 ? decoder->imageCount : 1;
    info->orientation = orientation(decoder->image);
    M(avifDecoderDestroy)(decoder);
    if (info->width <= 0 || info->height <= 0) return attache_fail(options, ATTACHE_ERR_INVALID, "AVIF declares no pixels");
    return ATTACHE_OK;
}

static attache_status avif_next(attache_frames *frames, attache_decode_options *options, attache_image *out, int *duration_ms) {
    avif_frames *f = (avif_frames *)frames;
    if (attache_should_abort(options)) return attache_fail(options, ATTACHE_ERR_ABORTED, "aborted");
    avifResult result = M(avifDecoderNextImage)(f->decoder);
    if (result == AVIF_RESULT_NO_IMAGES_REMAINING) return ATTACHE_ERR_INVALID;  // the end: no message
    if (result != AVIF_RESULT_OK) return avif_failed(options, result, "frame does not decode");
    avifImage *image = f->decoder->image;
    if ((uint64_t)image->width * image->height > options->max_pixels)
        return attache_fail(options, ATTACHE_ERR_LIMITS, "AVIF frame exceeds the pixel limit");
    M(avifRGBImageFreePixels)(&f->rgb);
    M(avifRGBImageSetDefaults)(&f->rgb, image);
    int alpha = f->decoder->alphaPresent;
    // RGB without alpha, and premultiplied only with it: libavif's fast (libyuv) conversions.
    // Nearest chroma when the result is shrunk at least twice over anyway.
    f->rgb.format = alpha ? AVIF_RGB_FORMAT_RGBA : AVIF_RGB_FORMAT_RGB;
    f->rgb.depth = 8;
    f->rgb.alphaPremultiplied = alpha ? AVIF_TRUE : AVIF_FALSE;
    f->rgb.chromaUpsampling = options->shrink >= 2 ? AVIF_CHROMA_UPSAMPLING_FASTEST : AVIF_CHROMA_UPSAMPLING_AUTOMATIC;
    M(avifRGBImageAllocatePixels)(&f->rgb);
    if (!f->rgb.pixels) return attache_fail(options, ATTACHE_ERR_NOMEM, "out of memory");
    result = M(avifImageYUVToRGB)(image, &f->rgb);
    if (result != AVIF_RESULT_OK) return avif_failed(options, result, "colour conversion");
    *duration_ms = (int)(f->decoder->imageTiming.duration * 1000 + 0.5);
    attache_status status = attache_shrink_buffer(f->rgb.pixels, (int)f->rgb.width, (int)f->rgb.height, f->rgb.rowBytes,
                                                  alpha ? 4 : 3, 0, options->shrink, out);
    return status == ATTACHE_OK ? ATTACHE_OK : attache_fail(options, status, "out of memory");
}

static void avif_close(attache_frames *frames) {
    avif_frames *f = (avif_frames *)frames;
    M(avifRGBImageFreePixels)(&f->rgb);
    M(avifDecoderDestroy)(f->decoder);
    free(f);
}

attache_status attache_avif_frames_open(const uint8_t *data, size_t length, attache_decode_options *options, attache_frames **out) {
    options->message[0] = 0;
    *out = NULL;
    avif_frames *f = calloc(1, sizeof *f);
    if (!f) return attache_fail(options, ATTACHE_ERR_NOMEM, "out of memory");
    attache_status status = open_decoder(data, length, options, &f->decoder);
    if (status != ATTACHE_OK) {
        free(f);
        return status;
    }
    attache_keep_icc(options, f->decoder->image->icc.data, f->decoder->image->icc.size);
    f->base.next = avif_next;
    f->base.close = avif_close;
    *out = &f->base;
    return ATTACHE_OK;
}

attache_status attache_avif_decode(const uint8_t *data, size_t length, attache_decode_options *options, attache_image *out) {
    memset(out, 0, sizeof *out);
    attache_frames *frames;
    attache_status status = attache_avif_frames_open(data, length, options, &frames);
    if (status != ATTACHE_OK) return status;
    int duration;
    status = attache_frames_next(frames, options, out, &duration);
    if (status == ATTACHE_ERR_INVALID && !options->message[0]) attache_fail(options, status, "AVIF has no image");
    attache_frames_close(frames);
    return status;
}
