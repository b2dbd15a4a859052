// A PNG's image data inflated on a thread of its own, handed to libpng as stored (uncompressed)
// deflate blocks, so that libpng's row loop on the caller's thread only copies and unfilters.
//
// Why: libpng inflates and unfilters each row on one thread, one after the other; that pair is
// the floor of a PNG decode on one core (a 9 MP RGBA photo: 73 ms of inflate, 23 of unfilter).
// Split across two threads, the decode takes about as long as the inflate alone. libpng still
// parses everything, unfilters, and checks the stream's framing; this file checks what libpng
// no longer sees: each real IDAT chunk's CRC-32, the real deflate stream, that it holds enough
// data for every row, and the chunks after it up to IEND (CRC-32 of each critical one).
#ifndef ATTACHE_PNG_INFLATE_H
#define ATTACHE_PNG_INFLATE_H
#include <stddef.h>
#include <stdint.h>
#include "release.h"

typedef struct attache_idat_feed attache_idat_feed;

/// Starts the inflate of the IDAT chunks that begin at `data + offset` (the first one's data;
/// its length and type are the 8 bytes before), for `raw_length` bytes of filtered rows. NULL
/// when this is not worth it or not possible (then libpng reads the real chunks itself):
/// a stream too small to gain from a thread, or no thread. `release` is used by the feed's
/// thread alone from here on.
attache_idat_feed *attache_idat_feed_start(const uint8_t *data, size_t length, size_t offset, size_t raw_length,
                                           attache_release *release);
/// Copies the next `count` bytes of the PNG libpng is to read from here on (the first IDAT
/// chunk's data onwards) into `out`; 0 when they are there, else -1 with the reason in `message`
/// (160 bytes).
int attache_idat_feed_read(attache_idat_feed *feed, uint8_t *out, size_t count, char *message);
/// Stops the thread (at once, if it is still inflating) and frees the feed.
void attache_idat_feed_stop(attache_idat_feed *feed);
#endif
