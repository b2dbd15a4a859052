// FFmpeg's libraries, for the C code in CVideoCodecs (which holds the macros Swift cannot use).
#include <libavformat/avformat.h>
#include <libavcodec/avcodec.h>
#include <libswscale/swscale.h>
#include <libavutil/avutil.h>
