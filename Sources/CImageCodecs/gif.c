// giflib reads the file's structure (blocks, descriptors, extensions) incrementally; the LZW code
// streams are ours. The first frame is decoded (decode_lzw) and composited onto the logical
// screen (palette indices bounds-checked); every later frame's code stream is then checked
// without making pixels (check_lzw), up to the trailer, on two threads for a large file. An animated GIF
// goes to the device as it is, so a frame that does not decode (a cut file, say) makes the whole
// GIF invalid. DGifSlurp, which would hold every frame in memory at once, is never used.
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gif_lib.h>
#include "attache_codecs.h"
#include "frames.h"
#include "shrink.h"

typedef struct {
    const uint8_t *data;
    size_t length;
    size_t offset;
} reader;

static int read_data(GifFileType *gif, GifByteType *out, int count) {
    reader *r = gif->UserData;
    size_t left = r->length - r->offset;
    size_t n = (size_t)count < left ? (size_t)count : left;
    memcpy(out, r->data + r->offset, n);
    r->offset += n;
    return (int)n;
}

// Sets the message (giflib's own when `what` is NULL); the caller closes the file.
static attache_status fail(GifFileType *gif, attache_decode_options *options, attache_status status, const char *what) {
    int code = gif ? gif->Error : 0;
    if (what) snprintf(options->message, sizeof options->message, "%s", what);
    else if (code == D_GIF_ERR_READ_FAILED) snprintf(options->message, sizeof options->message, "GIF is cut short");
    else snprintf(options->message, sizeof options->message, "%s", GifErrorString(code) ? GifErrorString(code) : "corrupt GIF");
    return status;
}

static int should_abort(attache_decode_options *options) {
    return options->abort_fn && options->abort_fn(options->abort_context);
}

// Reads extension blocks up to the next image descriptor (or the trailer, which sets *done),
// noting the transparent index of a graphic control block.
static attache_status next_image(GifFileType *gif, attache_decode_options *options, int *transparent, int *done,
                                 GraphicsControlBlock *control) {
    GifRecordType record;
    if (control) *control = (GraphicsControlBlock){ .DisposalMode = DISPOSAL_UNSPECIFIED, .DelayTime = 0, .TransparentColor = NO_TRANSPARENT_COLOR };
    for (;;) {
        if (DGifGetRecordType(gif, &record) == GIF_ERROR) return fail(gif, options, ATTACHE_ERR_INVALID, NULL);
        if (record == TERMINATE_RECORD_TYPE) { *done = 1; return ATTACHE_OK; }
        if (record == IMAGE_DESC_RECORD_TYPE) {
            if (DGifGetImageDesc(gif) == GIF_ERROR) return fail(gif, options, ATTACHE_ERR_INVALID, NULL);
            const GifImageDesc *d = &gif->Image;
            if (d->Width <= 0 || d->Height <= 0 || (uint64_t)d->Width * d->Height > options->max_pixels)
                return fail(gif, options, ATTACHE_ERR_LIMITS, "frame size out of range");
            if (!d->ColorMap && !gif->SColorMap) return fail(gif, options, ATTACHE_ERR_INVALID, "GIF frame has no colour table");
            *done = 0;
            return ATTACHE_OK;
        }
        if (record != EXTENSION_RECORD_TYPE) continue;
        int code;
        GifByteType *ext;
        if (DGifGetExtension(gif, &code, &ext) == GIF_ERROR) return fail(gif, options, ATTACHE_ERR_INVALID, NULL);
        if (code == GRAPHICS_EXT_FUNC_CODE && ext && ext[0] >= 4) {
            GraphicsControlBlock gcb;
            if (DGifExtensionToGCB(ext[0], ext + 1, &gcb) == GIF_OK) {
                *transparent = gcb.TransparentColor;
                if (control) *control = gcb;
            }
        }
        while (ext) {
            if (DGifGetExtensionNext(gif, &ext) == GIF_ERROR) return fail(gif, options, ATTACHE_ERR_INVALID, NULL);
        }
    }
}

// What read_lzw returns when the caller's abort function said stop: told apart from the
// problems of a stream by its address.
static const char lzw_aborted[] = "aborted";

