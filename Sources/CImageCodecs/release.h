// Pages of a read-only file mapping that a decoder has read, given back as it goes.
#ifndef ATTACHE_RELEASE_H
#define ATTACHE_RELEASE_H
#include <stddef.h>
#include <stdint.h>

/// How far apart the releases are: a madvise per megabyte read.
#define ATTACHE_RELEASE_STEP ((size_t)1 << 20)

/// A reader's progress through `data`. `enabled` only for a MAP_PRIVATE file mapping that was
/// never written (a later read faults a page back in from the file): on memory of any other kind
/// giving pages back would lose the bytes.
typedef struct {
    const uint8_t *data;
    int enabled;
    size_t released;  // bytes before this are given back
} attache_release;

/// The reader will not look at the bytes before `consumed` again: their whole pages are given
/// back once they add up to ATTACHE_RELEASE_STEP (nothing happens unless `enabled`).
void attache_release_behind(attache_release *release, size_t consumed);
#endif
