// See png_inflate.h. The bytes libpng reads from here on, once the feed starts (S being a zlib
// stream of stored blocks holding exactly the inflated rows):
//   S[0 ..< L1], CRC, [IDAT chunk header for the rest of S], S[L1...], CRC, IEND chunk
// where L1 is the first real IDAT chunk's length (libpng has read that chunk's header already).
// The CRCs written are zero: libpng is told not to compute them (they cover bytes made here);
// the real chunks' CRCs are checked here instead.
#include "png_inflate.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

enum { RING = 1 << 20, STORED_MAX = 65535, WORTH = 1 << 20 };

struct attache_idat_feed {
    const uint8_t *data;
    size_t length;
    size_t offset;           // the first IDAT chunk's data
    uint32_t first_length;   // L1
    size_t raw_length;       // the rows, filter bytes included
    size_t stream_length;    // S
    attache_release *release;

    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    uint8_t *ring;
    uint64_t head, tail;     // bytes written, bytes read (head - tail are waiting)
    int reader_waiting, writer_waiting;
    int ended, failed, stopped;
    char message[160];

    // The writer's place in S (its thread alone).
    size_t at;
};

static uint32_t be32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }

// Room for up to `want` bytes at the ring's head, contiguous; waits for the reader. 0: stopped.
static size_t reserve(attache_idat_feed *f, uint8_t **at, size_t want) {
    pthread_mutex_lock(&f->lock);
    while (!f->stopped && f->head - f->tail == RING) {
        f->writer_waiting = 1;
        pthread_cond_wait(&f->changed, &f->lock);
        f->writer_waiting = 0;
    }
    size_t free_bytes = RING - (size_t)(f->head - f->tail);
    int stopped = f->stopped;
    pthread_mutex_unlock(&f->lock);
    if (stopped) return 0;
    size_t start = (size_t)(f->head % RING);
    size_t room = RING - start < free_bytes ? RING - start : free_bytes;
    *at = f->ring + start;
    return room < want ? room : want;
}

static void commit(attache_idat_feed *f, size_t count) {
    pthread_mutex_lock(&f->lock);
    f->head += count;
    // The reader is woken for a good batch, not each commit.
    if (f->reader_waiting && f->head - f->tail >= 65536) pthread_cond_broadcast(&f->changed);
    pthread_mutex_unlock(&f->lock);
}

static int put(attache_idat_feed *f, const uint8_t *bytes, size_t count, int of_s);

// After S[0 ..< L1]: the first chunk's CRC, then the header of the chunk holding the rest of S.
static int frame_rest(attache_idat_feed *f) {
    size_t rest = f->stream_length - f->first_length;
    uint8_t framing[12] = { 0, 0, 0, 0, (uint8_t)(rest >> 24), (uint8_t)(rest >> 16), (uint8_t)(rest >> 8), (uint8_t)rest,
                            'I', 'D', 'A', 'T' };
    return put(f, framing, sizeof framing, 0);
}

static int after_s_bytes(attache_idat_feed *f, size_t count) {
    size_t before = f->at;
    f->at += count;
    if (before < f->first_length && f->at == f->first_length && f->at < f->stream_length) return frame_rest(f);
    return 1;
}

// Room for S's next bytes, never past the first chunk's end.
static size_t reserve_s(attache_idat_feed *f, uint8_t **at, size_t want) {
    if (f->at < f->first_length && f->first_length - f->at < want) want = f->first_length - f->at;
    return reserve(f, at, want);
}

// Bytes into the ring: of S (`of_s`: never past the first chunk's end, its framing put after
// it), or outside S (the framing between and after its chunks).
static int put(attache_idat_feed *f, const uint8_t *bytes, size_t count, int of_s) {
    while (count) {
        uint8_t *at;
        size_t room = of_s ? reserve_s(f, &at, count) : reserve(f, &at, count);
        if (!room) return 0;
        memcpy(at, bytes, room);
        commit(f, room);
        if (of_s && !after_s_bytes(f, room)) return 0;
        bytes += room;
        count -= room;
    }
    return 1;
}

typedef struct {
    const uint8_t *type;  // of the current chunk
    size_t pos;        // next byte of the file to look at
    uint32_t left;     // of the current chunk's data
    uint32_t crc;      // of the current chunk so far
} chunks;