// An LZW code stream read by GIF's rules: every code in the table as it grows (a code past it
// is corrupt), the code width growing as the table does, clear codes, and `needed` pixels (the
// frame's rectangle) before the end code or the data run out; `data` has 8 readable bytes past
// its end. NULL when it holds, else what is wrong. What follows the pixels is not read (giflib
// does not either).
// With `base` NULL it only checks (a later frame): each table entry keeps just its pixel count,
// so the work is per code, not per pixel. Otherwise it decodes the pixels (palette indices as
// stored: row after row, interlaced or not): each entry also keeps where its string was first
// written. A new entry is the previous string and the pixel after it, which is the next
// string's first and was written right behind it, so a code's string is one copy from earlier
// output rather than a walk down a chain of prefixes pixel by pixel (giflib's way: 20x slower on
// a 1280x800 frame, 5.5 ms against 0.28 ms with the blocks read). `base`
// holds the 256 one-pixel strings, the pixels from base + 256, and 16 spare bytes past them:
// strings are copied 16 bytes at a time, each chunk loaded before it is stored.
// The count of the code before is carried in a register (a new entry is it plus one) rather
// than read back from the table, and the rare cases are marked so: the check is 1.6x faster.
// Inlined into its two callers, so that the check has no trace of the decode.
static inline __attribute__((always_inline)) const char *read_lzw(const uint8_t *data, size_t length, int min_size, uint64_t needed,
                                                                  uint8_t *base, attache_decode_options *options) {
    const int clear = 1 << min_size, end = clear + 1;
    uint32_t starts[4096], lengths[4096];
    for (int i = 0; i < clear; i++) lengths[i] = 1;
    if (base) {
        for (int i = 0; i < 256; i++) base[i] = (uint8_t)i;
        for (int i = 0; i < clear; i++) starts[i] = (uint32_t)i;
    }
    int next = clear + 2, width = min_size + 1;
    uint32_t mask = (1u << width) - 1;
    uint32_t previous = 0, previous_start = 0;  // the code before: its pixels (0 at the start and after a clear), where
    uint64_t pixels = 0;
    const uint64_t bits = (uint64_t)length * 8;
    uint64_t at = 0;
    for (uint32_t codes = 1; pixels < needed; codes++) {
        if (__builtin_expect(at + (uint64_t)width > bits, 0)) return "its data ends";
        uint64_t word;
        memcpy(&word, data + (at >> 3), 8);
        const int code = (int)((word >> (at & 7)) & mask);
        at += (uint64_t)width;
        if (__builtin_expect(code == clear, 0)) {
            next = clear + 2;
            width = min_size + 1;
            mask = (1u << width) - 1;
            previous = 0;
            continue;
        }
        if (__builtin_expect(code == end, 0)) return "its end code comes too soon";
        uint32_t from = 0, count;
        if (__builtin_expect(code < next, 1)) {
            // A pixel, or a string in the table (none right after a clear: next is then end + 1).
            if (base) from = starts[code];
            count = lengths[code];
        } else if (code == next && previous) {
            // The entry being made: the previous string and its own first pixel.
            from = previous_start;
            count = previous + 1;
        } else {
            return "an LZW code past the table";
        }
        const uint32_t here = (uint32_t)(256 + pixels);
        if (base) {
            const uint32_t n = count < needed - pixels ? count : (uint32_t)(needed - pixels);
            for (uint32_t i = 0; i < n; i += 16) {
                uint8_t chunk[16];
                memcpy(chunk, base + from + i, 16);
                memcpy(base + here + i, chunk, 16);
            }
            if (code == next && count <= n) base[here + count - 1] = base[from];
        }
        if (__builtin_expect(previous && next < 4096, 1)) {
            if (base) starts[next] = previous_start;
            lengths[next++] = previous + 1;
            if (__builtin_expect(next > (int)mask, 0) && width < 12) {
                width++;
                mask = mask * 2 + 1;
            }
        }
        previous = count;
        previous_start = here;
        pixels += count;
        if (base && (codes & 0xFFFF) == 0 && should_abort(options)) return lzw_aborted;
    }
    return NULL;
}

static const char *check_lzw(const uint8_t *data, size_t length, int min_size, uint64_t needed) {
    return read_lzw(data, length, min_size, needed, NULL, NULL);
}

static const char *decode_lzw(const uint8_t *data, size_t length, int min_size, uint8_t *base, uint32_t needed,
                              attache_decode_options *options) {
    return read_lzw(data, length, min_size, needed, base, options);
}

