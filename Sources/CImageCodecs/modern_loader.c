#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include "modern_loader.h"
#include "attache_codecs.h"

attache_modern attache_modern_functions;

// Debian 12's sonames (the runtime packages libheif1, libavif15, libjxl0.7).
static const char *const sonames[] = { "libheif.so.1", "libavif.so.15", "libjxl.so.0.7" };
static pthread_once_t once[3] = { PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT };
static int loaded[3];
static char failure[3][160];

#define ATTACHE_MODERN_LOAD(name) \
    attache_modern_functions.name = (__typeof__(name) *)dlsym(lib, #name); \
    if (!attache_modern_functions.name) { snprintf(failure[which], sizeof failure[which], "%s has no %s", sonames[which], #name); return; }

static void *open_library(int which) {
    // RTLD_LAZY: the codecs these libraries pull in bind their own calls when first made.
    void *lib = dlopen(sonames[which], RTLD_LAZY | RTLD_LOCAL);
    if (!lib) snprintf(failure[which], sizeof failure[which], "%s not found: %s", sonames[which], dlerror());
    return lib;
}

static void load_heif(void) {
    const int which = ATTACHE_LIB_HEIF;
    void *lib = open_library(which);
    if (!lib) return;
    ATTACHE_HEIF_FUNCTIONS(ATTACHE_MODERN_LOAD)
    loaded[which] = 1;
}

static void load_avif(void) {
    const int which = ATTACHE_LIB_AVIF;
    void *lib = open_library(which);
    if (!lib) return;
    ATTACHE_AVIF_FUNCTIONS(ATTACHE_MODERN_LOAD)
    loaded[which] = 1;
}

static void load_jxl(void) {
    const int which = ATTACHE_LIB_JXL;
    void *lib = open_library(which);
    if (!lib) return;
    ATTACHE_JXL_FUNCTIONS(ATTACHE_MODERN_LOAD)
    loaded[which] = 1;
}

int attache_modern_load(attache_modern_library library, char *message, size_t size) {
    static void (*const loaders[3])(void) = { load_heif, load_avif, load_jxl };
    pthread_once(&once[library], loaders[library]);
    if (!loaded[library] && message) snprintf(message, size, "%s", failure[library]);
    return loaded[library];
}

int attache_codecs_preload(char *message, size_t size) {
    for (int library = 0; library < 3; library++) {
        if (!attache_modern_load((attache_modern_library)library, message, size)) return 0;
    }
    return 1;
}
