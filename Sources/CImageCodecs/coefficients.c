// Why: libjpeg keeps every coefficient of a multi-scan (progressive) JPEG from its first scan to
// its last, 128 bytes a block: 55 MB for a 9 MP 4:4:4 photo, most of a decode's peak memory.
// A decode scaled below 8/8 reads few of them: an IDCT of size n = 1, 3 or 5 (libjpeg-turbo's
// jpeg_idct_1x1, jidctint.c's 3x3 and 5x5) reads the top-left n x n of each block. The scans
// still need to know which of the others are nonzero (a refinement scan sends a correction bit
// for each nonzero coefficient and counts runs of zero ones; it never makes a nonzero one zero),
// but nothing reads their values. So this store keeps, per block, a 64-bit map of the nonzero
// coefficients and the values the IDCT reads: 10 bytes a block at 1/8, 26 at 3/8 (4.2 and 11 MB
// for that photo, instead of 55).
//
// libjpeg still sees whole blocks: its memory manager's virtual-array methods (public, in
// jpeglib.h) are replaced, the way its own backing store swaps strips to a temp file. A strip
// asked for is unpacked into whole blocks (kept values, zeros, and a nonzero stand-in for each
// nonzero coefficient whose value was dropped) and packed again when libjpeg moves on. Tested
// against libjpeg's own buffer, bit for bit, at every scale (ImagePipelineTests).
#include "coefficients.h"
#include <stdint.h>
#include <string.h>
#include <jerror.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#if JPEG_LIB_VERSION >= 70
#define IDCT_SIZE(c) ((c)->DCT_h_scaled_size == (c)->DCT_v_scaled_size ? (c)->DCT_h_scaled_size : DCTSIZE)
#else
#define IDCT_SIZE(c) ((c)->DCT_scaled_size)
#endif

/// Stands for a nonzero coefficient whose value nothing reads. Any nonzero value would do: a
/// refinement only adds a correction of its sign, 1 << Al (Al <= 13), away from zero.
#define STAND_IN 0x4000

typedef struct coefficient_array {
    JDIMENSION blocks_per_row, rows, max_access;  // as libjpeg asked for it
    int kept_width;                               // n: the values of the top-left n x n are kept
    uint64_t kept;                                // the same as a bit per natural position
    size_t record;                                // bytes a block: the nonzero map, then the kept values
    uint8_t *store;                               // rows * blocks_per_row records
    JBLOCKARRAY window;                           // max_access rows of whole blocks
    JDIMENSION window_start, window_rows;         // the rows unpacked in the window
    boolean dirty;                                // the window was handed out writable
    struct coefficient_array *next;
} coefficient_array;

typedef struct {
    int kept_width[MAX_COMPONENTS];  // per component (kept_width_for)
    int requested;                  // arrays asked for so far (jdcoefct.c: one per component, in order)
    coefficient_array *arrays;      // this store's; the others are libjpeg's
    jvirt_barray_ptr (*request_others)(j_common_ptr, int, boolean, JDIMENSION, JDIMENSION, JDIMENSION);
    void (*realize_others)(j_common_ptr cinfo);
    JBLOCKARRAY (*access_others)(j_common_ptr, jvirt_barray_ptr, JDIMENSION, JDIMENSION, boolean);
} coefficient_store;

/// The top-left n x n coefficients an IDCT of size n reads, as n. Only for the sizes where that is at most 25 of the 64 values
/// (a record of at most 58 of libjpeg's 128 bytes): measured on a 9 MP progressive photo, the
/// decode was faster at 1/8 and 3/8 (a strip in the cache instead of 55 MB streamed through it on
/// every scan) and the same within a few per cent at 5/8; the sizes that read more cost more
/// in packing than they saved (40 values for the size 2, whose rows {0,1,3,5,7} are read across:
/// 11-19 % slower). Zero: left to libjpeg.
static int kept_width_for(int idct_size) {
    return idct_size == 1 || idct_size == 3 || idct_size == 5 ? idct_size : 0;
}

size_t attache_jpeg_coefficient_block_bytes(int scale_eighths) {
    // libjpeg-turbo's jpeg62 API scales every component's IDCT alike: a scale of n/8 is an IDCT of size n.
    int kept = kept_width_for(scale_eighths);
    return kept ? sizeof(uint64_t) + sizeof(JCOEF) * (size_t)(kept * kept) : sizeof(JBLOCK);
}