// A frame's code stream: its data blocks joined (their lengths checked by giflib as it reads
// them), with 8 readable bytes past the end for the code reader. The buffer is kept from frame
// to frame.
typedef struct {
    uint8_t *data;
    size_t length, capacity;
    int min_size;
} code_stream;

static attache_status read_code_stream(GifFileType *gif, attache_decode_options *options, int frame, code_stream *stream) {
    GifByteType *block;
    if (DGifGetCode(gif, &stream->min_size, &block) == GIF_ERROR) return fail(gif, options, ATTACHE_ERR_INVALID, NULL);
    if (stream->min_size < 1 || stream->min_size > 8) {
        char what[96];
        snprintf(what, sizeof what, "frame %d has an LZW code size of %d", frame, stream->min_size);
        return fail(gif, options, ATTACHE_ERR_INVALID, what);
    }
    stream->length = 0;
    for (;;) {
        size_t n = block ? block[0] : 0;
        if (stream->length + n + 8 > stream->capacity) {
            size_t grown = stream->capacity ? stream->capacity * 2 : 64 * 1024;
            while (grown < stream->length + n + 8) grown *= 2;
            uint8_t *bigger = realloc(stream->data, grown);
            if (!bigger) return fail(gif, options, ATTACHE_ERR_NOMEM, "out of memory");
            stream->data = bigger;
            stream->capacity = grown;
        }
        if (!block) break;
        memcpy(stream->data + stream->length, block + 1, n);
        stream->length += n;
        if (DGifGetCodeNext(gif, &block) == GIF_ERROR) return fail(gif, options, ATTACHE_ERR_INVALID, NULL);
    }
    memset(stream->data + stream->length, 0, 8);
    return ATTACHE_OK;
}

static attache_status does_not_decode(GifFileType *gif, attache_decode_options *options, int frame, const char *problem) {
    char what[96];
    snprintf(what, sizeof what, "frame %d does not decode (%s)", frame, problem);
    return fail(gif, options, ATTACHE_ERR_INVALID, what);
}

// A later frame: its code stream read, then checked.
static attache_status check_code_stream(GifFileType *gif, attache_decode_options *options, int frame, code_stream *stream) {
    attache_status status = read_code_stream(gif, options, frame, stream);
    if (status != ATTACHE_OK) return status;
    const char *problem = check_lzw(stream->data, stream->length, stream->min_size, (uint64_t)gif->Image.Width * (uint64_t)gif->Image.Height);
    if (problem) return does_not_decode(gif, options, frame, problem);
    return should_abort(options) ? fail(gif, options, ATTACHE_ERR_ABORTED, "aborted") : ATTACHE_OK;
}

// A frame's pixels, decoded whole: *base (to free) and *pixels, its Width x Height indices.
static attache_status decode_frame(GifFileType *gif, attache_decode_options *options, int frame, code_stream *stream,
                                   uint8_t **base, const uint8_t **pixels) {
    *base = NULL;
    const uint64_t needed = (uint64_t)gif->Image.Width * (uint64_t)gif->Image.Height;
    if (needed > UINT32_MAX - 512) return fail(gif, options, ATTACHE_ERR_LIMITS, "frame size out of range");
    attache_status status = read_code_stream(gif, options, frame, stream);
    if (status != ATTACHE_OK) return status;
    if (!(*base = malloc(256 + needed + 16))) return fail(gif, options, ATTACHE_ERR_NOMEM, "out of memory");
    const char *problem = decode_lzw(stream->data, stream->length, stream->min_size, *base, (uint32_t)needed, options);
    if (problem) {
        free(*base);
        *base = NULL;
        if (problem == lzw_aborted) return fail(gif, options, ATTACHE_ERR_ABORTED, "aborted");
        return does_not_decode(gif, options, frame, problem);
    }
    *pixels = *base + 256;
    return ATTACHE_OK;
}

// A frame whose data another walker checks: its data blocks read past (their lengths checked by
// giflib), nothing else.
static attache_status skip_code_stream(GifFileType *gif, attache_decode_options *options) {
    int min_size;
    GifByteType *block;
    if (DGifGetCode(gif, &min_size, &block) == GIF_ERROR) return fail(gif, options, ATTACHE_ERR_INVALID, NULL);
    while (block) {
        if (DGifGetCodeNext(gif, &block) == GIF_ERROR) return fail(gif, options, ATTACHE_ERR_INVALID, NULL);
    }
    return ATTACHE_OK;
}

