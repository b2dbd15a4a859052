// Pixel operations on small images: resample, crop, orientation, alpha handling.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "attache_codecs.h"
#include "rows.h"

typedef struct {
    int start;
    int count;
    float *weights;
} contribution;

static float cubic(float x) {  // Catmull-Rom
    x = fabsf(x);
    if (x < 1.0f) return 1.5f * x * x * x - 2.5f * x * x + 1.0f;
    if (x < 2.0f) return -0.5f * x * x * x + 2.5f * x * x - 4.0f * x + 2.0f;
    return 0.0f;
}

// Weights for each output sample; the kernel is widened by the scale factor when shrinking, so
// every source pixel contributes (an antialiased resample, not point sampling).
static contribution *contributions(int in_size, int out_size, float **storage) {
    float scale = (float)in_size / (float)out_size;
    float widen = scale > 1.0f ? scale : 1.0f;
    float support = 2.0f * widen;
    int max_count = (int)ceilf(support * 2.0f) + 2;
    contribution *list = malloc(sizeof(contribution) * (size_t)out_size);
    float *weights = malloc(sizeof(float) * (size_t)out_size * max_count);
    if (!list || !weights) { free(list); free(weights); return NULL; }
    for (int i = 0; i < out_size; i++) {
        float center = (i + 0.5f) * scale - 0.5f;
        int start = (int)floorf(center - support) + 1;
        int end = (int)floorf(center + support);
        if (start < 0) start = 0;
        if (end > in_size - 1) end = in_size - 1;
        float *w = weights + (size_t)i * max_count;
        int count = 0;
        float sum = 0;
        for (int j = start; j <= end && count < max_count; j++) {
            float v = cubic((j - center) / widen);
            w[count++] = v;
            sum += v;
        }
        if (sum != 0) for (int k = 0; k < count; k++) w[k] /= sum;
        list[i].start = start;
        list[i].count = count;
        list[i].weights = w;
    }
    *storage = weights;
    return list;
}

static inline uint8_t clamp8(float v) {
    return v <= 0.0f ? 0 : v >= 255.0f ? 255 : (uint8_t)(v + 0.5f);
}

// Each source row is widened once into 4-float pixels (lanes past the channel count stay zero),
// so a tap is one vector multiply-add over the pixel's channels instead of a conversion and a
// multiply-add per channel. Each lane sums its taps in the same order as a per-channel loop would.
typedef float float4 __attribute__((vector_size(16)));

static inline __attribute__((always_inline)) void horizontal_row(const uint8_t *src, int in_width, const contribution *h,
                                                                 int width, float *t, float4 *row, const int c) {
    for (int x = 0; x < in_width; x++) {
        const uint8_t *p = src + (size_t)x * c;
        row[x] = (float4){ p[0], c > 1 ? p[1] : 0, c > 2 ? p[2] : 0, c > 3 ? p[3] : 0 };
    }
    for (int x = 0; x < width; x++) {
        const contribution *k = &h[x];
        const float4 *p = row + k->start;
        float4 acc = { 0, 0, 0, 0 };
        for (int j = 0; j < k->count; j++) acc += p[j] * k->weights[j];
        for (int ch = 0; ch < c; ch++) t[x * c + ch] = acc[ch];
    }
}

// Separable: each source row is resampled horizontally once, into a ring of as many rows as the
// widest vertical kernel needs, and each output row is summed from the ring. Output rows need
// source rows in order, so a row is dropped only when no later output row can need it. The ring
// stays in cache (a whole horizontally resampled image did not: 12 MB for a 1440x900 -> 1080x675
// resample, written once and read six times) and the memory is a few rows, not an image.
attache_status attache_resize(const attache_image *in, int width, int height, attache_image *out) {
    return attache_resize_rows(in, width, height, out, NULL);
}

