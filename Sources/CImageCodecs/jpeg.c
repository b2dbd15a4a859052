// libjpeg-turbo (libjpeg API): decode with DCT scaling straight into the box shrinker (the
// encoder is jpeg_writer.c). Errors and warnings longjmp back to here (jpeg_errors.h).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <jpeglib.h>
#include <jerror.h>
#include "attache_codecs.h"
#include "shrink.h"
#include "release.h"
#include "coefficients.h"
#include "jpeg_errors.h"

typedef struct {
    struct jpeg_progress_mgr base;
    attache_decode_options *options;
    attache_jpeg_errors *errors;
} progress_mgr;

static void on_progress(j_common_ptr cinfo) {
    progress_mgr *p = (progress_mgr *)cinfo->progress;
    if (!cinfo->is_decompressor) return;
    j_decompress_ptr d = (j_decompress_ptr)cinfo;
    if (p->options->max_scans > 0 && d->input_scan_number > p->options->max_scans) {
        p->errors->status = ATTACHE_ERR_LIMITS;
        snprintf(p->options->message, sizeof p->options->message, "more than %d progressive scans", p->options->max_scans);
        p->errors->message = NULL;
        longjmp(p->errors->jump, 1);
    }
    if (p->options->abort_fn && p->options->abort_fn(p->options->abort_context)) {
        p->errors->status = ATTACHE_ERR_ABORTED;
        p->errors->message = NULL;
        longjmp(p->errors->jump, 1);
    }
}

// The file handed to libjpeg a megabyte at a time (as jpeg_mem_src hands it whole), so that what
// it has read can be given back (options->release_behind); its end as jpeg_mem_src ends it.
typedef struct {
    struct jpeg_source_mgr base;
    const uint8_t *data;
    size_t length, offset;  // offset: where the next megabyte starts
    attache_release release;
} chunk_source;

static void source_init(j_decompress_ptr cinfo) { (void)cinfo; }
static void source_term(j_decompress_ptr cinfo) { (void)cinfo; }

static boolean source_fill(j_decompress_ptr cinfo) {
    static const JOCTET eoi[2] = { 0xFF, JPEG_EOI };
    chunk_source *s = (chunk_source *)cinfo->src;
    // libjpeg asks for more only once it has used every byte handed over: all before `offset`.
    attache_release_behind(&s->release, s->offset);
    if (s->offset >= s->length) {  // a truncated file: a warning (an error here), then an end marker
        WARNMS(cinfo, JWRN_JPEG_EOF);
        s->base.next_input_byte = eoi;
        s->base.bytes_in_buffer = 2;
        return TRUE;
    }
    size_t n = s->length - s->offset < ATTACHE_RELEASE_STEP ? s->length - s->offset : ATTACHE_RELEASE_STEP;
    s->base.next_input_byte = s->data + s->offset;
    s->base.bytes_in_buffer = n;
    s->offset += n;
    return TRUE;
}

static void source_skip(j_decompress_ptr cinfo, long count) {
    chunk_source *s = (chunk_source *)cinfo->src;
    if (count <= 0) return;
    while (count > (long)s->base.bytes_in_buffer) {
        count -= (long)s->base.bytes_in_buffer;
        source_fill(cinfo);
    }
    s->base.next_input_byte += count;
    s->base.bytes_in_buffer -= (size_t)count;
}

static void cmyk_to_rgb(const uint8_t *in, uint8_t *out, int width, int inverted) {
    for (int x = 0; x < width; x++) {
        int c = in[x * 4], m = in[x * 4 + 1], y = in[x * 4 + 2], k = in[x * 4 + 3];
        if (!inverted) { c = 255 - c; m = 255 - m; y = 255 - y; k = 255 - k; }
        out[x * 3] = (uint8_t)(c * k / 255);
        out[x * 3 + 1] = (uint8_t)(m * k / 255);
        out[x * 3 + 2] = (uint8_t)(y * k / 255);
    }
}

