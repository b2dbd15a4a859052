// A decoder and a resampler on two threads, handing rows over as they are finished. Why: a 9 MP
// JPEG's display copy is decoded at 4/8 (1920 px) and resampled to 1080 px; done one after the
// other, the resample (7-10 ms) and the decode (32 ms) add up, and a render could not come within
// 1.3x of djpeg's time for the decode alone (issue 19).
#include "rows.h"
#include "jpeg_writer.h"
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

typedef struct {
    attache_rows *rows;
    int edge;
    attache_status status;
    attache_image resized;
    const attache_decode_options *options;  // the decoder's profile, once it has begun its rows
    attache_display_extras *extras;
    attache_resizer thumbnail;  // live while `thumbnail_live`
    int thumbnail_live;
    attache_jpeg_writer *writer;  // NULL once failed
} resample_job;

// Each row of the display copy, as soon as it is final: into the thumbnail's resampler and the
// encoder. The thumbnail's rows come from the copy's, as they would from the finished copy.
static void row_made(void *context, const uint8_t *row, int y) {
    (void)y;
    resample_job *job = context;
    if (job->thumbnail_live) attache_resizer_push(&job->thumbnail, row);
    if (job->writer && attache_jpeg_writer_row(job->writer, row) != ATTACHE_OK) {
        attache_jpeg_writer_free(job->writer);  // the caller encodes the copy itself, and hears why
        job->writer = NULL;
    }
}

// Starts what `extras` asks for on a copy of `width` x `height` made from `in`.
static void begin_extras(resample_job *job, const attache_image *in, int width, int height) {
    attache_display_extras *extras = job->extras;
    if (!extras) return;
    if (extras->thumbnail_edge > 0) {
        int tw, th;
        attache_fit_size(width, height, extras->thumbnail_edge, &tw, &th);
        if ((tw != width || th != height) &&
            attache_resizer_init(&job->thumbnail, width, height, in->channels, tw, th) == ATTACHE_OK)
            job->thumbnail_live = 1;
    }
    if (extras->jpeg_quality > 0 && in->channels == 3) {
        const attache_decode_options *o = job->options;
        int rgb = attache_icc_is_rgb(o->icc, o->icc_length);
        if (attache_jpeg_writer_begin(&job->writer, width, height, extras->jpeg_quality, rgb ? o->icc : NULL,
                                      rgb ? o->icc_length : 0) != ATTACHE_OK) {
            attache_jpeg_writer_free(job->writer);
            job->writer = NULL;
        }
    }
}

// Hands over what was made once the copy is whole (`made`), else frees it.
static void end_extras(resample_job *job, int made) {
    attache_display_extras *extras = job->extras;
    if (job->thumbnail_live) {
        if (made && job->thumbnail.made == job->thumbnail.height) attache_resizer_take(&job->thumbnail, &extras->thumbnail);
        attache_resizer_free(&job->thumbnail);
        job->thumbnail_live = 0;
    }
    if (job->writer) {
        if (made && attache_jpeg_writer_finish(job->writer, &extras->jpeg, &extras->jpeg_length) != ATTACHE_OK) {
            extras->jpeg = NULL;
            extras->jpeg_length = 0;
        }
        attache_jpeg_writer_free(job->writer);
        job->writer = NULL;
    }
}

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
        if (width == in.width && height == in.height) {
            job->status = ATTACHE_OK;
        } else {
            begin_extras(job, &in, width, height);
            job->status = attache_resize_rows_with(&in, width, height, &job->resized, rows, row_made, job);
            end_extras(job, job->status == ATTACHE_OK);
        }
    }
    pthread_mutex_lock(&rows->lock);
    rows->reader_done = 1;
    pthread_cond_broadcast(&rows->changed);
    pthread_mutex_unlock(&rows->lock);
    return NULL;
}

attache_status attache_decode_resized(attache_decode_fn decode, const uint8_t *data, size_t length,
                                      attache_decode_options *options, int edge, attache_image *out, attache_image *resized,
                                      attache_display_extras *extras) {
    memset(out, 0, sizeof *out);
    memset(resized, 0, sizeof *resized);
    if (extras) {
        memset(&extras->thumbnail, 0, sizeof extras->thumbnail);
        extras->jpeg = NULL;
        extras->jpeg_length = 0;
    }
    attache_rows rows;
    memset(&rows, 0, sizeof rows);
    pthread_mutex_init(&rows.lock, NULL);
    pthread_cond_init(&rows.changed, NULL);
    rows.edge = edge;
    rows.ring_wanted = extras ? extras->ring_rows : 0;
    resample_job job = { .rows = &rows, .edge = edge, .status = ATTACHE_ERR_ABORTED, .options = options, .extras = extras };
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
    if (status == ATTACHE_OK && job.status != ATTACHE_OK) {
        attache_image_free(out);
        status = job.status;
    }
    if (rows.ring) attache_image_free(out);  // a ring of the last rows, not an image: nobody needs it
    if (status != ATTACHE_OK) {
        attache_image_free(&job.resized);
        if (extras) {
            attache_image_free(&extras->thumbnail);
            attache_buffer_free(extras->jpeg);
            extras->jpeg = NULL;
            extras->jpeg_length = 0;
        }
        return status;
    }
    *resized = job.resized;
    return ATTACHE_OK;
}
