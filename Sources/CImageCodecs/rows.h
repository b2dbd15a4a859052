// Rows handed from a decoder to a resampler on another thread as they are finished, so that the
// resample of a display copy overlaps the decode instead of following it (display.c).
#ifndef ATTACHE_ROWS_H
#define ATTACHE_ROWS_H
#include <pthread.h>
#include <stdatomic.h>
#include "attache_codecs.h"
#include "resizer.h"

struct attache_rows {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    attache_image image;    // the decoder's output buffer, once it has one (pixels NULL until then)
    int ready;              // rows of `image` that are final
    int wanted;             // the resampler sleeps until this many are (0: it is not waiting)
    int ended;              // the decoder returned (or gave its buffer up)
    int reader_done;        // the resampler no longer reads `image`
    atomic_int abandoned;   // the decoder is about to free `image`: the resampler stops at once
    // A ring instead of the whole image (see attache_display_extras.ring_rows): asked for with
    // `ring_wanted` rows when the image will not fit `edge`; `ring` once the decoder's buffer is one.
    int ring_wanted, edge;
    int ring;               // 0: `image` holds every row; else row y is at slot y % ring
    int consumed;           // ring: rows the resampler is done with (their slots may be written)
    int space_wanted;       // ring: the decoder sleeps until this many are consumed (0: not waiting)
};

/// The decoder has its output buffer (rows not yet written): the whole image, or a ring of
/// `ring` rows.
void attache_rows_begin(attache_rows *rows, const attache_image *image, int ring);
/// The first `count` rows of it are final.
void attache_rows_ready(attache_rows *rows, int count);
/// The decoder failed and is about to free its buffer: returns once the resampler has stopped reading it.
void attache_rows_abandon(attache_rows *rows);
/// Whether the decoder is freeing its buffer (the resampler checks between rows, without the lock).
static inline int attache_rows_abandoned(attache_rows *rows) {
    return atomic_load_explicit(&rows->abandoned, memory_order_relaxed);
}
/// For the resampler: waits until more than `row` rows are final or the decoder ended; returns
/// how many are final (not more than `row` when the decoder ended without them).
int attache_rows_wait(attache_rows *rows, int row);
/// For a decoder whose output is `width` x `height`: the rows of a ring to keep instead of the
/// whole image (0: keep it whole). A ring only when asked and when the image does not fit the
/// resampler's edge already (then the caller needs the decoded image itself).
int attache_rows_ring_for(const attache_rows *rows, int width, int height);
/// Ring: waits until row `row`'s slot may be written (the resampler is done with the row that
/// held it, or reads no more).
void attache_rows_wait_slot(attache_rows *rows, int row);
/// Ring: the resampler is done with the first `count` rows.
void attache_rows_consumed(attache_rows *rows, int count);
/// attache_resize, reading `in`'s rows only once `rows` says they are final (`rows` may be NULL),
/// with `row_made` told of each output row as soon as it is final (may be NULL).
attache_status attache_resize_rows_with(const attache_image *in, int width, int height, attache_image *out, attache_rows *rows,
                                        attache_row_fn row_made, void *context);
#endif
