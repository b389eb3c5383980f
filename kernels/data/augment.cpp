#include "kernels/data/augment.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/common/error.h"
#include "kernels/common/rng.h"

namespace dlb::data {

Augment SampleAugment(int width, int height, uint64_t seed) {
  Rng rng(seed);
  Augment a;
  const double area = double(width) * height;
  const double log_lo = std::log(3.0 / 4.0), log_hi = std::log(4.0 / 3.0);
  bool found = false;
  for (int attempt = 0; attempt < 10 && !found; ++attempt) {
    const double target = area * rng.Uniform(0.08, 1.0);
    const double ratio = std::exp(rng.Uniform(log_lo, log_hi));
    const int w = int(std::lround(std::sqrt(target * ratio)));
    const int h = int(std::lround(std::sqrt(target / ratio)));
    if (w > 0 && h > 0 && w <= width && h <= height) {
      a.crop = {int(rng.UniformInt(0, width - w)), int(rng.UniformInt(0, height - h)), w, h};
      found = true;
    }
  }
  if (!found) {
    const double in_ratio = double(width) / height;
    int w = width, h = height;
    if (in_ratio < 3.0 / 4.0) {
      h = int(std::lround(w / (3.0 / 4.0)));
    } else if (in_ratio > 4.0 / 3.0) {
      w = int(std::lround(h * (4.0 / 3.0)));
    }
    a.crop = {(width - w) / 2, (height - h) / 2, w, h};
  }
  a.flip = rng.Uniform() < 0.5;
  return a;
}

Scale ChooseScale(const Box& crop, int out, const std::vector<Scale>& available) {
  Scale best{1, 1};
  for (const Scale& s : available) {
    if (s.num * best.denom >= best.num * s.denom) continue;  // not smaller than the best so far
    // The crop at this scale: its size in the scaled image, conservatively rounded down.
    const double cw = double(crop.w) * s.num / s.denom, ch = double(crop.h) * s.num / s.denom;
    if (cw >= out && ch >= out) best = s;
  }
  return best;
}

Region ScaledRegion(const Box& crop, int full_w, int full_h, int sw, int sh) {
  const double fx = double(sw) / full_w, fy = double(sh) / full_h;
  return {crop.x * fx, crop.y * fy, crop.w * fx, crop.h * fy};
}

namespace {

// Source index and weight of the second tap for each output coordinate along one axis: the
// centre of output pixel i maps to r0 + (i + 0.5) * len / out - 0.5, clamped into the image.
struct Taps {
  std::vector<int> i0, i1;
  std::vector<float> w1;
};

void AxisTaps(double r0, double len, int out, int size, Taps* t) {
  t->i0.resize(out);
  t->i1.resize(out);
  t->w1.resize(out);
  const double step = len / out;
  for (int i = 0; i < out; ++i) {
    double src = r0 + (i + 0.5) * step - 0.5;
    src = std::clamp(src, 0.0, double(size - 1));
    const int lo = std::min(int(src), size - 1);
    t->i0[i] = lo;
    t->i1[i] = std::min(lo + 1, size - 1);
    t->w1[i] = float(src - lo);
  }
}

// The taps grow with i, so the first and last bound them.
Window Bounds(const Taps& xs, const Taps& ys) {
  return {xs.i0.front(), ys.i0.front(), xs.i1.back() - xs.i0.front() + 1,
          ys.i1.back() - ys.i0.front() + 1};
}

// Normalize as out = x * scale + bias with scale = 1 / (255 std), bias = -mean / std.
struct Affine {
  float scale[3], bias[3];
};

Affine AffineOf(const Stats& st) {
  Affine f;
  for (int c = 0; c < 3; ++c) {
    f.scale[c] = 1.0f / (255.0f * st.std[c]);
    f.bias[c] = -st.mean[c] / st.std[c];
  }
  return f;
}

// Round to nearest even bf16, inline: normalised pixels are finite, so FloatToBf16's NaN
// handling is not needed in the per-pixel loop.
inline uint16_t ToBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return uint16_t((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

inline float ToOut(float v, float*) { return v; }
inline uint16_t ToOut(float v, uint16_t*) { return ToBf16(v); }

// n pixels of one row: planar (three rows `plane` elements apart, CHW) or interleaved (HWC). The
// planar case goes one channel at a time, with no aliasing between input and output, a loop the
// compiler vectorises (it does not vectorise one that writes the three planes at once).
template <class T>
void NormalizeRow(const uint8_t* __restrict__ rgb, int n, const Affine& f, Layout layout,
                  size_t plane, T* __restrict__ d) {
  if (layout == Layout::kNCHW) {
    for (int c = 0; c < 3; ++c) {
      const float s = f.scale[c], b = f.bias[c];
      T* __restrict__ o = d + c * plane;
      for (int i = 0; i < n; ++i) o[i] = ToOut(rgb[i * 3 + c] * s + b, d);
    }
  } else {
    const float s0 = f.scale[0], s1 = f.scale[1], s2 = f.scale[2];
    const float b0 = f.bias[0], b1 = f.bias[1], b2 = f.bias[2];
    for (int i = 0; i < n; ++i) {
      d[i * 3 + 0] = ToOut(rgb[i * 3 + 0] * s0 + b0, d);
      d[i * 3 + 1] = ToOut(rgb[i * 3 + 1] * s1 + b1, d);
      d[i * 3 + 2] = ToOut(rgb[i * 3 + 2] * s2 + b2, d);
    }
  }
}

constexpr int kBits = 11;
constexpr uint32_t kOne = 1u << kBits;

// Separable, in fixed point: each source row the output needs is filtered horizontally once
// (two taps, weights in 1/2048) into a row of out x 3 integers, and each output row blends two of
// those vertically, a loop over contiguous values that the compiler vectorises. The weights'
// rounding moves a value by less than 0.13 of an 8-bit step before the final rounding, so the
// result is the float64 reference's or its 8-bit neighbour (tests/kernels/data/augment_test).
// row(oy) gives where output row oy goes (out x 3 bytes); done(oy, row) follows each.
template <class RowAt, class Done>
void Resample(const uint8_t* rgb, int sw, int sh, int full_w, int full_h, const Augment& a, int out,
              Window held, RowAt row, Done done) {
  if (held.w == 0) held = {0, 0, sw, sh};
  const Region r = ScaledRegion(a.crop, full_w, full_h, sw, sh);
  thread_local Taps xs, ys;
  AxisTaps(r.x, r.w, out, sw, &xs);
  AxisTaps(r.y, r.h, out, sh, &ys);
  const Window need = Bounds(xs, ys);
  if (need.x < held.x || need.y < held.y || need.x + need.w > held.x + held.w ||
      need.y + need.h > held.y + held.h)
    throw Error("CropResize: the decoded window does not hold the pixels the crop needs");
  // The horizontal taps in output order, the flip folded in, as offsets into a held row.
  thread_local std::vector<int> x0, x1;
  thread_local std::vector<uint32_t> wx;
  thread_local std::vector<uint32_t> rows[2];
  x0.resize(out);
  x1.resize(out);
  wx.resize(out);
  for (int ox = 0; ox < out; ++ox) {
    const int sx = a.flip ? out - 1 - ox : ox;
    x0[ox] = (xs.i0[sx] - held.x) * 3;
    x1[ox] = (xs.i1[sx] - held.x) * 3;
    wx[ox] = uint32_t(std::lround(xs.w1[sx] * kOne));
  }
  const size_t n = size_t(out) * 3;
  rows[0].resize(n);
  rows[1].resize(n);
  int cached[2] = {-1, -1};  // the source rows in rows[0] (top tap) and rows[1] (bottom tap)
  const size_t pitch = size_t(held.w) * 3;
  auto filter = [&](int y, uint32_t* d) {
    const uint8_t* src = rgb + size_t(y - held.y) * pitch;
    for (int ox = 0; ox < out; ++ox) {
      const uint8_t* p0 = src + x0[ox];
      const uint8_t* p1 = src + x1[ox];
      const uint32_t w1 = wx[ox], w0 = kOne - w1;
      d[ox * 3 + 0] = p0[0] * w0 + p1[0] * w1;
      d[ox * 3 + 1] = p0[1] * w0 + p1[1] * w1;
      d[ox * 3 + 2] = p0[2] * w0 + p1[2] * w1;
    }
  };
  for (int oy = 0; oy < out; ++oy) {
    const int y0 = ys.i0[oy], y1 = ys.i1[oy];
    // Rows go top to bottom: the last bottom row is often this top one.
    if (cached[1] == y0 && cached[0] != y0) {
      std::swap(rows[0], rows[1]);
      std::swap(cached[0], cached[1]);
    }
    if (cached[0] != y0) filter(y0, rows[0].data()), cached[0] = y0;
    if (cached[1] != y1) filter(y1, rows[1].data()), cached[1] = y1;
    const uint32_t* __restrict__ top = rows[0].data();
    const uint32_t* __restrict__ bot = rows[1].data();
    const uint32_t w1 = uint32_t(std::lround(ys.w1[oy] * kOne)), w0 = kOne - w1;
    uint8_t* __restrict__ o = row(oy);
    for (size_t i = 0; i < n; ++i)
      o[i] = uint8_t((top[i] * w0 + bot[i] * w1 + (1u << (2 * kBits - 1))) >> (2 * kBits));
    done(oy, o);
  }
}

}  // namespace

Window TapWindow(const Box& crop, int full_w, int full_h, int sw, int sh, int out) {
  const Region r = ScaledRegion(crop, full_w, full_h, sw, sh);
  Taps xs, ys;
  AxisTaps(r.x, r.w, out, sw, &xs);
  AxisTaps(r.y, r.h, out, sh, &ys);
  return Bounds(xs, ys);
}

void CropResize(const uint8_t* rgb, int sw, int sh, int full_w, int full_h, const Augment& a,
                int out, uint8_t* dst, Window held) {
  const size_t n = size_t(out) * 3;
  Resample(
      rgb, sw, sh, full_w, full_h, a, out, held, [&](int oy) { return dst + size_t(oy) * n; },
      [](int, const uint8_t*) {});
}

void CropResizeNormalize(const uint8_t* rgb, int sw, int sh, int full_w, int full_h,
                         const Augment& a, int out, const Stats& st, DType dt, Layout layout,
                         void* dst, Window held) {
  const Affine f = AffineOf(st);
  thread_local std::vector<uint8_t> line;
  line.resize(size_t(out) * 3);
  const size_t plane = size_t(out) * out;
  // Where row oy starts in the sample: its first element of channel 0 (CHW) or pixel 0 (HWC).
  const size_t row_elems = layout == Layout::kNCHW ? size_t(out) : size_t(out) * 3;
  Resample(
      rgb, sw, sh, full_w, full_h, a, out, held, [&](int) { return line.data(); },
      [&](int oy, const uint8_t* px) {
        if (dt == DType::kBF16)
          NormalizeRow(px, out, f, layout, plane, static_cast<uint16_t*>(dst) + oy * row_elems);
        else
          NormalizeRow(px, out, f, layout, plane, static_cast<float*>(dst) + oy * row_elems);
      });
}

void Normalize(const uint8_t* rgb, int out, const Stats& st, DType dt, Layout layout, void* dst) {
  const Affine f = AffineOf(st);
  const size_t plane = size_t(out) * out;
  if (dt == DType::kBF16)
    NormalizeRow(rgb, out * out, f, layout, plane, static_cast<uint16_t*>(dst));
  else
    NormalizeRow(rgb, out * out, f, layout, plane, static_cast<float*>(dst));
}

double PixelTolerance(DType dt, int bf16_roundings) {
  double min_std = 1;
  for (const Stats& st : {kImageNetStats, kCifarStats})
    for (float sd : st.std) min_std = std::min(min_std, double(sd));
  const double one_step = 1.0 / 255.0 / min_std;
  return one_step * 1.01 + (dt == DType::kBF16 ? bf16_roundings * std::ldexp(1.0, -7) : 1e-5);
}

CifarAugment SampleCifarAugment(uint64_t seed) {
  Rng rng(seed);
  CifarAugment a;
  a.dx = int(rng.UniformInt(0, 8));
  a.dy = int(rng.UniformInt(0, 8));
  a.flip = rng.Uniform() < 0.5;
  return a;
}

void CifarCropFlip(const uint8_t* planes, const CifarAugment& a, uint8_t* dst) {
  constexpr int kSide = 32, kPad = 4;
  for (int y = 0; y < kSide; ++y) {
    const int sy = y + a.dy - kPad;
    for (int x = 0; x < kSide; ++x) {
      const int ox = a.flip ? kSide - 1 - x : x;
      const int sx = x + a.dx - kPad;
      const bool inside = sy >= 0 && sy < kSide && sx >= 0 && sx < kSide;
      for (int c = 0; c < 3; ++c)
        dst[(y * kSide + ox) * 3 + c] = inside ? planes[(c * kSide + sy) * kSide + sx] : uint8_t(0);
    }
  }
}

}  // namespace dlb::data
