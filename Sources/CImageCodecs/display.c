// A display copy made while the image is decoded: the decoder and a resampler on two threads,
// handing rows over as they are finished (rows.h), each row of the copy going on into the
// thumbnail's resampler and the JPEG writer. Why: a 9 MP JPEG's display copy is decoded at 4/8
// (1920 px) and resampled to 1080 px; done one after the other, the resample (7-10 ms) and the
// decode (32 ms) add up, and a render could not come within 1.3x of djpeg's time for the decode
// alone.
#include "rows.h"
#include "resizer.h"
#include "jpeg_writer.h"
#include <stdlib.h>
#include <string.h>

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
