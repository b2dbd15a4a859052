// The animation interface the format decoders share, and their common error handling.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "frames.h"

attache_status attache_frames_next(attache_frames *frames, attache_decode_options *options, attache_image *out, int *duration_ms) {
    options->message[0] = 0;
    memset(out, 0, sizeof *out);
    return frames->next(frames, options, out, duration_ms);
}

void attache_frames_close(attache_frames *frames) {
    if (frames) frames->close(frames);
}

attache_status attache_fail(attache_decode_options *options, attache_status status, const char *message) {
    snprintf(options->message, sizeof options->message, "%s", message);
    return status;
}

int attache_should_abort(const attache_decode_options *options) {
    return options->abort_fn && options->abort_fn(options->abort_context);
}

void attache_keep_icc(attache_decode_options *options, const uint8_t *icc, size_t length) {
    if (options->icc || !icc || length == 0) return;
    options->icc = malloc(length);
    if (!options->icc) return;
    memcpy(options->icc, icc, length);
    options->icc_length = length;
}
