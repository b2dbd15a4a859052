#include "jpeg_errors.h"
#include <jerror.h>

static void on_error(j_common_ptr cinfo) {
    attache_jpeg_errors *err = (attache_jpeg_errors *)cinfo->err;
    // libjpeg asks for a backing store (a temp file) when max_memory_to_use is not enough: that
    // is the memory limit speaking, not a corrupt file.
    int over_limit = cinfo->err->msg_code == JERR_NO_BACKING_STORE || cinfo->err->msg_code == JERR_OUT_OF_MEMORY;
    if (err->message) {
        // format_message writes up to JMSG_LENGTH_MAX (200) bytes; the caller's buffer is smaller.
        char text[JMSG_LENGTH_MAX];
        if (over_limit) snprintf(text, sizeof text, "needs more memory than the decoder limit");
        else (*cinfo->err->format_message)(cinfo, text);
        snprintf(err->message, sizeof ((attache_decode_options *)0)->message, "%s", text);
    }
    if (err->status == ATTACHE_OK) err->status = over_limit ? ATTACHE_ERR_LIMITS : ATTACHE_ERR_INVALID;
    longjmp(err->jump, 1);
}

// Warnings (corrupt data the library would paper over) are treated as errors.
static void on_message(j_common_ptr cinfo, int level) {
    if (level < 0) on_error(cinfo);
}

struct jpeg_error_mgr *attache_jpeg_errors_init(attache_jpeg_errors *err, char *message) {
    struct jpeg_error_mgr *base = jpeg_std_error(&err->base);
    base->error_exit = on_error;
    base->emit_message = on_message;
    err->message = message;
    err->status = ATTACHE_OK;
    return base;
}
