#include "shrink.h"
#include "rows.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

int attache_shrinker_init(attache_shrinker *s, int in_width, int in_height, int channels, int factor, int premultiply) {
    memset(s, 0, sizeof(*s));
    if (factor < 1) factor = 1;
    s->in_width = in_width;
    s->in_height = in_height;
    s->channels = channels;
    s->factor = factor;
    s->premultiply = premultiply && channels == 4;
    // value × alpha summed over a block: 65025 f² must fit in 32 bits. Past that (a 100,000 px
    // edge shrunk to a few dozen), and with no shrink (a division per value either way, and the
    // integer one is faster), each pixel is premultiplied, and divided, on its own.
    s->weighted = s->premultiply && factor > 1 && factor <= 256;
    s->out_width = (in_width + factor - 1) / factor;
    s->out_height = (in_height + factor - 1) / factor;
    s->sums = calloc((size_t)s->out_width * channels, sizeof(uint32_t));
    s->image.pixels = malloc((size_t)s->out_width * s->out_height * channels);
    s->image.width = s->out_width;
    s->image.height = s->out_height;
    s->image.channels = channels;
    if (!s->sums || !s->image.pixels) {
        attache_shrinker_free(s);
        return 0;
    }
    return 1;
}

// Where output row `y` goes: its row of the image, or its slot of the ring once the resampler
// is done with the row before it there.
static uint8_t *row_slot(attache_shrinker *s, int y) {
    if (s->ring) attache_rows_wait_slot(s->rows, y);
    return s->image.pixels + (size_t)(s->ring ? y % s->ring : y) * s->out_width * s->channels;
}

static void emit_row(attache_shrinker *s) {
    if (s->next_out_row >= s->out_height || s->rows_in_sums == 0) return;
    const int c = s->channels, f = s->factor;
    uint8_t *dst = row_slot(s, s->next_out_row);
    // Every whole block has the same pixel count n: divide by multiplying with ceil(2^32 / n),
    // exact for these sums (at most 255 n, with n below 4096), instead of a division per value.
    const int whole = s->in_width / f;
    const uint32_t n = (uint32_t)f * (uint32_t)s->rows_in_sums;
    if (s->weighted) {
        // Colour: Σ value × alpha / 255 n, rounded. The exact quotient is a multiple of
        // 1 / (255 n), far from the next integer compared with a double's error; the small bias
        // keeps an exact integer from being truncated to the one below. Alpha as below.
        const double scale = 1.0 / (255.0 * n);
        const uint32_t half = 255 * n / 2;
        const uint64_t magic = ((1ull << 32) + n - 1) / n;
        for (int x = 0; x < whole; x++) {
            const uint32_t *t = s->sums + x * 4;
            uint8_t *d = dst + x * 4;
            for (int k = 0; k < 3; k++) d[k] = (uint8_t)((double)(t[k] + half) * scale + 1e-9);
            d[3] = n < 4096 ? (uint8_t)(((t[3] + n / 2) * magic) >> 32) : (uint8_t)((t[3] + n / 2) / n);
        }
    } else if (n < 4096) {
        const uint64_t magic = ((1ull << 32) + n - 1) / n;
        const int values = whole * c;
        for (int i = 0; i < values; i++) dst[i] = (uint8_t)(((s->sums[i] + n / 2) * magic) >> 32);
    } else {
        for (int i = 0; i < whole * c; i++) dst[i] = (uint8_t)((s->sums[i] + n / 2) / n);
    }
    for (int x = whole; x < s->out_width; x++) {  // a narrower last block
        uint32_t last = (uint32_t)(s->in_width - x * f) * (uint32_t)s->rows_in_sums;
        for (int k = 0; k < c; k++) {
            uint32_t count = s->weighted && k < 3 ? 255 * last : last;
            dst[x * c + k] = (uint8_t)((s->sums[x * c + k] + count / 2) / count);
        }
    }
    memset(s->sums, 0, (size_t)s->out_width * c * sizeof(uint32_t));
    s->rows_in_sums = 0;
    s->next_out_row++;
    if (s->rows) attache_rows_ready(s->rows, s->next_out_row);
}

void attache_shrinker_watch(attache_shrinker *s, attache_rows *rows) {
    s->rows = rows;
    if (!rows) return;
    // Only a resampler reads these rows: a ring of them is enough, and the whole image's
    // memory (7 MB for 4/8 of a 9 MP photo) is never touched.
    int ring = attache_rows_ring_for(rows, s->out_width, s->out_height);
    uint8_t *slots = ring ? malloc((size_t)ring * s->out_width * s->channels) : NULL;
    if (slots) {
        free(s->image.pixels);
        s->image.pixels = slots;
        s->ring = ring;
    }
    attache_rows_begin(rows, &s->image, s->ring);
}