attache_status attache_resize_rows(const attache_image *in, int width, int height, attache_image *out, attache_rows *gate) {
    memset(out, 0, sizeof *out);
    const int c = in->channels;
    if (width <= 0 || height <= 0 || in->width <= 0 || in->height <= 0 || c < 1 || c > 4) return ATTACHE_ERR_INVALID;
    const size_t row = (size_t)width * c;
    float *hs = NULL, *vs = NULL;
    contribution *h = contributions(in->width, width, &hs);
    contribution *v = contributions(in->height, height, &vs);
    int ring = 1;
    if (v) for (int y = 0; y < height; y++) if (v[y].count > ring) ring = v[y].count;
    float4 *wide = malloc(sizeof(float4) * (size_t)in->width);
    float *rows = malloc(sizeof(float) * row * ring);
    float *acc = malloc(sizeof(float) * row);
    uint8_t *dst = malloc(row * height);
    attache_status status = ATTACHE_OK;
    if (!h || !v || !wide || !rows || !acc || !dst) {
        status = ATTACHE_ERR_NOMEM;
        goto done;
    }
    int next = 0;  // the next source row to resample horizontally
    int final = gate ? 0 : in->height;  // source rows known to be finished
    for (int y = 0; y < height; y++) {
        const contribution *k = &v[y];
        for (; next < k->start + k->count; next++) {
            if (next >= final) final = attache_rows_wait(gate, next);
            if (next >= final || (gate && attache_rows_abandoned(gate))) {
                status = ATTACHE_ERR_ABORTED;  // the decoder ended without them, or is freeing them
                goto done;
            }
            const uint8_t *src = in->pixels + (size_t)next * in->width * c;
            float *t = rows + (size_t)(next % ring) * row;
            // With the channel count a constant, the per-channel loops unroll.
            switch (c) {
                case 1: horizontal_row(src, in->width, h, width, t, wide, 1); break;
                case 2: horizontal_row(src, in->width, h, width, t, wide, 2); break;
                case 3: horizontal_row(src, in->width, h, width, t, wide, 3); break;
                default: horizontal_row(src, in->width, h, width, t, wide, 4); break;
            }
        }
        uint8_t *d = dst + (size_t)y * row;
        // Tap by tap over whole rows: contiguous, so the compiler vectorises it.
        memset(acc, 0, sizeof(float) * row);
        for (int j = 0; j < k->count; j++) {
            const float *src = rows + (size_t)((k->start + j) % ring) * row;
            const float w = k->weights[j];
            for (size_t x = 0; x < row; x++) acc[x] += src[x] * w;
        }
        for (size_t x = 0; x < row; x++) d[x] = clamp8(acc[x]);
        if (c == 4) {  // premultiplied: colour can never exceed alpha
            for (int x = 0; x < width; x++) {
                uint8_t a = d[x * 4 + 3];
                for (int ch = 0; ch < 3; ch++) if (d[x * 4 + ch] > a) d[x * 4 + ch] = a;
            }
        }
    }
    out->pixels = dst;
    out->width = width;
    out->height = height;
    out->channels = c;
    dst = NULL;
done:
    free(h); free(hs); free(v); free(vs); free(wide); free(rows); free(acc); free(dst);
    return status;
}

void attache_fit_size(int width, int height, int edge, int *fit_width, int *fit_height) {
    int longest = width > height ? width : height;
    double scale = fmin(1.0, (double)edge / (double)longest);
    *fit_width = (int)round((double)width * scale);
    *fit_height = (int)round((double)height * scale);
    if (*fit_width < 1) *fit_width = 1;
    if (*fit_height < 1) *fit_height = 1;
}

attache_status attache_crop(const attache_image *in, int x, int y, int width, int height, attache_image *out) {
    memset(out, 0, sizeof *out);
    if (x < 0 || y < 0 || width <= 0 || height <= 0 || x + width > in->width || y + height > in->height)
        return ATTACHE_ERR_INVALID;
    const int c = in->channels;
    uint8_t *dst = malloc((size_t)width * height * c);
    if (!dst) return ATTACHE_ERR_NOMEM;
    for (int row = 0; row < height; row++)
        memcpy(dst + (size_t)row * width * c, in->pixels + ((size_t)(y + row) * in->width + x) * c, (size_t)width * c);
    out->pixels = dst;
    out->width = width;
    out->height = height;
    out->channels = c;
    return ATTACHE_OK;
}