// The current chunk's data is consumed: its CRC must match.
static const char *end_chunk(attache_idat_feed *f, chunks *c) {
    if (f->length - c->pos < 4) return "truncated PNG";
    if (be32(f->data + c->pos) != c->crc) return "IDAT: CRC error";
    c->pos += 4;
    return NULL;
}

// The next chunk's header; NULL, or why it cannot be read.
static const char *begin_chunk(attache_idat_feed *f, chunks *c, const uint8_t **type) {
    if (f->length - c->pos < 8) return "truncated PNG";
    uint32_t length = be32(f->data + c->pos);
    if (length > 0x7fffffffu) return "PNG chunk length out of range";
    *type = c->type = f->data + c->pos + 4;
    c->pos += 8;
    c->left = length;
    c->crc = (uint32_t)crc32(0, *type, 4);
    return NULL;
}

// The rest of the file after the rows: the current IDAT's unread data and CRC, then every chunk
// up to IEND, each critical one's CRC checked (as libpng's png_read_end would).
static const char *check_tail(attache_idat_feed *f, chunks *c) {
    for (;;) {
        if (f->length - c->pos < c->left) return "truncated PNG";
        c->crc = (uint32_t)crc32(c->crc, f->data + c->pos, c->left);
        int critical = !(c->type[0] & 0x20);
        int end = !memcmp(c->type, "IEND", 4);
        c->pos += c->left;
        c->left = 0;
        if (f->length - c->pos < 4) return "truncated PNG";
        if (critical && be32(f->data + c->pos) != c->crc) return "PNG chunk CRC error";
        c->pos += 4;
        if (end) return NULL;
        const uint8_t *type;
        const char *problem = begin_chunk(f, c, &type);
        if (problem) return problem;
    }
}

static const char *inflate_rows(attache_idat_feed *f, z_stream *z) {
    chunks c = { f->data + f->offset - 4, f->offset, f->first_length, (uint32_t)crc32(0, (const uint8_t *)"IDAT", 4) };
    if (f->first_length == 0 && !frame_rest(f)) return "stopped";
    static const uint8_t header[2] = { 0x78, 0x01 };  // deflate, 32 KB window, no dictionary
    if (!put(f, header, sizeof header, 1)) return "stopped";
    size_t raw_left = f->raw_length;
    int stream_end = 0;
    while (raw_left) {
        size_t block = raw_left < STORED_MAX ? raw_left : STORED_MAX;
        uint8_t stored[5] = { raw_left <= STORED_MAX, (uint8_t)block, (uint8_t)(block >> 8), (uint8_t)~block, (uint8_t)(~block >> 8) };
        if (!put(f, stored, sizeof stored, 1)) return "stopped";
        size_t block_left = block;
        while (block_left) {
            if (z->avail_in == 0) {
                if (c.left == 0) {
                    const char *problem = end_chunk(f, &c);
                    const uint8_t *type;
                    if (!problem) problem = begin_chunk(f, &c, &type);
                    if (problem) return problem;
                    if (memcmp(type, "IDAT", 4) != 0) return "Not enough image data";
                    continue;
                }
                attache_release_behind(f->release, c.pos);  // inflate has read every byte before it
                size_t slice = c.left < 65536 ? c.left : 65536;
                if (f->length - c.pos < slice) slice = f->length - c.pos;
                if (slice == 0) return "truncated PNG";
                z->next_in = (Bytef *)(f->data + c.pos);
                z->avail_in = (uInt)slice;
                c.crc = (uint32_t)crc32(c.crc, f->data + c.pos, (uInt)slice);
                c.pos += slice;
                c.left -= (uint32_t)slice;
            }
            if (stream_end) return "Not enough image data";
            uint8_t *at;
            size_t room = reserve_s(f, &at, block_left);
            if (!room) return "stopped";
            z->next_out = at;
            z->avail_out = (uInt)room;
            int rc = inflate(z, Z_NO_FLUSH);
            size_t made = room - z->avail_out;
            if (made) {
                commit(f, made);
                if (!after_s_bytes(f, made)) return "stopped";
                block_left -= made;
                raw_left -= made;
            }
            if (rc == Z_STREAM_END) stream_end = 1;
            else if (rc == Z_BUF_ERROR && z->avail_in == 0) continue;  // wants input
            else if (rc != Z_OK) return z->msg ? z->msg : "invalid IDAT data";
        }
    }
    static const uint8_t adler[4] = { 0 };  // not checked: libpng is told to ignore it, as it would the real one
    if (!put(f, adler, sizeof adler, 1)) return "stopped";
    // Extra data after the rows in the real stream is tolerated, as libpng's warning does.
    const char *problem = check_tail(f, &c);
    if (problem) return problem;
    static const uint8_t end[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xae, 0x42, 0x60, 0x82 };
    return put(f, end, sizeof end, 0) ? NULL : "stopped";
}