attache_status attache_jpeg_decode(const uint8_t *data, size_t length, attache_decode_options *options, attache_image *out) {
    struct jpeg_decompress_struct cinfo;
    attache_jpeg_errors err;
    progress_mgr progress;
    attache_shrinker shrinker;
    uint8_t *volatile row = NULL;
    uint8_t *volatile rgb = NULL;
    volatile int shrinker_live = 0;
    memset(&shrinker, 0, sizeof shrinker);
    memset(out, 0, sizeof *out);
    options->message[0] = 0;

    cinfo.err = attache_jpeg_errors_init(&err, options->message);
    if (setjmp(err.jump)) {
        attache_status status = err.status;
        jpeg_destroy_decompress(&cinfo);
        if (shrinker_live) attache_shrinker_free(&shrinker);
        free(row);
        free(rgb);
        return status;
    }
    jpeg_create_decompress(&cinfo);
    if (options->max_memory > 0) cinfo.mem->max_memory_to_use = options->max_memory;
    progress.base.progress_monitor = on_progress;
    progress.options = options;
    progress.errors = &err;
    cinfo.progress = &progress.base;

    chunk_source source = {
        .base = { .init_source = source_init, .fill_input_buffer = source_fill, .skip_input_data = source_skip,
                  .resync_to_restart = jpeg_resync_to_restart, .term_source = source_term },
        .data = data, .length = length, .release = { data, options->release_behind, 0 },
    };
    cinfo.src = &source.base;
    jpeg_save_markers(&cinfo, JPEG_APP0 + 2, 0xFFFF);  // ICC profiles (APP2), carried into the copies
    jpeg_read_header(&cinfo, TRUE);
    int cmyk = cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK;
    if (!cmyk) {  // a CMYK profile does not describe the RGB made from it
        JOCTET *icc = NULL;
        unsigned int icc_length = 0;
        if (jpeg_read_icc_profile(&cinfo, &icc, &icc_length)) {
            options->icc = icc;
            options->icc_length = icc_length;
        }
    }
    cinfo.out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
    // libjpeg-turbo scales by any n/8 inside the IDCT: the entropy decoding is the same, the
    // IDCT, colour conversion and everything after work on the smaller image.
    cinfo.scale_num = options->scale_eighths > 0 && options->scale_eighths < 8 ? (unsigned)options->scale_eighths : 8;
    cinfo.scale_denom = 8;
    cinfo.dct_method = JDCT_ISLOW;
    jpeg_calc_output_dimensions(&cinfo);
    if ((uint64_t)cinfo.output_width * cinfo.output_height > options->max_pixels) {
        err.status = ATTACHE_ERR_LIMITS;
        snprintf(options->message, sizeof options->message, "%ux%u decoded pixels exceed the limit",
                 cinfo.output_width, cinfo.output_height);
        err.message = NULL;
        longjmp(err.jump, 1);
    }
    // A progressive file's coefficients, kept by libjpeg to its last scan: only those the scaled
    // IDCT reads keep their values (a 9 MP 4:4:4 photo at 3/8: 11 MB instead of 55).
    if (!options->keep_all_coefficients) attache_coefficients_install(&cinfo);
    jpeg_start_decompress(&cinfo);

    int width = (int)cinfo.output_width;
    if (!attache_shrinker_init(&shrinker, width, (int)cinfo.output_height, 3, options->shrink, 0)) {
        err.status = ATTACHE_ERR_NOMEM;
        err.message = NULL;
        longjmp(err.jump, 1);
    }
    shrinker_live = 1;
    attache_shrinker_watch(&shrinker, options->rows);  // a resampler may take rows as they are finished
    row = malloc((size_t)width * cinfo.output_components);
    if (cmyk) rgb = malloc((size_t)width * 3);
    if (!row || (cmyk && !rgb)) {
        err.status = ATTACHE_ERR_NOMEM;
        err.message = NULL;
        longjmp(err.jump, 1);
    }
    int inverted = cinfo.saw_Adobe_marker;
    while (cinfo.output_scanline < cinfo.output_height) {
        JSAMPROW rows[1] = { row };
        jpeg_read_scanlines(&cinfo, rows, 1);
        if (cmyk) {
            cmyk_to_rgb(row, rgb, width, inverted);
            attache_shrinker_push(&shrinker, rgb);
        } else {
            attache_shrinker_push(&shrinker, row);
        }
        if ((cinfo.output_scanline & 31) == 0 && options->abort_fn && options->abort_fn(options->abort_context)) {
            err.status = ATTACHE_ERR_ABORTED;
            err.message = NULL;
            longjmp(err.jump, 1);
        }
    }
    jpeg_finish_decompress(&cinfo);
    jpeg_destroy_decompress(&cinfo);
    attache_shrinker_finish(&shrinker, out);
    free(row);
    free(rgb);
    return ATTACHE_OK;
}
