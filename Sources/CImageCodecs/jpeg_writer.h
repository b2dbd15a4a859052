// A baseline JPEG encoder (optimised Huffman tables) that takes its rows one at a time, so that a
// display copy is encoded while its rows are being made (display.c): at the end only the Huffman
// pass over the kept coefficients is left, instead of the whole encode.
#ifndef ATTACHE_JPEG_WRITER_H
#define ATTACHE_JPEG_WRITER_H
#include "attache_codecs.h"

typedef struct attache_jpeg_writer attache_jpeg_writer;

/// An RGB image of `width` x `height` at `quality`, with the profile when there is one. `*writer`
/// is set even on failure (NULL only when out of memory) and must be freed.
attache_status attache_jpeg_writer_begin(attache_jpeg_writer **writer, int width, int height, int quality,
                                         const uint8_t *icc, size_t icc_length);
/// The next row, `width` RGB pixels.
attache_status attache_jpeg_writer_row(attache_jpeg_writer *writer, const uint8_t *row);
/// After the last row: the file (malloc'd; attache_buffer_free).
attache_status attache_jpeg_writer_finish(attache_jpeg_writer *writer, uint8_t **out, size_t *out_length);
/// Why the last call failed.
const char *attache_jpeg_writer_message(const attache_jpeg_writer *writer);
void attache_jpeg_writer_free(attache_jpeg_writer *writer);
#endif
