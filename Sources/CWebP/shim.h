#include <webp/demux.h>
#include <webp/decode.h>
