// libpng: decode with user and chunk limits, rows streamed into the box shrinker; encode to memory.
// libpng reports errors by longjmp to png_jmpbuf, which never leaves this file.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <png.h>
#include "attache_codecs.h"
#include "shrink.h"
#include "release.h"
#include "png_inflate.h"

typedef struct {
    const uint8_t *data;
    size_t length;
    size_t offset;
    attache_release release;
    attache_idat_feed *feed;  // once set, libpng reads the image data from it (png_inflate.h)
    char feed_message[160];
} reader;

typedef struct {
    char *message;
} error_context;

static void read_data(png_structp png, png_bytep out, png_size_t count) {
    reader *r = png_get_io_ptr(png);
    if (r->feed) {
        if (attache_idat_feed_read(r->feed, out, count, r->feed_message) != 0) png_error(png, r->feed_message);
        return;
    }
    if (count > r->length - r->offset) png_error(png, "truncated PNG");
    memcpy(out, r->data + r->offset, count);
    r->offset += count;
    attache_release_behind(&r->release, r->offset);
}

static void on_error(png_structp png, png_const_charp text) {
    error_context *ctx = png_get_error_ptr(png);
    if (ctx && ctx->message) snprintf(ctx->message, 160, "%s", text);
    png_longjmp(png, 1);
}

static void on_warning(png_structp png, png_const_charp text) {
    (void)png; (void)text;  // ancillary problems (bad gamma, text chunks) do not invalidate pixels
}

attache_status attache_png_decode(const uint8_t *data, size_t length, attache_decode_options *options, attache_image *out) {
    reader r = { data, length, 0, { data, options->release_behind, 0 }, NULL, { 0 } };
    attache_idat_feed *volatile feed = NULL;
    error_context ctx = { options->message };
    attache_shrinker shrinker;
    volatile int shrinker_live = 0;
    volatile attache_status status = ATTACHE_ERR_INVALID;
    uint8_t *volatile full = NULL;
    attache_shrink_relay *volatile relay = NULL;
    png_infop info = NULL;
    memset(&shrinker, 0, sizeof shrinker);
    memset(out, 0, sizeof *out);
    options->message[0] = 0;

    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &ctx, on_error, on_warning);
    if (!png) return ATTACHE_ERR_NOMEM;
    info = png_create_info_struct(png);
    if (!info) {
        png_destroy_read_struct(&png, NULL, NULL);
        return ATTACHE_ERR_NOMEM;
    }
    if (setjmp(png_jmpbuf(png))) {
        if (feed) attache_idat_feed_stop(feed);  // its thread is out of `data` before the caller frees it
        png_destroy_read_struct(&png, &info, NULL);
        if (relay) attache_shrink_relay_stop(relay);  // its thread is out of the shrinker before it is freed
        if (shrinker_live) attache_shrinker_free(&shrinker);
        free(full);
        return status;
    }
    png_set_user_limits(png, 100000, 100000);
    png_set_chunk_cache_max(png, 1000);
    png_set_chunk_malloc_max(png, 8 * 1024 * 1024);
    // Every IDAT chunk's CRC-32 is still checked: a corrupt stream is refused by that. zlib's
    // Adler-32 over the inflated image checks the same bytes again, after inflate, and was 6% of
    // a 9 MP PNG's render (Chromium's decoder skips it for the same reason).
    png_set_option(png, PNG_IGNORE_ADLER32, PNG_OPTION_ON);
    png_set_read_fn(png, &r, read_data);
    png_read_info(png, info);
    // The rows as stored: one filter byte each, then the pixels at the file's depth.
    size_t stored_rows = (png_get_rowbytes(png, info) + 1) * (size_t)png_get_image_height(png, info);
    png_charp icc_name;
    int icc_compression;
    png_bytep icc;
    png_uint_32 icc_length;
    if (png_get_iCCP(png, info, &icc_name, &icc_compression, &icc, &icc_length) && icc_length > 0 && !options->icc) {
        options->icc = malloc(icc_length);  // carried into the copies
        if (options->icc) {
            memcpy(options->icc, icc, icc_length);
            options->icc_length = icc_length;
        }
    }

    png_uint_32 width = png_get_image_width(png, info), height = png_get_image_height(png, info);
    if ((uint64_t)width * height > options->max_pixels) {
        status = ATTACHE_ERR_LIMITS;
        snprintf(options->message, 160, "%ux%u pixels exceed the limit", width, height);
        ctx.message = NULL;
        png_error(png, "limits");
    }
    int color = png_get_color_type(png, info);
    if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
    if (color == PNG_COLOR_TYPE_GRAY && png_get_bit_depth(png, info) < 8) png_set_expand_gray_1_2_4_to_8(png);
    if (png_get_valid(png, info, PNG_INFO_tRNS)) png_set_tRNS_to_alpha(png);
    if (png_get_bit_depth(png, info) == 16) png_set_scale_16(png);
    if (color == PNG_COLOR_TYPE_GRAY || color == PNG_COLOR_TYPE_GRAY_ALPHA) png_set_gray_to_rgb(png);
    int passes = png_set_interlace_handling(png);
    png_read_update_info(png, info);
    int channels = png_get_channels(png, info);
    if (channels != 3 && channels != 4) {
        snprintf(options->message, 160, "unexpected channel count %d", channels);
        ctx.message = NULL;
        png_error(png, "channels");
    }
    if (!attache_shrinker_init(&shrinker, (int)width, (int)height, channels, options->shrink, 1)) {
        status = ATTACHE_ERR_NOMEM;
        png_error(png, "out of memory");
    }
    shrinker_live = 1;
    attache_shrinker_watch(&shrinker, options->rows);  // a resampler may take rows as they are finished
    size_t stride = png_get_rowbytes(png, info);
    if (passes > 1) {
        // Interlaced: every pass touches every row, so the whole image has to be held once.
        full = malloc(stride * height);
        if (!full) { status = ATTACHE_ERR_NOMEM; png_error(png, "out of memory"); }
        for (int pass = 0; pass < passes; pass++) {
            for (png_uint_32 y = 0; y < height; y++) png_read_row(png, full + stride * y, NULL);
            if (options->abort_fn && options->abort_fn(options->abort_context)) {
                status = ATTACHE_ERR_ABORTED;
                png_error(png, "aborted");
            }
        }
        for (png_uint_32 y = 0; y < height; y++) attache_shrinker_push(&shrinker, full + stride * y);
    } else {
        // The inflate gets a thread of its own: libpng's loop here copies and unfilters.
        // libpng read up to the first IDAT chunk's data; it does not compute the CRCs of the
        // chunks made for it (the feed checks the real ones).
        if ((feed = attache_idat_feed_start(data, length, r.offset, stored_rows, &r.release))) {
            r.feed = feed;
            png_set_crc_action(png, PNG_CRC_QUIET_USE, PNG_CRC_DEFAULT);
        }
        // When the rows go on to a resampler on another thread (attache_decode_resized), the box
        // shrink gets a thread too, unless the feed has one: this one then only inflates and
        // unfilters. (Inflate, unfilter, shrink and resample on four threads took a 9 MP PNG's
        // render to 94 ms on two cores; with the shrink here beside the unfilter, 79 ms.)
        if (options->rows && !feed) relay = attache_shrink_relay_start(&shrinker, stride);
        if (!relay) {
            full = malloc(stride);
            if (!full) { status = ATTACHE_ERR_NOMEM; png_error(png, "out of memory"); }
        }
        for (png_uint_32 y = 0; y < height; y++) {
            if (relay) {
                png_read_row(png, attache_shrink_relay_slot(relay), NULL);
                attache_shrink_relay_commit(relay);
            } else {
                png_read_row(png, full, NULL);
                attache_shrinker_push(&shrinker, full);
            }
            if ((y & 31) == 31 && options->abort_fn && options->abort_fn(options->abort_context)) {
                status = ATTACHE_ERR_ABORTED;
                png_error(png, "aborted");
            }
        }
        if (relay) {
            attache_shrink_relay_stop(relay);
            relay = NULL;
        }
    }
    png_read_end(png, NULL);
    if (feed) {
        attache_idat_feed_stop(feed);
        feed = NULL;
    }
    png_destroy_read_struct(&png, &info, NULL);
    attache_shrinker_finish(&shrinker, out);
    free(full);
    return ATTACHE_OK;
}

