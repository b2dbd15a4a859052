// Decoders, encoders and pixel operations for Attache, written against libjpeg-turbo, libpng,
// giflib, libwebp, libheif (HEIC), libavif (AVIF) and libjxl. All setjmp/longjmp error handling stays inside these C files; callers only ever see a
// status code and a message.
#ifndef ATTACHE_CODECS_H
#define ATTACHE_CODECS_H
#include <stddef.h>
#include <stdint.h>

typedef enum {
    ATTACHE_OK = 0,
    ATTACHE_ERR_INVALID = 1,   // corrupt, truncated or not this format
    ATTACHE_ERR_LIMITS = 2,    // over a pixel, memory, scan or size limit
    ATTACHE_ERR_ABORTED = 3,   // the caller's abort function said stop
    ATTACHE_ERR_NOMEM = 4,
    ATTACHE_ERR_UNSUPPORTED = 5
} attache_status;

/// An 8-bit image: `channels` is 3 (RGB) or 4 (RGBA). Decoders and operations hand out
/// premultiplied RGBA; `attache_unpremultiply` turns it back for encoding.
typedef struct {
    uint8_t *pixels;
    int width;
    int height;
    int channels;
} attache_image;

typedef int (*attache_abort_fn)(void *context);
/// Where a decoder publishes the rows it has finished (see attache_decode_resized).
typedef struct attache_rows attache_rows;

/// Bytes a progressive JPEG decoded at `scale_eighths`/8 keeps of each 8x8 block's coefficients
/// until its last scan: the store's record when the scaled IDCT reads few of them
/// (coefficients.c), else libjpeg's whole block (128).
size_t attache_jpeg_coefficient_block_bytes(int scale_eighths);

typedef struct {
    int scale_eighths;        // JPEG only: DCT scaling to n/8 (1-8; 0 means 8/8, no scaling)
    int shrink;               // integer box shrink applied to rows as they stream (>= 1)
    uint64_t max_pixels;      // limit on decoded pixels before the box shrink
    long max_memory;          // JPEG: libjpeg's own memory limit, in bytes
    int max_scans;            // JPEG: progressive scan limit
    // JPEG: libjpeg's own whole-image coefficient buffer for a progressive file, instead of the
    // store that keeps only what a scaled IDCT reads (coefficients.c); the reference it is tested against.
    int keep_all_coefficients;
    int max_frames;           // GIF: frame limit (0: none)
    attache_abort_fn abort_fn;
    void *abort_context;
    char message[160];        // set on failure
    // Out: the embedded ICC profile, when the decoder found one (malloc'd; attache_buffer_free).
    uint8_t *icc;
    size_t icc_length;
    // Set by attache_decode_resized only: the JPEG and PNG decoders publish finished rows there.
    attache_rows *rows;
    // The data is a read-only file mapping (MAP_PRIVATE, never written): the JPEG and PNG
    // decoders give back the pages they have read (madvise DONTNEED; a later read faults them
    // back in from the file). Never set for memory of any other kind: its bytes would be lost.
    int release_behind;
} attache_decode_options;

/// What a container says before a pixel is decoded, read by the format's own library.
typedef struct {
    int width;                // as decoded (HEIC grids whole), before `orientation`
    int height;
    int orientation;          // EXIF-style 1-8 still to apply (AVIF's irot/imir); 1 when the library applied it
    int frames;               // 1 for a still
    int has_alpha;
} attache_image_info;

attache_status attache_webp_info(const uint8_t *data, size_t length, attache_decode_options *options, attache_image_info *info);
attache_status attache_heif_info(const uint8_t *data, size_t length, attache_decode_options *options, attache_image_info *info);
attache_status attache_avif_info(const uint8_t *data, size_t length, attache_decode_options *options, attache_image_info *info);
attache_status attache_jxl_info(const uint8_t *data, size_t length, attache_decode_options *options, attache_image_info *info);

attache_status attache_jpeg_decode(const uint8_t *data, size_t length, attache_decode_options *options, attache_image *out);
attache_status attache_png_decode(const uint8_t *data, size_t length, attache_decode_options *options, attache_image *out);
/// Decodes and composites the first frame of a GIF onto its logical screen, then decodes every
/// later frame (and throws it away) up to the trailer: any that fails makes the GIF invalid.
attache_status attache_gif_decode(const uint8_t *data, size_t length, attache_decode_options *options, attache_image *out);

/// Stills (the first frame of an animation), upright (the libraries apply EXIF, irot and imir),
/// premultiplied RGBA or RGB, box-shrunk by `options->shrink`; the ICC profile in `options`.
attache_status attache_webp_decode(const uint8_t *data, size_t length, attache_decode_options *options, attache_image *out);
attache_status attache_heif_decode(const uint8_t *data, size_t length, attache_decode_options *options, attache_image *out);

/// libheif, libavif and libjxl are loaded on first use (modern_loader.h); this loads them now (a
/// sandboxed helper, which can open no file later). 1 when all three were, else 0 with a message.
int attache_codecs_preload(char *message, size_t size);
attache_status attache_avif_decode(const uint8_t *data, size_t length, attache_decode_options *options, attache_image *out);
attache_status attache_jxl_decode(const uint8_t *data, size_t length, attache_decode_options *options, attache_image *out);

