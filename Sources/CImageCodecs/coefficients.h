// A compact store for the coefficients libjpeg keeps of a multi-scan (progressive) JPEG.
#ifndef ATTACHE_COEFFICIENTS_H
#define ATTACHE_COEFFICIENTS_H
#include <stdio.h>
#include <jpeglib.h>

/// Puts the store in place of libjpeg's whole-image coefficient buffer for this decode, when
/// the scaled IDCT reads fewer than all 64 coefficients of a block (output scaled below 8/8).
/// Call after jpeg_calc_output_dimensions (which chooses each component's IDCT size) and
/// before jpeg_start_decompress (which asks for the buffer). Uses cinfo->client_data, and
/// turns block smoothing off (it would read coefficients the store does not keep; libjpeg only
/// smooths a file whose scans leave coefficients unfinished).
void attache_coefficients_install(j_decompress_ptr cinfo);
#endif
