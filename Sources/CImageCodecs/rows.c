// The hand-off of rows from a decoder to a resampler on another thread, as they are finished
// (rows.h), and the resample that reads them only once they are.
#include "rows.h"
#include <stdlib.h>
#include <string.h>

void attache_rows_begin(attache_rows *rows, const attache_image *image, int ring) {
    pthread_mutex_lock(&rows->lock);
    rows->image = *image;
    rows->ring = ring;
    rows->ready = 0;
    pthread_cond_broadcast(&rows->changed);
    pthread_mutex_unlock(&rows->lock);
}

void attache_rows_ready(attache_rows *rows, int count) {
    pthread_mutex_lock(&rows->lock);
    rows->ready = count;
    // Woken only when enough rows for a batch are there, not for each one (a wake-up costs more
    // than resampling a row).
    if (rows->wanted && count >= rows->wanted) pthread_cond_broadcast(&rows->changed);
    pthread_mutex_unlock(&rows->lock);
}

void attache_rows_abandon(attache_rows *rows) {
    atomic_store(&rows->abandoned, 1);
    pthread_mutex_lock(&rows->lock);
    rows->ended = 1;
    pthread_cond_broadcast(&rows->changed);
    while (!rows->reader_done) pthread_cond_wait(&rows->changed, &rows->lock);
    pthread_mutex_unlock(&rows->lock);
}

int attache_rows_wait(attache_rows *rows, int row) {
    pthread_mutex_lock(&rows->lock);
    if (rows->ready <= row) {
        // A batch of rows (or the rest), so that the decoder wakes this thread rarely; within a
        // ring, no more than it holds.
        int step = rows->ring && rows->ring < 32 ? rows->ring : 32;
        int batch = row + step < rows->image.height ? row + step : rows->image.height;
        rows->wanted = batch > row + 1 ? batch : row + 1;
        while (rows->ready <= row && !rows->ended) pthread_cond_wait(&rows->changed, &rows->lock);
        rows->wanted = 0;
    }
    int ready = attache_rows_abandoned(rows) ? 0 : rows->ready;
    pthread_mutex_unlock(&rows->lock);
    return ready;
}

int attache_rows_ring_for(const attache_rows *rows, int width, int height) {
    if (!rows || rows->ring_wanted <= 0 || rows->ring_wanted >= height) return 0;
    int fit_width, fit_height;
    attache_fit_size(width, height, rows->edge, &fit_width, &fit_height);
    return fit_width == width && fit_height == height ? 0 : rows->ring_wanted;
}

void attache_rows_wait_slot(attache_rows *rows, int row) {
    if (!rows || !rows->ring) return;
    pthread_mutex_lock(&rows->lock);
    if (row - rows->consumed >= rows->ring && !rows->reader_done) {
        // Woken for a batch of free slots, not each one (the rows before `row` are all final,
        // so the resampler can free that many).
        int batch = rows->ring > 16 ? 16 : 1;
        rows->space_wanted = row - rows->ring + batch;
        while (row - rows->consumed >= rows->ring && !rows->reader_done) pthread_cond_wait(&rows->changed, &rows->lock);
        rows->space_wanted = 0;
    }
    pthread_mutex_unlock(&rows->lock);
}

void attache_rows_consumed(attache_rows *rows, int count) {
    pthread_mutex_lock(&rows->lock);
    rows->consumed = count;
    if (rows->space_wanted && count >= rows->space_wanted) pthread_cond_broadcast(&rows->changed);
    pthread_mutex_unlock(&rows->lock);
}

attache_status attache_resize_rows_with(const attache_image *in, int width, int height, attache_image *out, attache_rows *gate,
                                        attache_row_fn row_made, void *context) {
    memset(out, 0, sizeof *out);
    attache_resizer resizer, *r = &resizer;
    attache_status status = attache_resizer_init(r, in->width, in->height, in->channels, width, height);
    if (status != ATTACHE_OK) return status;
    r->row_made = row_made;
    r->context = context;
    int final = gate ? 0 : in->height;  // source rows known to be finished
    for (int next = 0; r->made < height; next++) {
        if (next >= final) final = attache_rows_wait(gate, next);
        if (next >= final || (gate && attache_rows_abandoned(gate))) {
            attache_resizer_free(r);
            return ATTACHE_ERR_ABORTED;  // the decoder ended without them, or is freeing them
        }
        // Within a ring, the row is in its slot until it is given back, right after.
        int ring = gate ? gate->ring : 0;
        attache_resizer_push(r, in->pixels + (size_t)(ring ? next % ring : next) * in->width * in->channels);
        if (ring) attache_rows_consumed(gate, next + 1);
    }
    if (gate && gate->ring) attache_rows_consumed(gate, in->height);  // the rest are not needed
    attache_resizer_take(r, out);
    attache_resizer_free(r);
    return ATTACHE_OK;
}
