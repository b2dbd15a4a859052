// Pages of a read-only file mapping that a decoder has read, given back as it goes.
#ifndef ATTACHE_RELEASE_H
#define ATTACHE_RELEASE_H
#include <stddef.h>
#include <stdint.h>

/// How far apart the releases are: a madvise per megabyte read.
#define ATTACHE_RELEASE_STEP ((size_t)1 << 20)

/// Gives back the whole pages of `data` between `*released` and `consumed` (bytes the reader will
/// not look at again), once they are at least ATTACHE_RELEASE_STEP; moves `*released` on. Only for
/// a MAP_PRIVATE file mapping that was never written (a later read faults the page back in from
/// the file): on memory of any other kind it would lose the bytes.
void attache_release_behind(const uint8_t *data, size_t *released, size_t consumed);
#endif
