// The parameters of the data pipelines' training augmentation (crop box, flip, DCT scale,
// normalisation statistics): plain types that the pipelines (kernels/data/augment.h) and their
// float64 reference (kernels/reference/image.h) both take. They live here because a reference
// must not include the code it checks; the namespace stays the pipelines' own.
#pragma once

namespace dlb::data {

// Channel statistics of Normalize: ImageNet's (torchvision's reference scripts) and CIFAR-10's.
struct Stats {
  float mean[3], std[3];
};
inline constexpr Stats kImageNetStats = {{0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}};
inline constexpr Stats kCifarStats = {{0.4914f, 0.4822f, 0.4465f}, {0.2470f, 0.2435f, 0.2616f}};

struct Box {
  int x = 0, y = 0, w = 0, h = 0;
};

struct Augment {
  Box crop;  // in the full-size image's pixels
  bool flip = false;
};

// A DCT-domain scaling factor num/denom (TurboJPEG's or nvJPEG's).
struct Scale {
  int num = 1, denom = 1;
};
// ceil(dim * num / denom), as TJSCALED: the size of a dimension decoded at that scale.
inline int Scaled(int dim, Scale s) { return (dim * s.num + s.denom - 1) / s.denom; }

// CIFAR-10's training augmentation (torchvision's reference recipe): RandomCrop(32, padding=4)
// and a horizontal flip; dx, dy in [0, 8] are the crop's offsets into the zero-padded 40x40.
struct CifarAugment {
  int dx = 4, dy = 4;
  bool flip = false;
};

}  // namespace dlb::data