// The frames after the first, checked by two walkers at once: the decoder's thread once it has
// the first frame, and a thread of its own from the start (with a giflib reader of its own over
// the same bytes). Why: the code-stream check of a 60-frame GIF took longer than the first
// frame's decode and scale, one after the other. Each walker reads every frame's blocks (cheap:
// they are copied, not decoded) and checks the code streams of the frames it claims first; the
// answer is the earliest bad frame, as one walker in order would find it.
typedef struct {
    const uint8_t *data;
    size_t length;
    attache_decode_options options;  // the second walker's copy: its own message
    atomic_int next;                 // the earliest later frame neither walker has claimed
    atomic_int last;                 // walkers stop past this frame (the earliest bad one found so far)
    pthread_mutex_t lock;
    attache_status status;           // of that frame, and why
    char message[sizeof ((attache_decode_options *)0)->message];
} later_frames;

static void found_bad(later_frames *s, int frame, attache_status status, const char *message) {
    pthread_mutex_lock(&s->lock);
    if (frame < atomic_load(&s->last)) {
        atomic_store(&s->last, frame);
        s->status = status;
        snprintf(s->message, sizeof s->message, "%s", message);
    }
    pthread_mutex_unlock(&s->lock);
}

// Frames 2 onwards to the trailer, from a reader just past the first frame's data.
static void walk_later_frames(later_frames *s, GifFileType *gif, attache_decode_options *options) {
    int transparent = -1, done = 0;
    code_stream stream = { 0 };
    for (int frame = 2; frame <= atomic_load(&s->last); frame++) {
        attache_status status = next_image(gif, options, &transparent, &done, NULL);
        if (status == ATTACHE_OK && done) break;
        if (status == ATTACHE_OK && options->max_frames > 0 && frame > options->max_frames)
            status = fail(gif, options, ATTACHE_ERR_LIMITS, "too many frames");
        if (status == ATTACHE_OK) {
            // Claimed when no walker has got further (a walker at frame f has claimed or passed
            // every frame before it, so `next` is never below f).
            int unclaimed = frame;
            status = atomic_compare_exchange_strong(&s->next, &unclaimed, frame + 1)
                         ? check_code_stream(gif, options, frame, &stream)
                         : skip_code_stream(gif, options);
        }
        if (status != ATTACHE_OK) {
            found_bad(s, frame, status, options->message);
            break;
        }
    }
    free(stream.data);
}

static void *second_walker(void *context) {
    later_frames *s = context;
    reader r = { s->data, s->length, 0 };
    int error = 0, transparent = -1, done = 0;
    GifFileType *gif = DGifOpen(&r, read_data, &error);
    if (!gif) return NULL;  // the decoder's walker then claims every frame
    if (next_image(gif, &s->options, &transparent, &done, NULL) == ATTACHE_OK && !done &&
        skip_code_stream(gif, &s->options) == ATTACHE_OK)
        walk_later_frames(s, gif, &s->options);
    DGifCloseFile(gif, NULL);
    return NULL;
}