/// The frames of an animation, one at a time, each the whole canvas composited (premultiplied
/// RGBA, box-shrunk by `options->shrink`), with how long it shows.
typedef struct attache_frames attache_frames;
attache_status attache_webp_frames_open(const uint8_t *data, size_t length, attache_decode_options *options, attache_frames **out);
attache_status attache_avif_frames_open(const uint8_t *data, size_t length, attache_decode_options *options, attache_frames **out);
attache_status attache_gif_frames_open(const uint8_t *data, size_t length, attache_decode_options *options, attache_frames **out);
/// ATTACHE_OK with a frame; ATTACHE_ERR_INVALID with an empty message after the last one.
attache_status attache_frames_next(attache_frames *frames, attache_decode_options *options, attache_image *out, int *duration_ms);
void attache_frames_close(attache_frames *frames);

/// An animated GIF built frame by frame in memory: each frame gets its own palette (giflib's
/// median-cut quantiser), a pixel under half opacity becomes the transparent index.
typedef struct attache_gif_writer attache_gif_writer;
attache_gif_writer *attache_gif_writer_new(int width, int height);
attache_status attache_gif_writer_add(attache_gif_writer *writer, const attache_image *frame, int delay_cs, char message[160]);
/// Bytes written so far (a caller over its budget can stop early).
size_t attache_gif_writer_size(const attache_gif_writer *writer);
attache_status attache_gif_writer_finish(attache_gif_writer *writer, uint8_t **out, size_t *out_length, char message[160]);
void attache_gif_writer_free(attache_gif_writer *writer);

/// `icc` (may be NULL): a colour profile to embed, so that a device shows the colours the source had.
attache_status attache_jpeg_encode(const attache_image *image, int quality, const uint8_t *icc, size_t icc_length,
                                   uint8_t **out, size_t *out_length, char message[160]);
attache_status attache_png_encode(const attache_image *image, const uint8_t *icc, size_t icc_length,
                                  uint8_t **out, size_t *out_length, char message[160]);

/// Separable high-quality resample (Catmull-Rom, widened by the shrink factor) to an exact size.
attache_status attache_resize(const attache_image *in, int width, int height, attache_image *out);
/// The size of a `width` x `height` image fitted within `edge` pixels, never enlarged: scale
/// min(1, edge / longest side), each side rounded half away from zero, at least 1. What every
/// display copy and thumbnail is resampled to, here and on the resampler's thread.
void attache_fit_size(int width, int height, int edge, int *fit_width, int *fit_height);
typedef attache_status (*attache_decode_fn)(const uint8_t *data, size_t length, attache_decode_options *options, attache_image *out);
/// What attache_decode_resized can also make of the resampled copy while it is being made. Each
/// output is bit for bit what the same operation would make of the finished copy (attache_resize,
/// attache_jpeg_encode), or left empty — the copy already fit, it is not RGB, a step failed —
/// for the caller to make it the usual way.
typedef struct {
    int thumbnail_edge;       // > 0: the copy resampled to fit this edge too
    int jpeg_quality;         // > 0: the copy encoded as JPEG at this quality, with the decoder's RGB profile
    // > 0: the caller needs only what is made from the copy, not the decoded image: a decoder
    // that hands its rows over as it goes (JPEG, PNG) keeps a ring of this many instead of the
    // whole image, when the image does not fit `edge` already, and `out` comes back empty.
    int ring_rows;
    attache_image thumbnail;  // out
    uint8_t *jpeg;            // out (attache_buffer_free)
    size_t jpeg_length;
} attache_display_extras;
/// `decode`, and on a second thread the resample of what it decodes to fit `edge` pixels
/// (attache_fit_size), reading
/// each row as soon as the decoder has finished it: bit for bit what attache_resize would make
/// after the decode, in the time of the decode plus the last rows. `resized` is left empty
/// when the decoded image already fits (and `out` when a ring was kept, see `ring_rows`). The
/// decoder's status wins; on failure both are empty.
/// `extras` (may be NULL) asks the same thread for more from the resampled rows as they are
/// final, so that little is left to do after the decode's last row.
attache_status attache_decode_resized(attache_decode_fn decode, const uint8_t *data, size_t length,
                                      attache_decode_options *options, int edge, attache_image *out, attache_image *resized,
                                      attache_display_extras *extras);
/// Whether an ICC profile describes RGB (its data colour space), so it fits the RGB pixels made
/// from an image: a grey or CMYK one does not.
int attache_icc_is_rgb(const uint8_t *icc, size_t length);
attache_status attache_crop(const attache_image *in, int x, int y, int width, int height, attache_image *out);
/// Applies an EXIF orientation (1-8), so the result is upright.
attache_status attache_orient(const attache_image *in, int orientation, attache_image *out);
void attache_unpremultiply(attache_image *image);
/// True when a 4-channel image has no pixel below full opacity.
int attache_is_opaque(const attache_image *image);
/// Drops the alpha channel of an opaque RGBA image in place.
void attache_drop_alpha(attache_image *image);
/// A premultiplied RGBA image over white, as RGB, in place (a JPEG for a device that wants one).
void attache_flatten_on_white(attache_image *image);

void attache_image_free(attache_image *image);
void attache_buffer_free(uint8_t *buffer);
#endif