static uint64_t nonzero_map(const JCOEF *block) {
#if defined(__SSE2__)
    const __m128i zero = _mm_setzero_si128();
    uint64_t zeros = 0;
    for (int i = 0; i < 4; i++) {
        __m128i a = _mm_loadu_si128((const __m128i *)(block + 16 * i));
        __m128i b = _mm_loadu_si128((const __m128i *)(block + 16 * i + 8));
        __m128i bytes = _mm_packs_epi16(_mm_cmpeq_epi16(a, zero), _mm_cmpeq_epi16(b, zero));
        zeros |= (uint64_t)(uint16_t)_mm_movemask_epi8(bytes) << (16 * i);
    }
    return ~zeros;
#else
    uint64_t map = 0;
    for (int p = 0; p < DCTSIZE2; p++) map |= (uint64_t)(block[p] != 0) << p;
    return map;
#endif
}

// Packs the window's blocks into their records, or unpacks them from there. Inlined for each
// kept width, so that the copies of a row are of a constant size.
static inline __attribute__((always_inline)) void move_strip_as(coefficient_array *a, const int width, const boolean packing) {
    const size_t row_bytes = (size_t)width * sizeof(JCOEF);
    for (JDIMENSION r = 0; r < a->window_rows; r++) {
        uint8_t *record = a->store + ((size_t)(a->window_start + r) * a->blocks_per_row) * a->record;
        for (JDIMENSION x = 0; x < a->blocks_per_row; x++, record += a->record) {
            JCOEF *block = a->window[r][x];
            uint8_t *values = record + sizeof(uint64_t);
            uint64_t map;
            if (packing) {
                map = nonzero_map(block);
                memcpy(record, &map, sizeof map);
                for (int row = 0; row < width; row++) memcpy(values + row * row_bytes, block + DCTSIZE * row, row_bytes);
            } else {
                memcpy(&map, record, sizeof map);
                memset(block, 0, sizeof(JBLOCK));
                if (map == 0) continue;
                for (int row = 0; row < width; row++) memcpy(block + DCTSIZE * row, values + row * row_bytes, row_bytes);
                for (uint64_t dropped = map & ~a->kept; dropped; dropped &= dropped - 1)
                    block[__builtin_ctzll(dropped)] = STAND_IN;
            }
        }
    }
}

static void move_strip(coefficient_array *a, boolean packing) {
    switch (a->kept_width) {  // 1, 3 or 5 (kept_width_for)
    case 1: move_strip_as(a, 1, packing); break;
    case 3: move_strip_as(a, 3, packing); break;
    default: move_strip_as(a, 5, packing); break;
    }
}

/// This store's array, or NULL for one of libjpeg's.
static coefficient_array *ours(coefficient_store *s, jvirt_barray_ptr ptr) {
    for (coefficient_array *a = s->arrays; a; a = a->next)
        if ((jvirt_barray_ptr)a == ptr) return a;
    return NULL;
}

static jvirt_barray_ptr request_array(j_common_ptr cinfo, int pool_id, boolean pre_zero, JDIMENSION blocks_per_row,
                                      JDIMENSION rows, JDIMENSION max_access) {
    coefficient_store *s = (coefficient_store *)cinfo->client_data;
    j_decompress_ptr d = (j_decompress_ptr)cinfo;
    // The array of component `ci` is as wide and high as its blocks padded to whole MCUs; an
    // array that is not (never so in libjpeg-turbo 2.1), or whose IDCT reads most values, is
    // left to libjpeg.
    int ci = s->requested++;
    int kept_width = 0;
    if (ci < d->num_components) {
        jpeg_component_info *c = &d->comp_info[ci];
        JDIMENSION wide = (c->width_in_blocks + c->h_samp_factor - 1) / c->h_samp_factor * c->h_samp_factor;
        JDIMENSION high = (c->height_in_blocks + c->v_samp_factor - 1) / c->v_samp_factor * c->v_samp_factor;
        if (blocks_per_row == wide && rows == high) kept_width = s->kept_width[ci];
    }
    if (kept_width == 0) return s->request_others(cinfo, pool_id, pre_zero, blocks_per_row, rows, max_access);
    if (pool_id != JPOOL_IMAGE) ERREXIT1(cinfo, JERR_BAD_POOL_ID, pool_id);
    coefficient_array *a = (*cinfo->mem->alloc_small)(cinfo, JPOOL_IMAGE, sizeof *a);  // a new store is all zeros: pre_zero holds
    memset(a, 0, sizeof *a);
    a->blocks_per_row = blocks_per_row;
    a->rows = rows;
    a->max_access = max_access;
    a->kept_width = kept_width;
    for (int r = 0; r < kept_width; r++) a->kept |= (((uint64_t)1 << kept_width) - 1) << (r * DCTSIZE);
    a->record = sizeof(uint64_t) + sizeof(JCOEF) * (size_t)(kept_width * kept_width);
    a->next = s->arrays;
    s->arrays = a;
    return (jvirt_barray_ptr)a;
}

