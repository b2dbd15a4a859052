// FFmpeg is loaded with dlopen on first use rather than linked: its libraries pull in over a
// hundred shared objects (every codec Debian builds in), which would add ~25 ms to the start of
// every attache process, including the many that never see a movie.
#ifndef ATTACHE_FFMPEG_LOADER_H
#define ATTACHE_FFMPEG_LOADER_H
#include <stddef.h>
#include <libavformat/avformat.h>
#include <libavcodec/avcodec.h>
#include <libswscale/swscale.h>
#include <libavutil/display.h>
#include <libavutil/pixdesc.h>
#include <libavutil/opt.h>
#include <libavutil/audio_fifo.h>
#include <libswresample/swresample.h>

#define ATTACHE_FFMPEG_FUNCTIONS(X) \
    X(avutil, av_dict_free) X(avutil, av_dict_set) X(avutil, av_dict_set_int) X(avutil, av_display_rotation_get) \
    X(avutil, av_frame_alloc) X(avutil, av_frame_free) X(avutil, av_frame_ref) X(avutil, av_frame_unref) \
    X(avutil, av_free) X(avutil, av_freep) X(avutil, av_get_pix_fmt_name) X(avutil, av_log_set_level) \
    X(avutil, av_malloc) X(avutil, av_rescale_q) X(avutil, av_strerror) \
    X(avutil, av_frame_get_buffer) X(avutil, av_frame_make_writable) X(avutil, av_opt_set) X(avutil, av_opt_set_int) \
    X(avutil, av_channel_layout_default) X(avutil, av_channel_layout_copy) X(avutil, av_channel_layout_uninit) \
    X(avutil, av_audio_fifo_alloc) X(avutil, av_audio_fifo_free) X(avutil, av_audio_fifo_write) X(avutil, av_audio_fifo_read) \
    X(avutil, av_audio_fifo_size) X(avutil, av_rescale_rnd) \
    X(avcodec, avcodec_find_encoder_by_name) X(avcodec, avcodec_find_encoder) X(avcodec, avcodec_send_frame) X(avcodec, avcodec_receive_packet) \
    X(avcodec, avcodec_parameters_from_context) X(avcodec, avcodec_parameters_copy) X(avcodec, av_packet_rescale_ts) \
    X(avformat, avformat_alloc_output_context2) X(avformat, avformat_new_stream) X(avformat, avformat_write_header) \
    X(avformat, av_interleaved_write_frame) X(avformat, av_write_trailer) X(avformat, avformat_free_context) \
    X(avformat, av_stream_new_side_data) \
    X(swresample, swr_alloc_set_opts2) X(swresample, swr_init) X(swresample, swr_convert) X(swresample, swr_free) \
    X(swresample, swr_get_out_samples) \
    X(avcodec, av_packet_alloc) X(avcodec, av_packet_clone) X(avcodec, av_packet_free) X(avcodec, av_packet_unref) \
    X(avcodec, avcodec_alloc_context3) X(avcodec, avcodec_find_decoder) X(avcodec, avcodec_free_context) \
    X(avcodec, avcodec_get_name) X(avcodec, avcodec_open2) X(avcodec, avcodec_parameters_to_context) \
    X(avcodec, avcodec_receive_frame) X(avcodec, avcodec_send_packet) \
    X(avformat, av_find_input_format) X(avformat, av_read_frame) X(avformat, av_stream_get_side_data) \
    X(avformat, avformat_alloc_context) X(avformat, avformat_close_input) X(avformat, avformat_find_stream_info) \
    X(avformat, avformat_index_get_entries_count) X(avformat, avformat_index_get_entry) X(avformat, avformat_open_input) \
    X(avformat, avformat_seek_file) X(avformat, avio_alloc_context) X(avformat, avio_context_free) \
    X(swscale, sws_freeContext) X(swscale, sws_getCachedContext) X(swscale, sws_getCoefficients) X(swscale, sws_getContext) X(swscale, sws_scale) \
    X(swscale, sws_setColorspaceDetails)

typedef struct {
#define ATTACHE_FF_FIELD(lib, name) __typeof__(name) *name;
    ATTACHE_FFMPEG_FUNCTIONS(ATTACHE_FF_FIELD)
#undef ATTACHE_FF_FIELD
} attache_ffmpeg;

extern attache_ffmpeg attache_ff;

/// Loads the libraries once (thread-safe); returns 1 when every function was found, else 0 with
/// a message.
int attache_ffmpeg_load(char *message, size_t size);

#define FF(name) (attache_ff.name)
#endif
