// Why: a progressive 9 MP JPEG's coefficients (55 MB) are all resident by the end of its first
// scan, and the 8.9 MB file it is read from stayed resident beside them until the process ended
// (a mapped file's pages count in RSS as they are read). Read once, front to back, they are given
// back behind the reader instead.
#include "release.h"
#include <sys/mman.h>
#include <unistd.h>

void attache_release_behind(attache_release *release, size_t consumed) {
    if (!release->enabled || consumed < release->released + ATTACHE_RELEASE_STEP) return;
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t start = ((uintptr_t)release->data + release->released + page - 1) & ~(page - 1);
    uintptr_t end = ((uintptr_t)release->data + consumed) & ~(page - 1);
    if (end > start) madvise((void *)start, end - start, MADV_DONTNEED);
    release->released = consumed;
}
