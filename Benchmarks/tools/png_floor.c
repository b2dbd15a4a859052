// The floor of decoding a PNG: libpng reading every row with no transformation (inflate and
// unfilter, nothing else: zlib's Adler-32 skipped, as Attache skips it), in this process, the median of N; and, for the question whether a faster
// inflate pays for itself, the inflate alone over the concatenated IDAT data by zlib and by
// libdeflate (whole buffers only: the whole inflated image in memory at once).
// Built by Benchmarks/render.sh with the system's cc; not part of Attache.
#include <png.h>
#include <zlib.h>
#include <libdeflate.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

typedef struct { const unsigned char *data; size_t size, at; } source;

static void read_fn(png_structp png, png_bytep out, png_size_t n) {
    source *s = png_get_io_ptr(png);
    if (s->at + n > s->size) png_error(png, "short");
    memcpy(out, s->data + s->at, n);
    s->at += n;
}

static double libpng_rows(const unsigned char *data, size_t size) {
    source s = { data, size, 0 };
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    if (setjmp(png_jmpbuf(png))) { fprintf(stderr, "libpng error\n"); exit(1); }
    png_set_read_fn(png, &s, read_fn);
    png_set_option(png, PNG_IGNORE_ADLER32, PNG_OPTION_ON);  // as Attache reads (the chunks' CRCs are checked)
    double start = now_ms();
    png_read_info(png, info);
    size_t rowbytes = png_get_rowbytes(png, info);
    unsigned char *row = malloc(rowbytes);
    int passes = png_set_interlace_handling(png);
    for (int p = 0; p < passes; p++)
        for (png_uint_32 y = 0; y < png_get_image_height(png, info); y++) png_read_row(png, row, NULL);
    double ms = now_ms() - start;
    free(row);
    png_destroy_read_struct(&png, &info, NULL);
    return ms;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

// The statistic the render beside it is given in: a best-of and a median drift apart on a busy machine.
static double median(double *values, int count) {
    qsort(values, (size_t)count, sizeof(double), by_value);
    return count % 2 ? values[count / 2] : (values[count / 2 - 1] + values[count / 2]) / 2;
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: png_floor FILE [RUNS]\n"); return 2; }
    int runs = argc > 2 ? atoi(argv[2]) : 10;
    FILE *f = fopen(argv[1], "rb");
    if (!f) { perror(argv[1]); return 1; }
    fseek(f, 0, SEEK_END);
    size_t size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *data = malloc(size);
    if (fread(data, 1, size, f) != size) return 1;
    fclose(f);
    // The zlib stream: every IDAT chunk's data, in order.
    unsigned char *idat = malloc(size);
    size_t idat_size = 0;
    unsigned w = 0, h = 0, bit_depth = 0, colour = 0;
    for (size_t at = 8; at + 12 <= size;) {
        size_t n = (size_t)data[at] << 24 | data[at + 1] << 16 | data[at + 2] << 8 | data[at + 3];
        if (!memcmp(data + at + 4, "IHDR", 4)) {
            w = data[at + 8] << 24 | data[at + 9] << 16 | data[at + 10] << 8 | data[at + 11];
            h = data[at + 12] << 24 | data[at + 13] << 16 | data[at + 14] << 8 | data[at + 15];
            bit_depth = data[at + 16];
            colour = data[at + 17];
        }
        if (!memcmp(data + at + 4, "IDAT", 4)) { memcpy(idat + idat_size, data + at + 8, n); idat_size += n; }
        at += n + 12;
    }
    int channels = colour == 6 ? 4 : colour == 2 ? 3 : colour == 4 ? 2 : 1;
    size_t raw_size = (size_t)h * (1 + (size_t)w * channels * bit_depth / 8);
    unsigned char *raw = malloc(raw_size);
    double *rows = calloc((size_t)runs, sizeof(double)), *zlib = calloc((size_t)runs, sizeof(double));
    double *deflate = calloc((size_t)runs, sizeof(double));
    struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
    for (int i = 0; i < runs; i++) {
        double ms = libpng_rows(data, size);
        rows[i] = ms;
        uLongf out = raw_size;
        double start = now_ms();
        if (uncompress(raw, &out, idat, idat_size) != Z_OK) { fprintf(stderr, "zlib error\n"); return 1; }
        zlib[i] = now_ms() - start;
        size_t got = 0;
        start = now_ms();
        if (libdeflate_zlib_decompress(d, idat, idat_size, raw, raw_size, &got) != LIBDEFLATE_SUCCESS) {
            fprintf(stderr, "libdeflate error\n");
            return 1;
        }
        deflate[i] = now_ms() - start;
    }
    printf("%ux%u %u-bit %d channels: libpng rows (inflate + unfilter) %.1f ms; inflate alone: zlib %s %.1f ms, libdeflate %.1f ms "
           "(whole %.0f MB buffer)\n", w, h, bit_depth, channels, median(rows, runs), zlibVersion(), median(zlib, runs), median(deflate, runs), raw_size / 1048576.0);
    return 0;
}