enum { STRAIGHT, WEIGHTED, EACH_PIXEL };

// Adds each block of an RGBA row to the sums: as it is; premultiplied as value × alpha, divided
// once per output value by emit_row (three divisions a pixel, as EACH_PIXEL does, cost 40 ms of
// a 9 MP PNG's decode); or premultiplied pixel by pixel (a factor too large for the products).
// The mode is a constant at each call, so the branches fold away.
static inline __attribute__((always_inline)) void sum_rgba(attache_shrinker *s, const uint8_t *row, const int mode) {
    const int f = s->factor;
    for (int x = 0, ox = 0; x < s->in_width; ox++) {
        uint32_t r = 0, g = 0, b = 0, a = 0;
        int end = x + f < s->in_width ? x + f : s->in_width;
        for (; x < end; x++) {
            const uint8_t *p = row + x * 4;
            const uint32_t alpha = p[3];
            if (mode == STRAIGHT) {
                r += p[0]; g += p[1]; b += p[2];
            } else if (mode == WEIGHTED) {
                r += p[0] * alpha; g += p[1] * alpha; b += p[2] * alpha;
            } else {
                r += (p[0] * alpha + 127) / 255; g += (p[1] * alpha + 127) / 255; b += (p[2] * alpha + 127) / 255;
            }
            a += alpha;
        }
        uint32_t *d = s->sums + ox * 4;
        d[0] += r; d[1] += g; d[2] += b; d[3] += a;
    }
}

void attache_shrinker_push(attache_shrinker *s, const uint8_t *row) {
    const int c = s->channels, f = s->factor;
    if (f == 1 && !s->premultiply) {
        if (s->next_out_row < s->out_height) {
            memcpy(row_slot(s, s->next_out_row), row, (size_t)s->in_width * c);
            s->next_out_row++;
            if (s->rows) attache_rows_ready(s->rows, s->next_out_row);
        }
        return;
    }
    uint32_t *sums = s->sums;
    if (f == 2 && !s->premultiply && (c == 3 || c == 4)) {
        // The usual case (decode to twice the thumbnail): pairs, in a loop the compiler vectorises.
        const int pairs = s->in_width / 2;
        if (c == 3) {
            for (int i = 0; i < pairs * 3; i += 3)
                for (int k = 0; k < 3; k++) sums[i + k] += (uint32_t)row[2 * i + k] + row[2 * i + 3 + k];
        } else {
            for (int i = 0; i < pairs * 4; i += 4)
                for (int k = 0; k < 4; k++) sums[i + k] += (uint32_t)row[2 * i + k] + row[2 * i + 4 + k];
        }
        if (s->in_width & 1)  // a last column on its own
            for (int k = 0; k < c; k++) sums[pairs * c + k] += row[(s->in_width - 1) * c + k];
        if (++s->rows_in_sums == f) emit_row(s);
        return;
    }
    // Block by block (no division per pixel); channels fixed per loop so the compiler unrolls.
    if (c == 3) {
        for (int x = 0, ox = 0; x < s->in_width; ox++) {
            uint32_t r = 0, g = 0, b = 0;
            int end = x + f < s->in_width ? x + f : s->in_width;
            for (; x < end; x++) { r += row[x * 3]; g += row[x * 3 + 1]; b += row[x * 3 + 2]; }
            sums[ox * 3] += r; sums[ox * 3 + 1] += g; sums[ox * 3 + 2] += b;
        }
    } else {
        switch (!s->premultiply ? STRAIGHT : s->weighted ? WEIGHTED : EACH_PIXEL) {
            case STRAIGHT: sum_rgba(s, row, STRAIGHT); break;
            case WEIGHTED: sum_rgba(s, row, WEIGHTED); break;
            default: sum_rgba(s, row, EACH_PIXEL); break;
        }
    }
    if (++s->rows_in_sums == f) emit_row(s);
}

void attache_shrinker_finish(attache_shrinker *s, attache_image *out) {
    emit_row(s);
    // Rows the decoder never delivered stay defined (black / transparent), never uninitialised.
    if (s->next_out_row < s->out_height && s->ring) {
        for (; s->next_out_row < s->out_height; s->next_out_row++)
            memset(row_slot(s, s->next_out_row), 0, (size_t)s->out_width * s->channels);
        attache_rows_ready(s->rows, s->out_height);
    } else if (s->next_out_row < s->out_height) {
        size_t done = (size_t)s->next_out_row * s->out_width * s->channels;
        memset(s->image.pixels + done, 0, (size_t)s->out_width * s->out_height * s->channels - done);
        if (s->rows) attache_rows_ready(s->rows, s->out_height);
    }
    *out = s->image;
    s->image.pixels = NULL;
    free(s->sums);
    s->sums = NULL;
}

