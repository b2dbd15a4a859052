// The resampler (Catmull-Rom, separable) fed one source row at a time: what attache_resize runs
// over a whole image, and what the row hand-off (rows.h) feeds as a decoder finishes rows. A leaf:
// it calls nothing of the other files.
#ifndef ATTACHE_RESIZER_H
#define ATTACHE_RESIZER_H
#include "attache_codecs.h"

/// Called with each output row of a resample as soon as it is final (`y` from 0, in order).
typedef void (*attache_row_fn)(void *context, const uint8_t *row, int y);

// A source pixel widened to four floats (lanes past the channel count zero): one vector
// multiply-add per tap.
typedef float float4 __attribute__((vector_size(16)));

/// The resampler of attache_resize, fed one source row at a time (pixels.c).
typedef struct {
    int in_width, width, height, channels;
    struct attache_contribution *h, *v;  // each output column's and row's taps
    float *h_weights, *v_weights;
    float4 *wide;      // the source row being resampled, widened
    float *rows;       // `ring` horizontally resampled rows
    float *acc;
    int ring;
    int pushed;        // source rows taken
    int made;          // output rows final
    uint8_t *pixels;   // the output image
    attache_row_fn row_made;
    void *context;
} attache_resizer;

attache_status attache_resizer_init(attache_resizer *r, int in_width, int in_height, int channels, int width, int height);
/// Takes the next source row (in order) and makes every output row it completes.
void attache_resizer_push(attache_resizer *r, const uint8_t *row);
/// Hands the output image over (once every row is made); the resizer still needs freeing.
void attache_resizer_take(attache_resizer *r, attache_image *out);
void attache_resizer_free(attache_resizer *r);
#endif
