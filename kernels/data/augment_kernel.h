// The GPU pipeline's augmentation, one launch per batch: crop, bilinear resize, flip and
// normalisation of decoded RGB images into the batch tensor, computed as kernels/data/augment.cpp
// computes them on the host (the verification compares the two). Used by nvjpeg_loader.cu.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/common/augment_params.h"

namespace dlb::data {

// One decoded image of the batch and its draws. The image is RGB interleaved, w x h, at `src`
// bytes into the decode arena; the crop box is in its pixels (decoded at full size).
struct SampleDesc {
  unsigned long long src;
  int w, h;
  int cx, cy, cw, ch;
  int flip;
};

// out = x * scale + bias per channel, as Normalize computes them on the host.
struct Affine {
  float scale[3], bias[3];
};

// Normalize's scale and bias (kernels/data/augment.cpp), computed the same way.
Affine AffineOf(const Stats& st);

// Launches the kernel over n samples into dst (n x 3 x out x out, or NHWC), in bf16 or f32.
void LaunchCropResizeNormalize(const uint8_t* arena, const SampleDesc* descs, int n, int out,
                               const Affine& aff, bool bf16, bool nhwc, void* dst,
                               cudaStream_t stream);

}  // namespace dlb::data