// A progressive frame the size of the screen: decoded whole, its rows then go through the palette
// into the shrinker, with no canvas: as premultiplied RGBA when a pixel is transparent, else as
// RGB (encoders such as FFmpeg's declare a transparent index on every frame, used or not: one
// scan of the indices tells, and an opaque frame has a quarter less to map and shrink).
static attache_status stream_covering_frame(GifFileType *gif, ColorMapObject *map, int transparent,
                                            attache_decode_options *options, attache_image *out) {
    const int w = gif->Image.Width, h = gif->Image.Height;
    code_stream stream = { 0 };
    uint8_t *base;
    const uint8_t *pixels;
    attache_status status = decode_frame(gif, options, 1, &stream, &base, &pixels);
    free(stream.data);
    if (status != ATTACHE_OK) return status;
    if (transparent >= 0 && !memchr(pixels, transparent, (size_t)w * h)) transparent = -1;
    const int channels = transparent >= 0 ? 4 : 3;
    attache_shrinker shrinker;
    uint8_t *row = malloc((size_t)w * channels);
    if (!row || !attache_shrinker_init(&shrinker, w, h, channels, options->shrink, 0)) {
        free(row); free(base);
        return fail(gif, options, ATTACHE_ERR_NOMEM, "out of memory");
    }
    // The palette as ready-made pixels, all 256 indices: one past the table is black (never a
    // read past it), the transparent one is clear.
    uint8_t colours[256][4];
    for (int i = 0; i < 256; i++) {
        GifColorType c = i < map->ColorCount ? map->Colors[i] : (GifColorType){ 0, 0, 0 };
        colours[i][0] = c.Red; colours[i][1] = c.Green; colours[i][2] = c.Blue; colours[i][3] = 255;
    }
    if (transparent >= 0 && transparent < 256) memset(colours[transparent], 0, 4);
    for (int y = 0; y < h && status == ATTACHE_OK; y++) {
        const uint8_t *line = pixels + (size_t)y * w;
        if (channels == 4) {
            for (int x = 0; x < w; x++) memcpy(row + x * 4, colours[line[x]], 4);
        } else {
            for (int x = 0; x < w; x++) memcpy(row + x * 3, colours[line[x]], 3);
        }
        attache_shrinker_push(&shrinker, row);
        if ((y & 31) == 31 && should_abort(options)) status = ATTACHE_ERR_ABORTED;
    }
    free(row);
    free(base);
    if (status != ATTACHE_OK) {
        attache_shrinker_free(&shrinker);
        return fail(gif, options, status, "aborted");
    }
    attache_shrinker_finish(&shrinker, out);
    return ATTACHE_OK;
}

// Draws the current frame (its `frame` number for messages) onto a premultiplied RGBA canvas of
// the screen's size (interlaced rows in their four passes); transparent and out-of-table indices
// leave the canvas as it was.
static attache_status draw_frame(GifFileType *gif, ColorMapObject *map, int transparent, uint8_t *canvas, int frame,
                                 attache_decode_options *options, int *any_transparent) {
    const int sw = gif->SWidth, sh = gif->SHeight;
    GifImageDesc *d = &gif->Image;
    static const int offsets[] = { 0, 4, 2, 1 }, steps[] = { 8, 8, 4, 2 };
    code_stream stream = { 0 };
    uint8_t *base;
    const uint8_t *pixels;
    attache_status status = decode_frame(gif, options, frame, &stream, &base, &pixels);
    free(stream.data);
    if (status != ATTACHE_OK) return status;
    // The palette as whole pixels, all 256 indices, in the canvas's byte order: transparent and
    // out-of-table indices are 0 (alpha 0, which no drawn pixel has), and leave the canvas as it was.
    uint32_t colours[256];
    for (int i = 0; i < 256; i++) {
        GifColorType c = i < map->ColorCount ? map->Colors[i] : (GifColorType){ 0, 0, 0 };
        uint8_t p[4] = { c.Red, c.Green, c.Blue, 255 };
        memcpy(&colours[i], p, 4);
        if (i == transparent || i >= map->ColorCount) colours[i] = 0;
    }
    // The columns of the frame on the screen, once for every row.
    const int x0 = d->Left < 0 ? -d->Left : 0;
    const int x1 = d->Left + d->Width > sw ? sw - d->Left : d->Width;
    int passes = d->Interlace ? 4 : 1;
    int rows_done = 0, holes = 0;
    for (int pass = 0; pass < passes; pass++) {
        int start = d->Interlace ? offsets[pass] : 0, step = d->Interlace ? steps[pass] : 1;
        for (int y = start; y < d->Height; y += step) {
            const uint8_t *line = pixels + (size_t)rows_done++ * d->Width;  // rows as stored
            int cy = d->Top + y;
            if (cy < 0 || cy >= sh || x1 <= x0) continue;
            uint8_t *row = canvas + ((size_t)cy * sw + d->Left) * 4;
            for (int x = x0; x < x1; x++) {
                uint32_t v = colours[line[x]];
                if (v) memcpy(row + (size_t)x * 4, &v, 4);
                else holes = 1;
            }
            if ((rows_done & 31) == 0 && should_abort(options)) {
                free(base);
                return fail(gif, options, ATTACHE_ERR_ABORTED, "aborted");
            }
        }
    }
    free(base);
    if (holes) *any_transparent = 1;
    return ATTACHE_OK;
}

