#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include "ffmpeg_loader.h"

attache_ffmpeg attache_ff;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int loaded = 0;
static char failure[160];

#define SONAME(lib, major) "lib" #lib ".so." AV_STRINGIFY(major)

static void load(void) {
    // RTLD_LAZY: FFmpeg's own libraries are linked to bind at once anyway, but many of the codec
    // libraries they pull in are not, and binding all their calls up front costs ~2 ms of the
    // ~25 ms load. The functions Attache calls are looked up below, so a missing one still shows
    // here rather than at its first call.
    void *avutil = dlopen(SONAME(avutil, LIBAVUTIL_VERSION_MAJOR), RTLD_LAZY | RTLD_LOCAL);
    void *avcodec = dlopen(SONAME(avcodec, LIBAVCODEC_VERSION_MAJOR), RTLD_LAZY | RTLD_LOCAL);
    void *avformat = dlopen(SONAME(avformat, LIBAVFORMAT_VERSION_MAJOR), RTLD_LAZY | RTLD_LOCAL);
    void *swscale = dlopen(SONAME(swscale, LIBSWSCALE_VERSION_MAJOR), RTLD_LAZY | RTLD_LOCAL);
    void *swresample = dlopen(SONAME(swresample, LIBSWRESAMPLE_VERSION_MAJOR), RTLD_LAZY | RTLD_LOCAL);
    if (!avutil || !avcodec || !avformat || !swscale || !swresample) {
        snprintf(failure, sizeof failure, "FFmpeg libraries not found: %s", dlerror());
        return;
    }
#define ATTACHE_FF_LOAD(lib, name) \
    attache_ff.name = (__typeof__(name) *)dlsym(lib, #name); \
    if (!attache_ff.name) { snprintf(failure, sizeof failure, "FFmpeg has no %s", #name); return; }
    ATTACHE_FFMPEG_FUNCTIONS(ATTACHE_FF_LOAD)
#undef ATTACHE_FF_LOAD
    loaded = 1;
}

int attache_ffmpeg_load(char *message, size_t size) {
    pthread_once(&once, load);
    if (!loaded) snprintf(message, size, "%s", failure);
    return loaded;
}