static void realize_arrays(j_common_ptr cinfo) {
    coefficient_store *s = (coefficient_store *)cinfo->client_data;
    s->realize_others(cinfo);
    size_t total = 0;
    for (coefficient_array *a = s->arrays; a; a = a->next) {
        if (a->store) continue;
        if (a->blocks_per_row == 0 || a->max_access == 0 || (size_t)a->rows > SIZE_MAX / a->record / a->blocks_per_row)
            ERREXIT(cinfo, JERR_WIDTH_OVERFLOW);
        size_t bytes = (size_t)a->rows * a->blocks_per_row * a->record;
        total += bytes + (size_t)a->max_access * a->blocks_per_row * sizeof(JBLOCK);
        // The decoder's memory limit, which libjpeg would have applied to its own buffer.
        if (cinfo->mem->max_memory_to_use > 0 && total > (size_t)cinfo->mem->max_memory_to_use)
            ERREXIT(cinfo, JERR_NO_BACKING_STORE);
        a->store = (*cinfo->mem->alloc_large)(cinfo, JPOOL_IMAGE, bytes > 0 ? bytes : 1);
        memset(a->store, 0, bytes);
        a->window = (*cinfo->mem->alloc_barray)(cinfo, JPOOL_IMAGE, a->blocks_per_row, a->max_access);
    }
}

static JBLOCKARRAY access_array(j_common_ptr cinfo, jvirt_barray_ptr ptr, JDIMENSION start_row, JDIMENSION num_rows,
                                boolean writable) {
    coefficient_array *a = ours((coefficient_store *)cinfo->client_data, ptr);
    if (!a) return ((coefficient_store *)cinfo->client_data)->access_others(cinfo, ptr, start_row, num_rows, writable);
    JDIMENSION end_row = start_row + num_rows;
    if (a->store == NULL || num_rows > a->max_access || end_row < start_row || end_row > a->rows)
        ERREXIT(cinfo, JERR_BAD_VIRTUAL_ACCESS);
    if (start_row < a->window_start || end_row > a->window_start + a->window_rows) {
        if (a->dirty) move_strip(a, TRUE);
        a->dirty = FALSE;
        a->window_start = start_row;
        a->window_rows = num_rows;
        move_strip(a, FALSE);
    }
    if (writable) a->dirty = TRUE;
    return a->window + (start_row - a->window_start);
}

void attache_coefficients_install(j_decompress_ptr cinfo) {
    if (cinfo->num_components > MAX_COMPONENTS) return;
    int kept_width[MAX_COMPONENTS], saves = 0;
    for (int ci = 0; ci < cinfo->num_components; ci++) {
        kept_width[ci] = kept_width_for(IDCT_SIZE(&cinfo->comp_info[ci]));
        saves |= kept_width[ci] > 0;
    }
    if (!saves) return;  // e.g. an 8/8 decode, which reads every value
    coefficient_store *s = (*cinfo->mem->alloc_small)((j_common_ptr)cinfo, JPOOL_IMAGE, sizeof *s);
    memset(s, 0, sizeof *s);
    memcpy(s->kept_width, kept_width, sizeof(int) * (size_t)cinfo->num_components);
    s->request_others = cinfo->mem->request_virt_barray;
    s->realize_others = cinfo->mem->realize_virt_arrays;
    s->access_others = cinfo->mem->access_virt_barray;
    cinfo->client_data = s;
    cinfo->do_block_smoothing = FALSE;
    cinfo->mem->request_virt_barray = request_array;
    cinfo->mem->realize_virt_arrays = realize_arrays;
    cinfo->mem->access_virt_barray = access_array;
}
