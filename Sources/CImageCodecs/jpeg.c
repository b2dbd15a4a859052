// libjpeg-turbo (libjpeg API): decode with DCT scaling straight into the box shrinker, encode
// baseline with optimised Huffman tables. Errors and warnings longjmp back to here.
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
#include "jpeg_writer.h"

typedef struct {
    struct jpeg_error_mgr base;
    jmp_buf jump;
    char *message;
    attache_status status;
} error_mgr;

typedef struct {
    struct jpeg_progress_mgr base;
    attache_decode_options *options;
    error_mgr *errors;
} progress_mgr;

static void on_error(j_common_ptr cinfo) {
    error_mgr *err = (error_mgr *)cinfo->err;
    // libjpeg asks for a backing store (a temp file) when max_memory_to_use is not enough: that
    // is the memory limit speaking, not a corrupt file.
    int over_limit = cinfo->err->msg_code == JERR_NO_BACKING_STORE || cinfo->err->msg_code == JERR_OUT_OF_MEMORY;
    if (err->message) {
        // format_message writes up to JMSG_LENGTH_MAX (200) bytes; the caller's buffer is smaller.
        char text[JMSG_LENGTH_MAX];
        if (over_limit) snprintf(text, sizeof text, "needs more memory than the decoder limit");
        else (*cinfo->err->format_message)(cinfo, text);
        snprintf(err->message, sizeof ((attache_decode_options *)0)->message, "%s", text);
    }
    if (err->status == ATTACHE_OK) err->status = over_limit ? ATTACHE_ERR_LIMITS : ATTACHE_ERR_INVALID;
    longjmp(err->jump, 1);
}

// Warnings (corrupt data the library would paper over) are treated as errors.
static void on_message(j_common_ptr cinfo, int level) {
    if (level < 0) on_error(cinfo);
}

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
    error_mgr err;
    progress_mgr progress;
    attache_shrinker shrinker;
    uint8_t *volatile row = NULL;
    uint8_t *volatile rgb = NULL;
    volatile int shrinker_live = 0;
    memset(&shrinker, 0, sizeof shrinker);
    memset(out, 0, sizeof *out);
    options->message[0] = 0;

    cinfo.err = jpeg_std_error(&err.base);
    err.base.error_exit = on_error;
    err.base.emit_message = on_message;
    err.message = options->message;
    err.status = ATTACHE_OK;
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

struct attache_jpeg_writer {
    struct jpeg_compress_struct cinfo;
    error_mgr err;
    unsigned char *buffer;
    unsigned long size;
    char message[160];
};

// Each call that enters libjpeg sets its own jump: a longjmp must land in a frame still running.
#define WRITER_GUARD(w) \
    if (setjmp((w)->err.jump)) return (w)->err.status

attache_status attache_jpeg_writer_begin(attache_jpeg_writer **out, int width, int height, int quality,
                                         const uint8_t *icc, size_t icc_length) {
    attache_jpeg_writer *w = calloc(1, sizeof *w);
    *out = w;
    if (!w) return ATTACHE_ERR_NOMEM;
    w->cinfo.err = jpeg_std_error(&w->err.base);
    w->err.base.error_exit = on_error;
    w->err.base.emit_message = on_message;
    w->err.message = w->message;
    w->err.status = ATTACHE_OK;
    WRITER_GUARD(w);
    jpeg_create_compress(&w->cinfo);
    jpeg_mem_dest(&w->cinfo, &w->buffer, &w->size);
    w->cinfo.image_width = (JDIMENSION)width;
    w->cinfo.image_height = (JDIMENSION)height;
    w->cinfo.input_components = 3;
    w->cinfo.in_color_space = JCS_RGB;
    jpeg_set_defaults(&w->cinfo);
    jpeg_set_quality(&w->cinfo, quality, TRUE);
    w->cinfo.optimize_coding = TRUE;
    w->cinfo.write_JFIF_header = TRUE;
    jpeg_start_compress(&w->cinfo, TRUE);
    if (icc && icc_length > 0) jpeg_write_icc_profile(&w->cinfo, icc, (unsigned int)icc_length);
    return ATTACHE_OK;
}

attache_status attache_jpeg_writer_row(attache_jpeg_writer *w, const uint8_t *row) {
    WRITER_GUARD(w);
    JSAMPROW rows[1] = { (JSAMPROW)row };
    jpeg_write_scanlines(&w->cinfo, rows, 1);
    return ATTACHE_OK;
}

attache_status attache_jpeg_writer_finish(attache_jpeg_writer *w, uint8_t **out, size_t *out_length) {
    WRITER_GUARD(w);
    jpeg_finish_compress(&w->cinfo);
    *out = w->buffer;
    *out_length = w->size;
    w->buffer = NULL;
    return ATTACHE_OK;
}

const char *attache_jpeg_writer_message(const attache_jpeg_writer *w) { return w ? w->message : "out of memory"; }

void attache_jpeg_writer_free(attache_jpeg_writer *w) {
    if (!w) return;
    jpeg_destroy_compress(&w->cinfo);
    free(w->buffer);
    free(w);
}

attache_status attache_jpeg_encode(const attache_image *image, int quality, const uint8_t *icc, size_t icc_length,
                                   uint8_t **out, size_t *out_length, char message[160]) {
    *out = NULL;
    *out_length = 0;
    if (image->channels != 3) {
        snprintf(message, 160, "JPEG output needs RGB");
        return ATTACHE_ERR_UNSUPPORTED;
    }
    attache_jpeg_writer *w;
    attache_status status = attache_jpeg_writer_begin(&w, image->width, image->height, quality, icc, icc_length);
    for (int y = 0; status == ATTACHE_OK && y < image->height; y++)
        status = attache_jpeg_writer_row(w, image->pixels + (size_t)y * image->width * 3);
    if (status == ATTACHE_OK) status = attache_jpeg_writer_finish(w, out, out_length);
    if (status != ATTACHE_OK) snprintf(message, 160, "%s", attache_jpeg_writer_message(w));
    attache_jpeg_writer_free(w);
    return status;
}
