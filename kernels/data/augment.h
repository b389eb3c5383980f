// The training augmentation of torchvision's ImageNet reference scripts, as the pipelines apply
// it: RandomResizedCrop (scale 0.08..1, ratio 3/4..4/3) to out x out with bilinear resampling,
// a horizontal flip with p = 0.5, ToTensor (/255) and Normalize with ImageNet's statistics.
// Every draw comes from the sample's own seeded stream (position in the loader's stream), so the
// result does not depend on which worker, thread or GPU processed it.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/common/augment_params.h"
#include "kernels/common/dtype.h"
#include "kernels/common/op.h"

namespace dlb::data {

// torchvision.transforms.RandomResizedCrop.get_params: up to 10 tries of an area share uniform
// in [0.08, 1) and an aspect ratio log-uniform in [3/4, 4/3) whose box fits; else the central crop
// with the ratio clamped into the range. Then the flip (uniform < 0.5).
Augment SampleAugment(int width, int height, uint64_t seed);

// The smallest of `available` under which the crop, decoded at that scale, still has at least
// `out` pixels in both directions (so the resize that follows only shrinks or keeps), and 1/1
// when none does. Decoding fewer DCT coefficients is where a CPU pipeline saves most.
Scale ChooseScale(const Box& crop, int out, const std::vector<Scale>& available);

// A rectangle of pixels of a decoded image: columns x .. x + w - 1, rows y .. y + h - 1.
struct Window {
  int x = 0, y = 0, w = 0, h = 0;
};

// The pixels of the image decoded at sw x sh that CropResize reads for a.crop (both bilinear taps
// of every output pixel): a decoder need produce no more than these.
Window TapWindow(const Box& crop, int full_w, int full_h, int sw, int sh, int out);

// Crops a.crop (in the pixels of the full_w x full_h image, which was decoded, possibly scaled, to
// sw x sh RGB interleaved) and resizes it to out x out with bilinear interpolation at pixel
// centres (align_corners=False, no antialias, as torchvision's tensor path), flipping horizontally
// when asked; rounds to uint8. dst: out x out x 3. rgb holds the window `held` of the decoded
// image (rows held.w x 3 bytes apart), which must contain TapWindow; by default all of it.
void CropResize(const uint8_t* rgb, int sw, int sh, int full_w, int full_h, const Augment& a,
                int out, uint8_t* dst, Window held = {});

// (x / 255 - mean) / std for each channel of an out x out RGB image (interleaved) into one sample
// of a batch: f32 or bf16, CHW (NCHW batches) or HWC (NHWC).
void Normalize(const uint8_t* rgb, int out, const Stats& st, DType dt, Layout layout, void* dst);

// CropResize then Normalize, one output row at a time: the same values, without writing the
// out x out x 3 bytes in between and reading them again.
void CropResizeNormalize(const uint8_t* rgb, int sw, int sh, int full_w, int full_h,
                         const Augment& a, int out, const Stats& st, DType dt, Layout layout,
                         void* dst, Window held = {});

// CIFAR-10's training augmentation (CifarAugment): its draws from the sample's stream.
CifarAugment SampleCifarAugment(uint64_t seed);
// planes: 3 x 32 x 32 (CIFAR's record layout) -> dst: 32 x 32 x 3 interleaved.
void CifarCropFlip(const uint8_t* planes, const CifarAugment& a, uint8_t* dst);

// Bytes of one normalised sample.
inline size_t SampleBytes(int out, DType dt) {
  return size_t(3) * out * out * (dt == DType::kBF16 ? 2 : 4);
}

// The largest difference two computations of one normalised sample value may show (an op against
// its float64 reference, the GPU kernel against the host code). Where one resizes in float and the
// other in double or fixed point, a value within rounding of k + 0.5 may round to the other 8-bit
// neighbour: one step, 1/255/std (the smallest std of kImageNetStats and kCifarStats). In bf16,
// each side whose value is rounded to bf16 (bf16_roundings: 1 or 2) adds up to half a unit in the
// last place, 2^-7 for normalised values (all within |x| < 4).
double PixelTolerance(DType dt, int bf16_roundings);

// The crop box in the coordinates of the image decoded at scale s (sw x sh): the float region
// the resize samples from.
struct Region {
  double x = 0, y = 0, w = 0, h = 0;
};
Region ScaledRegion(const Box& crop, int full_w, int full_h, int sw, int sh);

}  // namespace dlb::data
