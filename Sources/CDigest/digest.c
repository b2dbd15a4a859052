#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <openssl/evp.h>
#include "attache_digest.h"

#define ATTACHE_DIGEST_FUNCTIONS(X) \
    X(EVP_MD_CTX_new) X(EVP_MD_CTX_free) X(EVP_sha256) X(EVP_DigestInit_ex) X(EVP_DigestUpdate) X(EVP_DigestFinal_ex)

static struct {
#define FIELD(name) __typeof__(name) *name;
    ATTACHE_DIGEST_FUNCTIONS(FIELD)
#undef FIELD
} lib;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int loaded = 0;
static char failure[160];

static void load(void) {
    // RTLD_LOCAL: nothing else in the process binds to its symbols by accident. When libcurl is
    // loaded already, this is the same copy.
    void *handle = dlopen("libcrypto.so.3", RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        snprintf(failure, sizeof failure, "libcrypto not found: %s", dlerror());
        return;
    }
#define LOAD(name) \
    lib.name = (__typeof__(name) *)dlsym(handle, #name); \
    if (!lib.name) { snprintf(failure, sizeof failure, "libcrypto has no %s", #name); return; }
    ATTACHE_DIGEST_FUNCTIONS(LOAD)
#undef LOAD
    loaded = 1;
}

attache_sha256 *attache_sha256_new(char *message, size_t size) {
    pthread_once(&once, load);
    if (!loaded) {
        if (message && size) snprintf(message, size, "%s", failure);
        return NULL;
    }
    EVP_MD_CTX *context = lib.EVP_MD_CTX_new();
    if (!context || lib.EVP_DigestInit_ex(context, lib.EVP_sha256(), NULL) != 1) {
        lib.EVP_MD_CTX_free(context);
        if (message && size) snprintf(message, size, "libcrypto could not start a SHA-256");
        return NULL;
    }
    return (attache_sha256 *)context;
}

int attache_sha256_update(attache_sha256 *hasher, const void *bytes, size_t count) {
    return lib.EVP_DigestUpdate((EVP_MD_CTX *)hasher, bytes, count);
}

int attache_sha256_final(attache_sha256 *hasher, unsigned char out[32]) {
    unsigned int length = 0;
    return lib.EVP_DigestFinal_ex((EVP_MD_CTX *)hasher, out, &length) == 1 && length == 32;
}

void attache_sha256_free(attache_sha256 *hasher) {
    if (hasher) lib.EVP_MD_CTX_free((EVP_MD_CTX *)hasher);
}
