// The float64 yardstick of the data pipelines: libjpeg's own decompression API (not TurboJPEG's
// wrapper, which the pipelines use), then the crop, bilinear resize, flip and normalisation written
// out per output pixel in double, straight from their definitions.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/common/augment_params.h"

namespace dlb {

// RGB, interleaved, decoded at scale s (scale_num / scale_denom) with JDCT_ISLOW and fancy
// upsampling. Throws dlb::Error with libjpeg's message on any error or warning.
std::vector<uint8_t> ReferenceDecode(const std::vector<uint8_t>& jpeg, data::Scale s, int* w,
                                     int* h);

// One training sample, CHW, normalised: crop a.crop of the full_w x full_h image (given decoded
// at sw x sh), bilinear resize to out x out at pixel centres, round to 8 bits, flip, normalise.
std::vector<double> ReferenceSample(const std::vector<uint8_t>& rgb, int sw, int sh, int full_w,
                                    int full_h, const data::Augment& a, int out,
                                    const data::Stats& st);

// One CIFAR-10 training sample, CHW, normalised: the 32x32 window at (dx - 4, dy - 4) of the
// record's planes, zero outside, flipped, normalised.
std::vector<double> ReferenceCifarSample(const uint8_t* planes, const data::CifarAugment& a,
                                         const data::Stats& st);

}  // namespace dlb
