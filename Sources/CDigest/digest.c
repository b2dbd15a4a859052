// SHA-256 from libcrypto's low-level functions, not EVP: an EVP digest's first use fetches it
// from a provider (0.5 ms in a process that hashes twice and exits); these run the same code
// without the fetch. OpenSSL 3 marks them deprecated, and still ships and supports them.
#define OPENSSL_SUPPRESS_DEPRECATED 1
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <openssl/sha.h>
#include "attache_digest.h"

#define ATTACHE_DIGEST_FUNCTIONS(X) X(SHA256_Init) X(SHA256_Update) X(SHA256_Final)

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

_Static_assert(sizeof(SHA256_CTX) <= sizeof(attache_sha256), "attache_sha256 holds a SHA256_CTX");
_Static_assert(_Alignof(SHA256_CTX) <= _Alignof(attache_sha256), "attache_sha256 is aligned for a SHA256_CTX");

int attache_sha256_init(attache_sha256 *state, char *message, size_t size) {
    pthread_once(&once, load);
    if (!loaded) {
        if (message && size) snprintf(message, size, "%s", failure);
        return 0;
    }
    return lib.SHA256_Init((SHA256_CTX *)state);
}

int attache_sha256_update(attache_sha256 *state, const void *bytes, size_t count) {
    return lib.SHA256_Update((SHA256_CTX *)state, bytes, count);
}

int attache_sha256_final(attache_sha256 *state, unsigned char out[32]) {
    return lib.SHA256_Final(out, (SHA256_CTX *)state);
}