static void *run(void *context) {
    attache_idat_feed *f = context;
    z_stream z;
    memset(&z, 0, sizeof z);
    const char *problem = inflateInit(&z) == Z_OK ? NULL : "out of memory";
    if (!problem) {
        inflateValidate(&z, 0);  // the real stream's Adler-32 is not checked either (png.c tells libpng to ignore it)
        problem = inflate_rows(f, &z);
        inflateEnd(&z);
    }
    pthread_mutex_lock(&f->lock);
    if (problem) {
        f->failed = 1;
        snprintf(f->message, sizeof f->message, "%s", problem);
    }
    f->ended = 1;
    pthread_cond_broadcast(&f->changed);
    pthread_mutex_unlock(&f->lock);
    return NULL;
}

attache_idat_feed *attache_idat_feed_start(const uint8_t *data, size_t length, size_t offset, size_t raw_length,
                                           attache_release *release) {
    if (raw_length < WORTH || offset < 8 || offset > length || memcmp(data + offset - 4, "IDAT", 4) != 0) return NULL;
    size_t blocks = (raw_length + STORED_MAX - 1) / STORED_MAX;
    size_t stream_length = 2 + raw_length + 5 * blocks + 4;
    uint32_t first_length = be32(data + offset - 8);
    // libpng has taken the first chunk's length as given: S must fill it, and fit in 2^31 - 1.
    if (stream_length < first_length || stream_length - first_length > 0x7fffffffu) return NULL;
    attache_idat_feed *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    f->ring = malloc(RING);
    if (!f->ring) {
        free(f);
        return NULL;
    }
    f->data = data;
    f->length = length;
    f->offset = offset;
    f->first_length = first_length;
    f->raw_length = raw_length;
    f->stream_length = stream_length;
    f->release = release;
    pthread_mutex_init(&f->lock, NULL);
    pthread_cond_init(&f->changed, NULL);
    if (pthread_create(&f->thread, NULL, run, f) != 0) {
        pthread_mutex_destroy(&f->lock);
        pthread_cond_destroy(&f->changed);
        free(f->ring);
        free(f);
        return NULL;
    }
    return f;
}

int attache_idat_feed_read(attache_idat_feed *f, uint8_t *out, size_t count, char *message) {
    while (count) {
        pthread_mutex_lock(&f->lock);
        while (f->head == f->tail && !f->ended) {
            f->reader_waiting = 1;
            pthread_cond_wait(&f->changed, &f->lock);
            f->reader_waiting = 0;
        }
        size_t ready = (size_t)(f->head - f->tail);
        if (ready == 0) {  // ended
            snprintf(message, 160, "%s", f->failed ? f->message : "truncated PNG");
            pthread_mutex_unlock(&f->lock);
            return -1;
        }
        pthread_mutex_unlock(&f->lock);
        // The writer does not touch bytes between tail and head: copied without the lock.
        size_t start = (size_t)(f->tail % RING);
        size_t take = ready < count ? ready : count;
        if (take > RING - start) take = RING - start;
        memcpy(out, f->ring + start, take);
        out += take;
        count -= take;
        pthread_mutex_lock(&f->lock);
        f->tail += take;
        if (f->writer_waiting) pthread_cond_broadcast(&f->changed);
        pthread_mutex_unlock(&f->lock);
    }
    return 0;
}

void attache_idat_feed_stop(attache_idat_feed *f) {
    pthread_mutex_lock(&f->lock);
    f->stopped = 1;
    pthread_cond_broadcast(&f->changed);
    pthread_mutex_unlock(&f->lock);
    pthread_join(f->thread, NULL);
    pthread_mutex_destroy(&f->lock);
    pthread_cond_destroy(&f->changed);
    free(f->ring);
    free(f);
}
