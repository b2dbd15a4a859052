// Box shrink for rows streamed out of a decoder: keeps one row of sums, so memory stays at the
// size of the output plus one accumulator row, whatever the size of the source.
#ifndef ATTACHE_SHRINK_H
#define ATTACHE_SHRINK_H
#include "attache_codecs.h"

typedef struct {
    int in_width, in_height, channels, factor;
    int out_width, out_height;
    uint32_t *sums;
    int rows_in_sums;
    int next_out_row;
    int premultiply;   // the rows are straight RGBA: premultiply before summing
    int weighted;      // premultiplied colour is summed as value × alpha, divided by 255 once per output value
    attache_image image;
    attache_rows *rows;  // told of each finished row (NULL: nobody reads them before the end)
    int ring;            // 0: `image` is the whole output; else a ring of this many rows (attache_rows)
} attache_shrinker;

int attache_shrinker_init(attache_shrinker *s, int in_width, int in_height, int channels, int factor, int premultiply);
/// Publishes the output rows to `rows` (may be NULL) as they are finished, from now on; keeps
/// only a ring of them when `rows` asks for one (attache_rows_ring_for).
void attache_shrinker_watch(attache_shrinker *s, attache_rows *rows);
void attache_shrinker_push(attache_shrinker *s, const uint8_t *row);
/// Flushes a partial last block and hands the image over (the shrinker no longer owns it).
void attache_shrinker_finish(attache_shrinker *s, attache_image *out);
void attache_shrinker_free(attache_shrinker *s);
/// A shrinker fed on a thread of its own: the decoder writes each row into a ring and goes on
/// decoding while the rows are shrunk. Between start and stop only the relay's thread touches
/// the shrinker.
typedef struct attache_shrink_relay attache_shrink_relay;
/// Starts the thread; NULL when it cannot (the caller pushes its rows itself).
attache_shrink_relay *attache_shrink_relay_start(attache_shrinker *s, size_t row_bytes);
/// Where the next row goes (waits while every slot holds a row not yet shrunk).
uint8_t *attache_shrink_relay_slot(attache_shrink_relay *relay);
/// That row is written.
void attache_shrink_relay_commit(attache_shrink_relay *relay);
/// Returns once every committed row is in the shrinker and the thread has ended; frees the relay.
void attache_shrink_relay_stop(attache_shrink_relay *relay);
/// A whole decoded buffer (the libraries that hand out an image at once) through a shrinker.
attache_status attache_shrink_buffer(const uint8_t *pixels, int width, int height, size_t stride, int channels,
                                     int premultiply, int factor, attache_image *out);
#endif
