// A decoder and a resampler on two threads, handing rows over as they are finished. Why: a 9 MP
// JPEG's display copy is decoded at 4/8 (1920 px) and resampled to 1080 px; done one after the
// other, the resample (7-10 ms) and the decode (32 ms) add up, and a render could not come within
// 1.3x of djpeg's time for the decode alone (issue 19).
#include "rows.h"
#include <stdlib.h>
#include <string.h>

void attache_rows_begin(attache_rows *rows, const attache_image *image) {
    pthread_mutex_lock(&rows->lock);
    rows->image = *image;
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
        // A batch of rows (or the rest), so that the decoder wakes this thread rarely.
        int batch = row + 32 < rows->image.height ? row + 32 : rows->image.height;
        rows->wanted = batch > row + 1 ? batch : row + 1;
        while (rows->ready <= row && !rows->ended) pthread_cond_wait(&rows->changed, &rows->lock);
        rows->wanted = 0;
    }
    int ready = attache_rows_abandoned(rows) ? 0 : rows->ready;
    pthread_mutex_unlock(&rows->lock);
    return ready;
}

typedef struct {
    attache_rows *rows;
    int edge;
    attache_status status;
    attache_image resized;
} resample_job;

static void *resample(void *context) {
    resample_job *job = context;  // its status starts as ATTACHE_ERR_ABORTED
    attache_rows *rows = job->rows;
    pthread_mutex_lock(&rows->lock);
    while (!rows->image.pixels && !rows->ended) pthread_cond_wait(&rows->changed, &rows->lock);
    attache_image in = rows->image;
    pthread_mutex_unlock(&rows->lock);
    if (in.pixels) {
        int width, height;
        attache_fit_size(in.width, in.height, job->edge, &width, &height);
        job->status = width == in.width && height == in.height ? ATTACHE_OK
                                                               : attache_resize_rows(&in, width, height, &job->resized, rows);
    }
    pthread_mutex_lock(&rows->lock);
    rows->reader_done = 1;
    pthread_cond_broadcast(&rows->changed);
    pthread_mutex_unlock(&rows->lock);
    return NULL;
}

attache_status attache_decode_resized(attache_decode_fn decode, const uint8_t *data, size_t length,
                                      attache_decode_options *options, int edge, attache_image *out, attache_image *resized) {
    memset(out, 0, sizeof *out);
    memset(resized, 0, sizeof *resized);
    attache_rows rows;
    memset(&rows, 0, sizeof rows);
    pthread_mutex_init(&rows.lock, NULL);
    pthread_cond_init(&rows.changed, NULL);
    resample_job job = { .rows = &rows, .edge = edge, .status = ATTACHE_ERR_ABORTED };
    pthread_t thread;
    if (pthread_create(&thread, NULL, resample, &job) != 0) {  // no thread: one after the other
        pthread_mutex_destroy(&rows.lock);
        pthread_cond_destroy(&rows.changed);
        return decode(data, length, options, out);  // the caller resamples, finding `resized` empty
    }
    options->rows = &rows;
    attache_status status = decode(data, length, options, out);
    options->rows = NULL;
    pthread_mutex_lock(&rows.lock);
    if (status == ATTACHE_OK) {  // a decoder that publishes no rows hands its image over whole
        rows.image = *out;
        rows.ready = out->height;
    }
    rows.ended = 1;
    pthread_cond_broadcast(&rows.changed);
    pthread_mutex_unlock(&rows.lock);
    pthread_join(thread, NULL);
    pthread_mutex_destroy(&rows.lock);
    pthread_cond_destroy(&rows.changed);
    if (status != ATTACHE_OK) {
        attache_image_free(&job.resized);
        return status;
    }
    if (job.status != ATTACHE_OK) {
        attache_image_free(out);
        attache_image_free(&job.resized);
        return job.status;
    }
    *resized = job.resized;
    return ATTACHE_OK;
}
