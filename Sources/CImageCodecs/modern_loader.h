// libheif, libavif and libjxl are loaded with dlopen on first use rather than linked: they pull in
// the HEVC, AV1 and JPEG XL codecs (libde265, x265, aom, dav1d, rav1e, SVT-AV1, highway, brotli…),
// whose static initialisers ran at every start of every attache process — most of its start-up
// time, in processes that mostly never see one of these formats.
#ifndef ATTACHE_MODERN_LOADER_H
#define ATTACHE_MODERN_LOADER_H
#include <stddef.h>
#include <libheif/heif.h>
#include <avif/avif.h>
#include <jxl/decode.h>

#define ATTACHE_HEIF_FUNCTIONS(X) \
    X(heif_context_alloc) X(heif_context_free) X(heif_context_get_primary_image_handle) \
    X(heif_context_read_from_memory_without_copy) X(heif_context_set_maximum_image_size_limit) X(heif_decode_image) \
    X(heif_decoding_options_alloc) X(heif_decoding_options_free) X(heif_image_get_height) X(heif_image_get_plane_readonly) \
    X(heif_image_get_width) X(heif_image_handle_get_color_profile_type) X(heif_image_handle_get_height) \
    X(heif_image_handle_get_ispe_height) X(heif_image_handle_get_ispe_width) X(heif_image_handle_get_raw_color_profile) \
    X(heif_image_handle_get_raw_color_profile_size) X(heif_image_handle_get_width) X(heif_image_handle_has_alpha_channel) \
    X(heif_image_handle_release) X(heif_image_release)

#define ATTACHE_AVIF_FUNCTIONS(X) \
    X(avifDecoderCreate) X(avifDecoderDestroy) X(avifDecoderNextImage) X(avifDecoderParse) X(avifDecoderSetIOMemory) \
    X(avifImageYUVToRGB) X(avifRGBImageAllocatePixels) X(avifRGBImageFreePixels) X(avifRGBImageSetDefaults) X(avifResultToString)

#define ATTACHE_JXL_FUNCTIONS(X) \
    X(JxlDecoderCloseInput) X(JxlDecoderCreate) X(JxlDecoderDestroy) X(JxlDecoderGetBasicInfo) \
    X(JxlDecoderGetColorAsEncodedProfile) X(JxlDecoderGetColorAsICCProfile) X(JxlDecoderGetICCProfileSize) \
    X(JxlDecoderImageOutBufferSize) X(JxlDecoderProcessInput) X(JxlDecoderSetImageOutBuffer) X(JxlDecoderSetInput) \
    X(JxlDecoderSubscribeEvents)

typedef struct {
#define ATTACHE_MODERN_FIELD(name) __typeof__(name) *name;
    ATTACHE_HEIF_FUNCTIONS(ATTACHE_MODERN_FIELD)
    ATTACHE_AVIF_FUNCTIONS(ATTACHE_MODERN_FIELD)
    ATTACHE_JXL_FUNCTIONS(ATTACHE_MODERN_FIELD)
#undef ATTACHE_MODERN_FIELD
} attache_modern;

extern attache_modern attache_modern_functions;

typedef enum { ATTACHE_LIB_HEIF = 0, ATTACHE_LIB_AVIF = 1, ATTACHE_LIB_JXL = 2 } attache_modern_library;

/// Loads one library once (thread-safe); 1 when every function was found, else 0 with a message.
int attache_modern_load(attache_modern_library library, char *message, size_t size);

#define M(name) (attache_modern_functions.name)
#endif
