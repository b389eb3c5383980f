#include "kernels/reference/image.h"

// jpeglib.h needs size_t and FILE declared before it.
#include <cstddef>
#include <cstdio>
#include <jpeglib.h>

#include <algorithm>
#include <cmath>
#include <csetjmp>
#include <string>

#include "kernels/common/error.h"
#include "kernels/common/libjpeg_errors.h"

namespace dlb {

std::vector<uint8_t> ReferenceDecode(const std::vector<uint8_t>& jpeg, data::Scale s, int* w,
                                     int* h) {
  jpeg_decompress_struct cinfo{};
  data::JpegErrors err{};
  data::UseJpegErrors(&cinfo, &err);
  std::vector<uint8_t> rgb;
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    throw Error(std::string("libjpeg: ") + err.message);
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, jpeg.data(), static_cast<unsigned long>(jpeg.size()));
  jpeg_read_header(&cinfo, TRUE);
  cinfo.out_color_space = JCS_RGB;
  cinfo.scale_num = static_cast<unsigned>(s.num);
  cinfo.scale_denom = static_cast<unsigned>(s.denom);
  cinfo.dct_method = JDCT_ISLOW;
  cinfo.do_fancy_upsampling = TRUE;
  jpeg_start_decompress(&cinfo);
  *w = int(cinfo.output_width);
  *h = int(cinfo.output_height);
  rgb.resize(size_t(*w) * *h * 3);
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = rgb.data() + size_t(cinfo.output_scanline) * *w * 3;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return rgb;
}

std::vector<double> ReferenceSample(const std::vector<uint8_t>& rgb, int sw, int sh, int full_w,
                                    int full_h, const data::Augment& a, int out,
                                    const data::Stats& st) {
  std::vector<double> r(size_t(3) * out * out);
  // The crop in the decoded image's coordinates.
  const double kx = double(sw) / full_w, ky = double(sh) / full_h;
  const double x0 = a.crop.x * kx, y0 = a.crop.y * ky;
  const double cw = a.crop.w * kx, ch = a.crop.h * ky;
  auto px = [&](int x, int y, int c) { return double(rgb[(size_t(y) * sw + x) * 3 + c]); };
  for (int oy = 0; oy < out; ++oy) {
    for (int ox = 0; ox < out; ++ox) {
      // Output pixel ox shows the source column of pixel (out - 1 - ox) when flipped.
      const int sx_out = a.flip ? out - 1 - ox : ox;
      const double sx = std::clamp(x0 + (sx_out + 0.5) * cw / out - 0.5, 0.0, double(sw - 1));
      const double sy = std::clamp(y0 + (oy + 0.5) * ch / out - 0.5, 0.0, double(sh - 1));
      const int xl = int(std::floor(sx)), yl = int(std::floor(sy));
      const int xh = std::min(xl + 1, sw - 1), yh = std::min(yl + 1, sh - 1);
      const double fx = sx - xl, fy = sy - yl;
      for (int c = 0; c < 3; ++c) {
        const double v = (1 - fy) * ((1 - fx) * px(xl, yl, c) + fx * px(xh, yl, c)) +
                         fy * ((1 - fx) * px(xl, yh, c) + fx * px(xh, yh, c));
        const double q = std::clamp(std::floor(v + 0.5), 0.0, 255.0);
        r[(size_t(c) * out + oy) * out + ox] = (q / 255.0 - st.mean[c]) / st.std[c];
      }
    }
  }
  return r;
}

std::vector<double> ReferenceCifarSample(const uint8_t* planes, const data::CifarAugment& a,
                                         const data::Stats& st) {
  constexpr int kSide = 32;
  std::vector<double> r(size_t(3) * kSide * kSide);
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < kSide; ++y)
      for (int x = 0; x < kSide; ++x) {
        const int src_x = (a.flip ? kSide - 1 - x : x) + a.dx - 4;
        const int src_y = y + a.dy - 4;
        const bool in = src_x >= 0 && src_x < kSide && src_y >= 0 && src_y < kSide;
        const double v = in ? planes[(c * kSide + src_y) * kSide + src_x] : 0.0;
        r[(size_t(c) * kSide + y) * kSide + x] = (v / 255.0 - st.mean[c]) / st.std[c];
      }
  return r;
}

}  // namespace dlb
