// libjpeg's errors and warnings for Attache's decoder and writer alike: both are failures, with
// libjpeg's message, and a longjmp back to the call that entered the library.
#ifndef ATTACHE_JPEG_ERRORS_H
#define ATTACHE_JPEG_ERRORS_H
#include <stdio.h>
#include <setjmp.h>
#include <jpeglib.h>
#include "attache_codecs.h"

typedef struct {
    struct jpeg_error_mgr base;
    jmp_buf jump;
    char *message;
    attache_status status;
} attache_jpeg_errors;

/// Installs the handlers on `err` (writing messages to `message`, 160 bytes, when not NULL) and
/// returns the manager to set as `cinfo.err`.
struct jpeg_error_mgr *attache_jpeg_errors_init(attache_jpeg_errors *err, char *message);
#endif
