// What each animation decoder (webp.c, avif.c) fills in behind the opaque attache_frames.
#ifndef ATTACHE_FRAMES_H
#define ATTACHE_FRAMES_H
#include "attache_codecs.h"

struct attache_frames {
    attache_status (*next)(attache_frames *frames, attache_decode_options *options, attache_image *out, int *duration_ms);
    void (*close)(attache_frames *frames);
};

/// Sets the message and returns the status (every decoder's failures look the same).
attache_status attache_fail(attache_decode_options *options, attache_status status, const char *message);
int attache_should_abort(const attache_decode_options *options);
/// Keeps a copy of an ICC profile in `options` (the first one found wins).
void attache_keep_icc(attache_decode_options *options, const uint8_t *icc, size_t length);
#endif
