// SHA-256 by libcrypto (OpenSSL 3's SHA256_* functions, the copy libcurl links as well), loaded with
// dlopen on first use: a command that hashes nothing (a thumbnail, a probe) does not pay for
// loading and relocating libcrypto at start, 0.6 ms of every process.
#ifndef ATTACHE_DIGEST_H
#define ATTACHE_DIGEST_H
#include <stddef.h>

/// A hasher's whole state, a plain value (libcrypto's SHA256_CTX inside): copied, it goes on
/// from where it was.
typedef struct { unsigned long long words[16]; } attache_sha256;

/// Starts a hash in `state`: 1, or 0 with the reason in `message` (libcrypto missing).
int attache_sha256_init(attache_sha256 *state, char *message, size_t size);
/// 1 when the bytes were taken in.
int attache_sha256_update(attache_sha256 *state, const void *bytes, size_t count);
/// 1 with the 32-byte digest in `out`; `state` is spent.
int attache_sha256_final(attache_sha256 *state, unsigned char out[32]);

#endif
