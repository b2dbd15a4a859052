// A baseline JPEG encoder with optimised Huffman tables, fed a row at a time (jpeg_writer.h), and
// the whole-image encode on top of it.
#include <stdlib.h>
#include <string.h>
#include "jpeg_errors.h"
#include "jpeg_writer.h"

struct attache_jpeg_writer {
    struct jpeg_compress_struct cinfo;
    attache_jpeg_errors err;
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
    w->cinfo.err = attache_jpeg_errors_init(&w->err, w->message);
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
