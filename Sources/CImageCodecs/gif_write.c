// giflib, writing: an animated GIF in memory, frame after frame. Each frame is the whole canvas
// with its own palette from giflib's median-cut quantiser (GifQuantizeBuffer, MIT like the rest of
// giflib: libimagequant would dither better but is GPL-3). Index 255 is kept for transparency.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
#include <pthread.h>
#include <gif_lib.h>
#include "attache_codecs.h"

// GifQuantizeBuffer keeps the axis it sorts on in a static variable that qsort's comparison reads:
// two at once in one process (in-process decoding runs jobs in parallel) would sort by each
// other's axis. One at a time; a frame's palette takes a few milliseconds.
static pthread_mutex_t quantizer = PTHREAD_MUTEX_INITIALIZER;

struct attache_gif_writer {
    GifFileType *gif;
    int width, height;
    uint8_t *data;
    size_t length, capacity;
    int failed;       // the output buffer could not grow
    int started;      // screen descriptor and loop extension written
    GifByteType *planes;  // red, green, blue, then the indices: width * height each
};

static int write_bytes(GifFileType *gif, const GifByteType *bytes, int count) {
    attache_gif_writer *w = gif->UserData;
    if (w->length + (size_t)count > w->capacity) {
        size_t grown = w->capacity ? w->capacity * 2 : 64 * 1024;
        while (grown < w->length + (size_t)count) grown *= 2;
        uint8_t *data = realloc(w->data, grown);
        if (!data) { w->failed = 1; return 0; }
        w->data = data;
        w->capacity = grown;
    }
    memcpy(w->data + w->length, bytes, (size_t)count);
    w->length += (size_t)count;
    return count;
}

static attache_status failed(attache_gif_writer *w, char message[160], const char *what) {
    if (w->failed) {
        snprintf(message, 160, "out of memory");
        return ATTACHE_ERR_NOMEM;
    }
    const char *reason = GifErrorString(w->gif ? w->gif->Error : 0);
    snprintf(message, 160, "GIF %s: %s", what, reason ? reason : "failed");
    return ATTACHE_ERR_INVALID;
}

attache_gif_writer *attache_gif_writer_new(int width, int height) {
    if (width <= 0 || height <= 0 || width > 65535 || height > 65535) return NULL;
    attache_gif_writer *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->width = width;
    w->height = height;
    w->planes = malloc((size_t)width * height * 4);
    int error = 0;
    w->gif = w->planes ? EGifOpen(w, write_bytes, &error) : NULL;
    if (!w->gif) {
        free(w->planes);
        free(w);
        return NULL;
    }
    EGifSetGifVersion(w->gif, true);
    return w;
}

static int start(attache_gif_writer *w) {
    if (EGifPutScreenDesc(w->gif, w->width, w->height, 8, 0, NULL) == GIF_ERROR) return 0;
    // NETSCAPE2.0, loop count 0: play forever, as the animations it is made from do by default.
    static const GifByteType loop[3] = { 1, 0, 0 };
    return EGifPutExtensionLeader(w->gif, APPLICATION_EXT_FUNC_CODE) != GIF_ERROR &&
           EGifPutExtensionBlock(w->gif, 11, "NETSCAPE2.0") != GIF_ERROR &&
           EGifPutExtensionBlock(w->gif, 3, loop) != GIF_ERROR &&
           EGifPutExtensionTrailer(w->gif) != GIF_ERROR;
}

attache_status attache_gif_writer_add(attache_gif_writer *w, const attache_image *frame, int delay_cs, char message[160]) {
    if (frame->width != w->width || frame->height != w->height || (frame->channels != 3 && frame->channels != 4)) {
        snprintf(message, 160, "GIF frame of the wrong size");
        return ATTACHE_ERR_INVALID;
    }
    if (!w->started) {
        if (!start(w)) return failed(w, message, "header");
        w->started = 1;
    }
    const size_t n = (size_t)w->width * w->height;
    GifByteType *red = w->planes, *green = red + n, *blue = green + n, *indices = blue + n;
    int transparent = 0;
    for (size_t i = 0; i < n; i++) {
        const uint8_t *p = frame->pixels + i * frame->channels;
        unsigned alpha = frame->channels == 4 ? p[3] : 255;
        if (alpha == 0) { red[i] = green[i] = blue[i] = 0; continue; }
        // Premultiplied in, straight out.
        red[i] = (GifByteType)((p[0] * 255u + alpha / 2) / alpha);
        green[i] = (GifByteType)((p[1] * 255u + alpha / 2) / alpha);
        blue[i] = (GifByteType)((p[2] * 255u + alpha / 2) / alpha);
    }
    GifColorType colors[256];
    memset(colors, 0, sizeof colors);
    int count = 255;  // one index left for transparency
    pthread_mutex_lock(&quantizer);
    int quantized = GifQuantizeBuffer((unsigned)w->width, (unsigned)w->height, &count, red, green, blue, indices, colors);
    pthread_mutex_unlock(&quantizer);
    if (quantized == GIF_ERROR) {
        snprintf(message, 160, "GIF palette could not be made");
        return ATTACHE_ERR_NOMEM;
    }
    if (frame->channels == 4) {
        for (size_t i = 0; i < n; i++) {
            if (frame->pixels[i * 4 + 3] < 128) { indices[i] = (GifByteType)count; transparent = 1; }
        }
    }
    int table = 2;
    while (table < count + transparent) table *= 2;
    GraphicsControlBlock gcb = {
        // A frame with transparent pixels must not show the one before through them.
        .DisposalMode = transparent ? DISPOSE_BACKGROUND : DISPOSE_DO_NOT,
        .UserInputFlag = false,
        .DelayTime = delay_cs,
        .TransparentColor = transparent ? count : NO_TRANSPARENT_COLOR,
    };
    GifByteType extension[4];
    size_t extension_length = EGifGCBToExtension(&gcb, extension);
    ColorMapObject *map = GifMakeMapObject(table, colors);
    if (!map) {
        snprintf(message, 160, "out of memory");
        return ATTACHE_ERR_NOMEM;
    }
    int ok = EGifPutExtension(w->gif, GRAPHICS_EXT_FUNC_CODE, (int)extension_length, extension) != GIF_ERROR &&
             EGifPutImageDesc(w->gif, 0, 0, w->width, w->height, false, map) != GIF_ERROR;
    for (int y = 0; ok && y < w->height; y++) ok = EGifPutLine(w->gif, indices + (size_t)y * w->width, w->width) != GIF_ERROR;
    GifFreeMapObject(map);
    return ok ? ATTACHE_OK : failed(w, message, "frame");
}

size_t attache_gif_writer_size(const attache_gif_writer *w) {
    return w->length;
}

attache_status attache_gif_writer_finish(attache_gif_writer *w, uint8_t **out, size_t *out_length, char message[160]) {
    *out = NULL;
    *out_length = 0;
    int error = 0;
    int closed = EGifCloseFile(w->gif, &error);  // writes the trailer, frees giflib's state either way
    w->gif = NULL;
    if (closed == GIF_ERROR || w->failed || !w->started) {
        snprintf(message, 160, w->failed ? "out of memory" : "GIF could not be finished");
        return w->failed ? ATTACHE_ERR_NOMEM : ATTACHE_ERR_INVALID;
    }
    *out = w->data;
    *out_length = w->length;
    w->data = NULL;
    return ATTACHE_OK;
}

void attache_gif_writer_free(attache_gif_writer *w) {
    if (!w) return;
    if (w->gif) {
        int error;
        EGifCloseFile(w->gif, &error);
    }
    free(w->data);
    free(w->planes);
    free(w);
}