attache_status attache_orient(const attache_image *in, int orientation, attache_image *out) {
    memset(out, 0, sizeof *out);
    if (orientation < 1 || orientation > 8) orientation = 1;
    const int c = in->channels, w = in->width, h = in->height;
    int swap = orientation >= 5;
    int ow = swap ? h : w, oh = swap ? w : h;
    uint8_t *dst = malloc((size_t)w * h * c);
    if (!dst) return ATTACHE_ERR_NOMEM;
    for (int y = 0; y < h; y++) {
        for (int x = 0; x < w; x++) {
            int dx, dy;
            switch (orientation) {
                case 2: dx = w - 1 - x; dy = y; break;            // mirror horizontal
                case 3: dx = w - 1 - x; dy = h - 1 - y; break;    // rotate 180
                case 4: dx = x; dy = h - 1 - y; break;            // mirror vertical
                case 5: dx = y; dy = x; break;                    // transpose
                case 6: dx = h - 1 - y; dy = x; break;            // rotate 90 CW
                case 7: dx = h - 1 - y; dy = w - 1 - x; break;    // transverse
                case 8: dx = y; dy = w - 1 - x; break;            // rotate 90 CCW
                default: dx = x; dy = y; break;
            }
            memcpy(dst + ((size_t)dy * ow + dx) * c, in->pixels + ((size_t)y * w + x) * c, (size_t)c);
        }
    }
    out->pixels = dst;
    out->width = ow;
    out->height = oh;
    out->channels = c;
    return ATTACHE_OK;
}

void attache_unpremultiply(attache_image *image) {
    if (image->channels != 4) return;
    size_t n = (size_t)image->width * image->height;
    for (size_t i = 0; i < n; i++) {
        uint8_t *p = image->pixels + i * 4;
        unsigned a = p[3];
        if (a == 0 || a == 255) continue;
        for (int ch = 0; ch < 3; ch++) {
            unsigned v = (p[ch] * 255u + a / 2) / a;
            p[ch] = (uint8_t)(v > 255 ? 255 : v);
        }
    }
}

int attache_is_opaque(const attache_image *image) {
    if (image->channels != 4) return 1;
    size_t n = (size_t)image->width * image->height;
    for (size_t i = 0; i < n; i++) if (image->pixels[i * 4 + 3] != 255) return 0;
    return 1;
}

void attache_drop_alpha(attache_image *image) {
    if (image->channels != 4) return;
    size_t n = (size_t)image->width * image->height;
    for (size_t i = 0; i < n; i++) {
        image->pixels[i * 3] = image->pixels[i * 4];
        image->pixels[i * 3 + 1] = image->pixels[i * 4 + 1];
        image->pixels[i * 3 + 2] = image->pixels[i * 4 + 2];
    }
    image->channels = 3;
}

void attache_flatten_on_white(attache_image *image) {
    if (image->channels != 4) return;
    size_t n = (size_t)image->width * image->height;
    for (size_t i = 0; i < n; i++) {
        const uint8_t *p = image->pixels + i * 4;
        unsigned under = 255u - p[3];  // premultiplied: colour + (1 - alpha) * white
        uint8_t r = (uint8_t)(p[0] + under), g = (uint8_t)(p[1] + under), b = (uint8_t)(p[2] + under);
        image->pixels[i * 3] = r;
        image->pixels[i * 3 + 1] = g;
        image->pixels[i * 3 + 2] = b;
    }
    image->channels = 3;
}

void attache_image_free(attache_image *image) {
    free(image->pixels);
    image->pixels = NULL;
}

void attache_buffer_free(uint8_t *buffer) { free(buffer); }