// A first frame that does not cover the screen, or is interlaced: composited onto a premultiplied
// RGBA canvas (what it does not cover stays transparent), which then streams into the shrinker.
static attache_status composite_first_frame(GifFileType *gif, ColorMapObject *map, int transparent,
                                            attache_decode_options *options, attache_image *out) {
    const int sw = gif->SWidth, sh = gif->SHeight;
    GifImageDesc *d = &gif->Image;
    int covers = d->Left == 0 && d->Top == 0 && d->Width == sw && d->Height == sh;
    uint8_t *canvas = calloc((size_t)sw * sh, 4);
    if (!canvas) return fail(gif, options, ATTACHE_ERR_NOMEM, "out of memory");
    int any_transparent = !covers;
    attache_status status = draw_frame(gif, map, transparent, canvas, 1, options, &any_transparent);
    if (status != ATTACHE_OK) {
        free(canvas);
        return status;
    }

    attache_shrinker shrinker;
    int channels = any_transparent ? 4 : 3;
    uint8_t *rgb = channels == 3 ? malloc((size_t)sw * 3) : NULL;
    if ((channels == 3 && !rgb) || !attache_shrinker_init(&shrinker, sw, sh, channels, options->shrink, 0)) {
        free(canvas); free(rgb);
        return fail(gif, options, ATTACHE_ERR_NOMEM, "out of memory");
    }
    for (int y = 0; y < sh; y++) {
        const uint8_t *row = canvas + (size_t)y * sw * 4;
        if (channels == 3) {
            for (int x = 0; x < sw; x++) { rgb[x * 3] = row[x * 4]; rgb[x * 3 + 1] = row[x * 4 + 1]; rgb[x * 3 + 2] = row[x * 4 + 2]; }
            attache_shrinker_push(&shrinker, rgb);
        } else {
            attache_shrinker_push(&shrinker, row);
        }
    }
    free(rgb);
    free(canvas);
    attache_shrinker_finish(&shrinker, out);
    return ATTACHE_OK;
}

attache_status attache_gif_decode(const uint8_t *data, size_t length, attache_decode_options *options, attache_image *out) {
    reader r = { data, length, 0 };
    int error = 0;
    memset(out, 0, sizeof *out);
    options->message[0] = 0;
    GifFileType *gif = DGifOpen(&r, read_data, &error);
    if (!gif) {
        snprintf(options->message, sizeof options->message, "%s", GifErrorString(error) ? GifErrorString(error) : "not a GIF");
        return ATTACHE_ERR_INVALID;
    }
    attache_status status = ATTACHE_OK;
    int transparent = -1, done = 0;
    const int sw = gif->SWidth, sh = gif->SHeight;
    if (sw <= 0 || sh <= 0) status = fail(gif, options, ATTACHE_ERR_INVALID, "empty logical screen");
    else if ((uint64_t)sw * sh > options->max_pixels) status = fail(gif, options, ATTACHE_ERR_LIMITS, "logical screen exceeds the pixel limit");
    else status = next_image(gif, options, &transparent, &done, NULL);
    if (status == ATTACHE_OK && done) status = fail(gif, options, ATTACHE_ERR_INVALID, "GIF has no image");
    later_frames later = { .data = data, .length = length, .options = *options, .next = 2, .last = INT_MAX };
    pthread_mutex_init(&later.lock, NULL);
    pthread_t thread;
    // A small file's frames are checked by this thread alone: a thread would cost more than it saves.
    int second = status == ATTACHE_OK && length >= 64 * 1024 && pthread_create(&thread, NULL, second_walker, &later) == 0;
    if (status == ATTACHE_OK) {
        const GifImageDesc *d = &gif->Image;
        ColorMapObject *map = d->ColorMap ? d->ColorMap : gif->SColorMap;
        int covers = d->Left == 0 && d->Top == 0 && d->Width == sw && d->Height == sh;
        status = covers && !d->Interlace ? stream_covering_frame(gif, map, transparent, options, out)
                                         : composite_first_frame(gif, map, transparent, options, out);
    }
    if (status == ATTACHE_OK) walk_later_frames(&later, gif, options);
    else atomic_store(&later.last, 1);  // the first frame decides: the second walker stops
    if (second) pthread_join(thread, NULL);
    pthread_mutex_destroy(&later.lock);
    if (status == ATTACHE_OK && atomic_load(&later.last) != INT_MAX) {
        status = later.status;
        snprintf(options->message, sizeof options->message, "%s", later.message);
        attache_image_free(out);
    }
    DGifCloseFile(gif, NULL);
    return status;
}