typedef struct {
    uint8_t *data;
    size_t length;
    size_t capacity;
    int failed;
} writer;

static void write_data(png_structp png, png_bytep in, png_size_t count) {
    writer *w = png_get_io_ptr(png);
    if (w->length + count > w->capacity) {
        size_t capacity = w->capacity ? w->capacity * 2 : 65536;
        while (capacity < w->length + count) capacity *= 2;
        uint8_t *grown = realloc(w->data, capacity);
        if (!grown) { w->failed = 1; png_error(png, "out of memory"); }
        w->data = grown;
        w->capacity = capacity;
    }
    memcpy(w->data + w->length, in, count);
    w->length += count;
}

static void flush_data(png_structp png) { (void)png; }

attache_status attache_png_encode(const attache_image *image, const uint8_t *icc, size_t icc_length,
                                  uint8_t **out, size_t *out_length, char message[160]) {
    writer w = { NULL, 0, 0, 0 };
    error_context ctx = { message };
    *out = NULL;
    *out_length = 0;
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &ctx, on_error, on_warning);
    if (!png) return ATTACHE_ERR_NOMEM;
    png_infop info = png_create_info_struct(png);
    if (!info) {
        png_destroy_write_struct(&png, NULL);
        return ATTACHE_ERR_NOMEM;
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        free(w.data);
        return w.failed ? ATTACHE_ERR_NOMEM : ATTACHE_ERR_INVALID;
    }
    png_set_write_fn(png, &w, write_data, flush_data);
    png_set_IHDR(png, info, (png_uint_32)image->width, (png_uint_32)image->height, 8,
                 image->channels == 4 ? PNG_COLOR_TYPE_RGB_ALPHA : PNG_COLOR_TYPE_RGB,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_set_compression_level(png, 6);
    // A profile libpng finds wrong is left out with a warning (benign), not an error: the pixels
    // are still good.
    png_set_benign_errors(png, 1);
    if (icc && icc_length > 0) png_set_iCCP(png, info, "icc", PNG_COMPRESSION_TYPE_BASE, icc, (png_uint_32)icc_length);
    png_write_info(png, info);
    size_t stride = (size_t)image->width * image->channels;
    for (int y = 0; y < image->height; y++) png_write_row(png, image->pixels + stride * y);
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    *out = w.data;
    *out_length = w.length;
    return ATTACHE_OK;
}
