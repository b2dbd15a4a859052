// libheif, for HEIC: the primary image, with libheif applying its irot/imir/clap transformations
// (so it comes out upright) and converting 10-bit to 8. libheif cannot be interrupted mid-decode:
// its caller (the decoder sandbox) kills the helper at the deadline instead; in process, the
// result is dropped. Its own size limit is set from ours before anything is parsed.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libheif/heif.h>
#include "modern_loader.h"
#include "frames.h"
#include "shrink.h"

typedef struct {
    struct heif_context *context;
    struct heif_image_handle *handle;
} heif_file;

static void close_file(heif_file *file) {
    if (file->handle) M(heif_image_handle_release)(file->handle);
    if (file->context) M(heif_context_free)(file->context);
}

static attache_status heif_failed(attache_decode_options *options, struct heif_error error) {
    attache_status status = ATTACHE_ERR_INVALID;
    if (error.code == heif_error_Memory_allocation_error) status = ATTACHE_ERR_NOMEM;
    else if (error.code == heif_error_Unsupported_feature || error.code == heif_error_Unsupported_filetype) status = ATTACHE_ERR_UNSUPPORTED;
    else if (error.code == heif_error_Invalid_input && error.subcode == heif_suberror_Security_limit_exceeded) status = ATTACHE_ERR_LIMITS;
    snprintf(options->message, sizeof options->message, "HEIC: %s", error.message ? error.message : "does not decode");
    return status;
}

static attache_status open_file(const uint8_t *data, size_t length, attache_decode_options *options, heif_file *file) {
    memset(file, 0, sizeof *file);
    if (!attache_modern_load(ATTACHE_LIB_HEIF, options->message, sizeof options->message)) return ATTACHE_ERR_UNSUPPORTED;
    file->context = M(heif_context_alloc)();
    if (!file->context) return attache_fail(options, ATTACHE_ERR_NOMEM, "out of memory");
    // libheif's limit is on the longest edge; ours (pixels) is checked on the handle below.
    M(heif_context_set_maximum_image_size_limit)(file->context, 65535);
    struct heif_error error = M(heif_context_read_from_memory_without_copy)(file->context, data, length, NULL);
    if (error.code == heif_error_Ok) error = M(heif_context_get_primary_image_handle)(file->context, &file->handle);
    if (error.code != heif_error_Ok) {
        close_file(file);
        return heif_failed(options, error);
    }
    return ATTACHE_OK;
}

attache_status attache_heif_info(const uint8_t *data, size_t length, attache_decode_options *options, attache_image_info *info) {
    options->message[0] = 0;
    memset(info, 0, sizeof *info);
    heif_file file;
    attache_status status = open_file(data, length, options, &file);
    if (status != ATTACHE_OK) return status;
    // The size after transformations: a grid image counted whole, a rotated one as shown.
    info->width = M(heif_image_handle_get_width)(file.handle);
    info->height = M(heif_image_handle_get_height)(file.handle);
    info->has_alpha = M(heif_image_handle_has_alpha_channel)(file.handle);
    info->frames = 1;
    close_file(&file);
    if (info->width <= 0 || info->height <= 0) return attache_fail(options, ATTACHE_ERR_INVALID, "HEIC declares no pixels");
    return ATTACHE_OK;
}

attache_status attache_heif_decode(const uint8_t *data, size_t length, attache_decode_options *options, attache_image *out) {
    options->message[0] = 0;
    memset(out, 0, sizeof *out);
    heif_file file;
    attache_status status = open_file(data, length, options, &file);
    if (status != ATTACHE_OK) return status;
    int width = M(heif_image_handle_get_width)(file.handle), height = M(heif_image_handle_get_height)(file.handle);
    int ispe_width = M(heif_image_handle_get_ispe_width)(file.handle), ispe_height = M(heif_image_handle_get_ispe_height)(file.handle);
    if (width <= 0 || height <= 0 || (uint64_t)width * height > options->max_pixels ||
        (uint64_t)ispe_width * ispe_height > options->max_pixels) {
        close_file(&file);
        return attache_fail(options, ATTACHE_ERR_LIMITS, "HEIC exceeds the pixel limit");
    }
    if (M(heif_image_handle_get_color_profile_type)(file.handle) == heif_color_profile_type_prof ||
        M(heif_image_handle_get_color_profile_type)(file.handle) == heif_color_profile_type_rICC) {
        size_t size = M(heif_image_handle_get_raw_color_profile_size)(file.handle);
        uint8_t *icc = size > 0 && size < (16u << 20) ? malloc(size) : NULL;
        if (icc && M(heif_image_handle_get_raw_color_profile)(file.handle, icc).code == heif_error_Ok) {
            options->icc = icc;
            options->icc_length = size;
        } else {
            free(icc);
        }
    }
    int alpha = M(heif_image_handle_has_alpha_channel)(file.handle);
    struct heif_decoding_options *settings = M(heif_decoding_options_alloc)();
    if (!settings) {
        close_file(&file);
        return attache_fail(options, ATTACHE_ERR_NOMEM, "out of memory");
    }
    settings->convert_hdr_to_8bit = 1;
    struct heif_image *image = NULL;
    struct heif_error error = M(heif_decode_image)(file.handle, &image, heif_colorspace_RGB,
                                                alpha ? heif_chroma_interleaved_RGBA : heif_chroma_interleaved_RGB, settings);
    M(heif_decoding_options_free)(settings);
    if (error.code != heif_error_Ok) {
        close_file(&file);
        return heif_failed(options, error);
    }
    int stride = 0;
    const uint8_t *pixels = M(heif_image_get_plane_readonly)(image, heif_channel_interleaved, &stride);
    int w = M(heif_image_get_width)(image, heif_channel_interleaved), h = M(heif_image_get_height)(image, heif_channel_interleaved);
    if (!pixels || w <= 0 || h <= 0) status = attache_fail(options, ATTACHE_ERR_INVALID, "HEIC decoded to no pixels");
    else if (attache_should_abort(options)) status = attache_fail(options, ATTACHE_ERR_ABORTED, "aborted");
    else {
        status = attache_shrink_buffer(pixels, w, h, (size_t)stride, alpha ? 4 : 3, alpha, options->shrink, out);
        if (status != ATTACHE_OK) attache_fail(options, status, "out of memory");
    }
    M(heif_image_release)(image);
    close_file(&file);
    return status;
}
