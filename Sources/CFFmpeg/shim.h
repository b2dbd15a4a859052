// FFmpeg's headers, for the C code in CVideoCodecs (which loads the libraries with dlopen).
#include <libavformat/avformat.h>
#include <libavcodec/avcodec.h>
#include <libswscale/swscale.h>
#include <libavutil/avutil.h>
#include <libswresample/swresample.h>
