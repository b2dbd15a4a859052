// libjxl, for JPEG XL: the first frame (an animation becomes a still of it), 8-bit, with libjxl
// applying the orientation. No parallel runner: one thread, which is what the decoder sandbox's
// filter allows; like libheif, a decode is stopped by killing its helper, not from inside.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jxl/decode.h>
#include "modern_loader.h"
#include "frames.h"
#include "shrink.h"

static int is_srgb(const JxlColorEncoding *c) {
    return c->color_space == JXL_COLOR_SPACE_RGB && c->white_point == JXL_WHITE_POINT_D65 &&
           c->primaries == JXL_PRIMARIES_SRGB && c->transfer_function == JXL_TRANSFER_FUNCTION_SRGB;
}

static void keep_icc(JxlDecoder *decoder, attache_decode_options *options) {
    JxlColorEncoding encoding;
    if (M(JxlDecoderGetColorAsEncodedProfile)(decoder, NULL, JXL_COLOR_PROFILE_TARGET_DATA, &encoding) == JXL_DEC_SUCCESS &&
        is_srgb(&encoding))
        return;  // the default a device assumes: no profile needed
    size_t size = 0;
    if (M(JxlDecoderGetICCProfileSize)(decoder, NULL, JXL_COLOR_PROFILE_TARGET_DATA, &size) != JXL_DEC_SUCCESS ||
        size == 0 || size > (16u << 20))
        return;
    uint8_t *icc = malloc(size);
    if (icc && M(JxlDecoderGetColorAsICCProfile)(decoder, NULL, JXL_COLOR_PROFILE_TARGET_DATA, icc, size) == JXL_DEC_SUCCESS) {
        options->icc = icc;
        options->icc_length = size;
    } else {
        free(icc);
    }
}

// Runs the decoder to the first frame (`out` set) or to the basic info only (`out` NULL).
static attache_status run(const uint8_t *data, size_t length, attache_decode_options *options, attache_image_info *info, attache_image *out) {
    options->message[0] = 0;
    memset(info, 0, sizeof *info);
    if (out) memset(out, 0, sizeof *out);
    if (!attache_modern_load(ATTACHE_LIB_JXL, options->message, sizeof options->message)) return ATTACHE_ERR_UNSUPPORTED;
    JxlDecoder *decoder = M(JxlDecoderCreate)(NULL);
    if (!decoder) return attache_fail(options, ATTACHE_ERR_NOMEM, "out of memory");
    int events = JXL_DEC_BASIC_INFO | (out ? JXL_DEC_COLOR_ENCODING | JXL_DEC_FULL_IMAGE : 0);
    attache_status status = ATTACHE_ERR_INVALID;
    uint8_t *pixels = NULL;
    JxlBasicInfo basic;
    JxlPixelFormat format = { 4, JXL_TYPE_UINT8, JXL_NATIVE_ENDIAN, 0 };
    if (M(JxlDecoderSubscribeEvents)(decoder, events) != JXL_DEC_SUCCESS ||
        M(JxlDecoderSetInput)(decoder, data, length) != JXL_DEC_SUCCESS) {
        status = attache_fail(options, ATTACHE_ERR_INVALID, "JPEG XL decoder refused the input");
        goto done;
    }
    M(JxlDecoderCloseInput)(decoder);
    for (;;) {
        JxlDecoderStatus event = M(JxlDecoderProcessInput)(decoder);
        if (event == JXL_DEC_ERROR) { status = attache_fail(options, ATTACHE_ERR_INVALID, "JPEG XL does not decode"); break; }
        if (event == JXL_DEC_NEED_MORE_INPUT) { status = attache_fail(options, ATTACHE_ERR_INVALID, "JPEG XL is cut short"); break; }
        if (event == JXL_DEC_SUCCESS) { status = attache_fail(options, ATTACHE_ERR_INVALID, "JPEG XL has no image"); break; }
        if (event == JXL_DEC_BASIC_INFO) {
            if (M(JxlDecoderGetBasicInfo)(decoder, &basic) != JXL_DEC_SUCCESS) { status = attache_fail(options, ATTACHE_ERR_INVALID, "JPEG XL header does not parse"); break; }
            int turned = basic.orientation >= JXL_ORIENT_TRANSPOSE;
            info->width = (int)(turned ? basic.ysize : basic.xsize);
            info->height = (int)(turned ? basic.xsize : basic.ysize);
            info->has_alpha = basic.alpha_bits > 0;
            info->frames = 1;
            info->orientation = 1;
            if (info->width <= 0 || info->height <= 0) { status = attache_fail(options, ATTACHE_ERR_INVALID, "JPEG XL declares no pixels"); break; }
            if ((uint64_t)basic.xsize * basic.ysize > options->max_pixels) {
                status = attache_fail(options, ATTACHE_ERR_LIMITS, "JPEG XL exceeds the pixel limit");
                break;
            }
            if (!out) { status = ATTACHE_OK; break; }
            format.num_channels = info->has_alpha ? 4 : 3;
        } else if (event == JXL_DEC_COLOR_ENCODING) {
            keep_icc(decoder, options);
        } else if (event == JXL_DEC_NEED_IMAGE_OUT_BUFFER) {
            size_t size = 0;
            if (M(JxlDecoderImageOutBufferSize)(decoder, &format, &size) != JXL_DEC_SUCCESS ||
                !(pixels = malloc(size)) || M(JxlDecoderSetImageOutBuffer)(decoder, &format, pixels, size) != JXL_DEC_SUCCESS) {
                status = attache_fail(options, pixels ? ATTACHE_ERR_INVALID : ATTACHE_ERR_NOMEM, "JPEG XL output buffer");
                break;
            }
        } else if (event == JXL_DEC_FULL_IMAGE) {
            if (attache_should_abort(options)) { status = attache_fail(options, ATTACHE_ERR_ABORTED, "aborted"); break; }
            int channels = (int)format.num_channels;
            status = attache_shrink_buffer(pixels, info->width, info->height, (size_t)info->width * channels, channels,
                                           channels == 4 && !basic.alpha_premultiplied, options->shrink, out);
            if (status != ATTACHE_OK) attache_fail(options, status, "out of memory");
            break;
        }
    }
done:
    free(pixels);
    M(JxlDecoderDestroy)(decoder);
    return status;
}

attache_status attache_jxl_info(const uint8_t *data, size_t length, attache_decode_options *options, attache_image_info *info) {
    return run(data, length, options, info, NULL);
}

attache_status attache_jxl_decode(const uint8_t *data, size_t length, attache_decode_options *options, attache_image *out) {
    attache_image_info info;
    return run(data, length, options, &info, out);
}