// Every frame, composited as a viewer shows it: each drawn over what the one before left, after
// that one's disposal (none, back to transparent, or back to what was there before it).
typedef struct {
    attache_frames base;
    GifFileType *gif;
    reader r;
    uint8_t *canvas, *saved;
    int frames;            // returned so far
    int disposal;          // of the frame returned last, applied before drawing the next
    GifImageDesc area;     // where that frame was
} gif_frames;

static attache_status gif_next(attache_frames *frames, attache_decode_options *options, attache_image *out, int *duration_ms) {
    gif_frames *f = (gif_frames *)frames;
    GifFileType *gif = f->gif;
    const int sw = gif->SWidth, sh = gif->SHeight;
    if (f->disposal == DISPOSE_BACKGROUND) {
        for (int y = f->area.Top; y < f->area.Top + f->area.Height && y < sh; y++) {
            int x0 = f->area.Left < sw ? f->area.Left : sw, x1 = f->area.Left + f->area.Width < sw ? f->area.Left + f->area.Width : sw;
            if (y >= 0 && x0 >= 0 && x1 > x0) memset(f->canvas + ((size_t)y * sw + x0) * 4, 0, (size_t)(x1 - x0) * 4);
        }
    } else if (f->disposal == DISPOSE_PREVIOUS) {
        memcpy(f->canvas, f->saved, (size_t)sw * sh * 4);
    }
    int transparent = -1, done = 0;
    GraphicsControlBlock control;
    attache_status status = next_image(gif, options, &transparent, &done, &control);
    if (status != ATTACHE_OK) return status;
    if (done) return ATTACHE_ERR_INVALID;  // the end: no message
    f->frames++;
    if (options->max_frames > 0 && f->frames > options->max_frames) return fail(gif, options, ATTACHE_ERR_LIMITS, "too many frames");
    if (control.DisposalMode == DISPOSE_PREVIOUS) memcpy(f->saved, f->canvas, (size_t)sw * sh * 4);
    ColorMapObject *map = gif->Image.ColorMap ? gif->Image.ColorMap : gif->SColorMap;
    int any_transparent = 0;
    status = draw_frame(gif, map, transparent, f->canvas, f->frames, options, &any_transparent);
    if (status != ATTACHE_OK) return status;
    f->disposal = control.DisposalMode;
    f->area = gif->Image;
    *duration_ms = control.DelayTime * 10;
    status = attache_shrink_buffer(f->canvas, sw, sh, (size_t)sw * 4, 4, 0, options->shrink, out);
    return status == ATTACHE_OK ? ATTACHE_OK : fail(gif, options, status, "out of memory");
}

static void gif_close(attache_frames *frames) {
    gif_frames *f = (gif_frames *)frames;
    DGifCloseFile(f->gif, NULL);
    free(f->canvas);
    free(f->saved);
    free(f);
}

attache_status attache_gif_frames_open(const uint8_t *data, size_t length, attache_decode_options *options, attache_frames **out) {
    options->message[0] = 0;
    *out = NULL;
    gif_frames *f = calloc(1, sizeof *f);
    if (!f) return attache_fail(options, ATTACHE_ERR_NOMEM, "out of memory");
    f->r = (reader){ data, length, 0 };
    int error = 0;
    f->gif = DGifOpen(&f->r, read_data, &error);
    if (!f->gif) {
        free(f);
        return attache_fail(options, ATTACHE_ERR_INVALID, GifErrorString(error) ? GifErrorString(error) : "not a GIF");
    }
    const int sw = f->gif->SWidth, sh = f->gif->SHeight;
    attache_status status = ATTACHE_OK;
    if (sw <= 0 || sh <= 0) status = attache_fail(options, ATTACHE_ERR_INVALID, "empty logical screen");
    else if ((uint64_t)sw * sh > options->max_pixels) status = attache_fail(options, ATTACHE_ERR_LIMITS, "logical screen exceeds the pixel limit");
    else if (!(f->canvas = calloc((size_t)sw * sh, 4)) || !(f->saved = malloc((size_t)sw * sh * 4)))
        status = attache_fail(options, ATTACHE_ERR_NOMEM, "out of memory");
    if (status != ATTACHE_OK) {
        gif_close(&f->base);
        return status;
    }
    f->base.next = gif_next;
    f->base.close = gif_close;
    *out = &f->base;
    return ATTACHE_OK;
}