void attache_shrinker_free(attache_shrinker *s) {
    // A resampler may be reading the rows published so far: it stops before they are freed.
    if (s->rows && s->image.pixels) attache_rows_abandon(s->rows);
    s->rows = NULL;
    free(s->sums);
    free(s->image.pixels);
    s->sums = NULL;
    s->image.pixels = NULL;
}

attache_status attache_shrink_buffer(const uint8_t *pixels, int width, int height, size_t stride, int channels,
                                     int premultiply, int factor, attache_image *out) {
    attache_shrinker shrinker;
    if (!attache_shrinker_init(&shrinker, width, height, channels, factor, premultiply)) return ATTACHE_ERR_NOMEM;
    for (int y = 0; y < height; y++) attache_shrinker_push(&shrinker, pixels + (size_t)y * stride);
    attache_shrinker_finish(&shrinker, out);
    return ATTACHE_OK;
}

// The relay. Why: a 9 MP RGBA PNG's box shrink (17 ms) ran on the decoding thread, after each row
// was inflated; on a thread of its own it overlaps the inflate, which is the floor.
struct attache_shrink_relay {
    attache_shrinker *shrinker;
    uint8_t *ring;
    size_t row_bytes;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    long written;   // rows the decoder has committed
    long taken;     // rows the thread has pushed into the shrinker
    int stopping;
    pthread_t thread;
};

enum { RELAY_SLOTS = 64, RELAY_BATCH = 16 };  // the thread is woken for 16 rows at a time, not each

static void *relay_run(void *context) {
    attache_shrink_relay *relay = context;
    pthread_mutex_lock(&relay->lock);
    for (;;) {
        while (relay->written - relay->taken < RELAY_BATCH && !relay->stopping) pthread_cond_wait(&relay->changed, &relay->lock);
        long available = relay->written, taken = relay->taken;
        if (taken == available) break;  // stopping, and nothing left
        pthread_mutex_unlock(&relay->lock);
        for (; taken < available; taken++)
            attache_shrinker_push(relay->shrinker, relay->ring + (size_t)(taken % RELAY_SLOTS) * relay->row_bytes);
        pthread_mutex_lock(&relay->lock);
        relay->taken = taken;
        pthread_cond_broadcast(&relay->changed);
    }
    pthread_mutex_unlock(&relay->lock);
    return NULL;
}

attache_shrink_relay *attache_shrink_relay_start(attache_shrinker *s, size_t row_bytes) {
    attache_shrink_relay *relay = calloc(1, sizeof *relay);
    if (!relay) return NULL;
    relay->ring = malloc(row_bytes * RELAY_SLOTS);
    relay->shrinker = s;
    relay->row_bytes = row_bytes;
    pthread_mutex_init(&relay->lock, NULL);
    pthread_cond_init(&relay->changed, NULL);
    if (!relay->ring || pthread_create(&relay->thread, NULL, relay_run, relay) != 0) {
        pthread_mutex_destroy(&relay->lock);
        pthread_cond_destroy(&relay->changed);
        free(relay->ring);
        free(relay);
        return NULL;
    }
    return relay;
}

uint8_t *attache_shrink_relay_slot(attache_shrink_relay *relay) {
    pthread_mutex_lock(&relay->lock);
    while (relay->written - relay->taken >= RELAY_SLOTS) {
        pthread_cond_broadcast(&relay->changed);  // a full ring is a batch, however the thread waits
        pthread_cond_wait(&relay->changed, &relay->lock);
    }
    long next = relay->written;
    pthread_mutex_unlock(&relay->lock);
    return relay->ring + (size_t)(next % RELAY_SLOTS) * relay->row_bytes;
}

void attache_shrink_relay_commit(attache_shrink_relay *relay) {
    pthread_mutex_lock(&relay->lock);
    relay->written++;
    if (relay->written - relay->taken >= RELAY_BATCH) pthread_cond_broadcast(&relay->changed);
    pthread_mutex_unlock(&relay->lock);
}

void attache_shrink_relay_stop(attache_shrink_relay *relay) {
    pthread_mutex_lock(&relay->lock);
    relay->stopping = 1;
    pthread_cond_broadcast(&relay->changed);
    pthread_mutex_unlock(&relay->lock);
    pthread_join(relay->thread, NULL);
    pthread_mutex_destroy(&relay->lock);
    pthread_cond_destroy(&relay->changed);
    free(relay->ring);
    free(relay);
}
