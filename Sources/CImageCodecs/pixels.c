// Pixel operations on small images: resample, crop, orientation, alpha handling; whether a
// colour profile fits RGB pixels.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "attache_codecs.h"
#include "resizer.h"

struct attache_contribution {
    int start;
    int count;
    float *weights;
};
typedef struct attache_contribution contribution;

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
// widest vertical kernel needs, and each output row is summed from the ring as soon as its last
// source row is in. Output rows need source rows in order, so a row is dropped only when no later
// output row can need it. The ring stays in cache (a whole horizontally resampled image did not:
// 12 MB for a 1440x900 -> 1080x675 resample, written once and read six times) and the memory is
// a few rows, not an image. Rows are pushed, so that a decoder's or another resampler's rows can
// be taken as they are finished (rows.h).
attache_status attache_resizer_init(attache_resizer *r, int in_width, int in_height, int channels, int width, int height) {
    memset(r, 0, sizeof *r);
    if (width <= 0 || height <= 0 || in_width <= 0 || in_height <= 0 || channels < 1 || channels > 4) return ATTACHE_ERR_INVALID;
    r->in_width = in_width;
    r->width = width;
    r->height = height;
    r->channels = channels;
    const size_t row = (size_t)width * channels;
    r->h = contributions(in_width, width, &r->h_weights);
    r->v = contributions(in_height, height, &r->v_weights);
    r->ring = 1;
    if (r->v) for (int y = 0; y < height; y++) if (r->v[y].count > r->ring) r->ring = r->v[y].count;
    r->wide = malloc(sizeof(float4) * (size_t)in_width);
    r->rows = malloc(sizeof(float) * row * r->ring);
    r->acc = malloc(sizeof(float) * row);
    r->pixels = malloc(row * height);
    if (!r->h || !r->v || !r->wide || !r->rows || !r->acc || !r->pixels) {
        attache_resizer_free(r);
        return ATTACHE_ERR_NOMEM;
    }
    return ATTACHE_OK;
}

void attache_resizer_push(attache_resizer *r, const uint8_t *src) {
    if (r->made == r->height) return;  // every output row is made: the rest are not needed
    const int c = r->channels;
    const size_t row = (size_t)r->width * c;
    float *t = r->rows + (size_t)(r->pushed % r->ring) * row;
    // With the channel count a constant, the per-channel loops unroll.
    switch (c) {
        case 1: horizontal_row(src, r->in_width, r->h, r->width, t, r->wide, 1); break;
        case 2: horizontal_row(src, r->in_width, r->h, r->width, t, r->wide, 2); break;
        case 3: horizontal_row(src, r->in_width, r->h, r->width, t, r->wide, 3); break;
        default: horizontal_row(src, r->in_width, r->h, r->width, t, r->wide, 4); break;
    }
    r->pushed++;
    for (; r->made < r->height && r->v[r->made].start + r->v[r->made].count <= r->pushed; r->made++) {
        const contribution *k = &r->v[r->made];
        uint8_t *d = r->pixels + (size_t)r->made * row;
        float *acc = r->acc;
        // Tap by tap over whole rows: contiguous, so the compiler vectorises it.
        memset(acc, 0, sizeof(float) * row);
        for (int j = 0; j < k->count; j++) {
            const float *from = r->rows + (size_t)((k->start + j) % r->ring) * row;
            const float w = k->weights[j];
            for (size_t x = 0; x < row; x++) acc[x] += from[x] * w;
        }
        for (size_t x = 0; x < row; x++) d[x] = clamp8(acc[x]);
        if (c == 4) {  // premultiplied: colour can never exceed alpha
            for (int x = 0; x < r->width; x++) {
                uint8_t a = d[x * 4 + 3];
                for (int ch = 0; ch < 3; ch++) if (d[x * 4 + ch] > a) d[x * 4 + ch] = a;
            }
        }
        if (r->row_made) r->row_made(r->context, d, r->made);
    }
}

void attache_resizer_take(attache_resizer *r, attache_image *out) {
    out->pixels = r->pixels;
    out->width = r->width;
    out->height = r->height;
    out->channels = r->channels;
    r->pixels = NULL;
}

void attache_resizer_free(attache_resizer *r) {
    free(r->h); free(r->h_weights); free(r->v); free(r->v_weights);
    free(r->wide); free(r->rows); free(r->acc); free(r->pixels);
    memset(r, 0, sizeof *r);
}

attache_status attache_resize(const attache_image *in, int width, int height, attache_image *out) {
    memset(out, 0, sizeof *out);
    attache_resizer r;
    attache_status status = attache_resizer_init(&r, in->width, in->height, in->channels, width, height);
    if (status != ATTACHE_OK) return status;
    for (int y = 0; y < in->height && r.made < height; y++)
        attache_resizer_push(&r, in->pixels + (size_t)y * in->width * in->channels);
    attache_resizer_take(&r, out);
    attache_resizer_free(&r);
    return ATTACHE_OK;
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

int attache_icc_is_rgb(const uint8_t *icc, size_t length) {
    return icc && length >= 132 && memcmp(icc + 16, "RGB ", 4) == 0;
}

void attache_image_free(attache_image *image) {
    free(image->pixels);
    image->pixels = NULL;
}

void attache_buffer_free(uint8_t *buffer) { free(buffer); }
