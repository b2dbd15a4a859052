// SHA-256 by libcrypto (OpenSSL 3's SHA256_* functions, the copy libcurl links as well), loaded with
// dlopen on first use: a command that hashes nothing (a thumbnail, a probe) does not pay for
// loading and relocating libcrypto at start, 0.6 ms of every process.
#ifndef ATTACHE_DIGEST_H
#define ATTACHE_DIGEST_H
#include <stddef.h>

typedef struct attache_sha256 attache_sha256;

/// A hasher, or NULL with the reason in `message` (libcrypto missing, or out of memory).
attache_sha256 *attache_sha256_new(char *message, size_t size);
/// 1 when the bytes were taken in.
int attache_sha256_update(attache_sha256 *hasher, const void *bytes, size_t count);
/// 1 with the 32-byte digest in `out`.
int attache_sha256_final(attache_sha256 *hasher, unsigned char out[32]);
void attache_sha256_free(attache_sha256 *hasher);

#endif
