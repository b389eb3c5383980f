#include "kernels/reference/conv.h"

#include "kernels/common/error.h"

namespace dlb {

namespace {

void CheckSizes(const ConvShape &s, size_t a, int64_t a_want, size_t b, int64_t b_want) {
  DLB_REQUIRE(s.Valid(), "invalid convolution shape");
  DLB_REQUIRE(static_cast<int64_t>(a) == a_want && static_cast<int64_t>(b) == b_want,
              "tensor sizes do not match the convolution shape");
}

int64_t XIndex(const ConvShape &s, int64_t n, int64_t c, int64_t h, int64_t w) {
  return ((n * s.c + c) * s.h + h) * s.w + w;
}
int64_t WIndex(const ConvShape &s, int64_t k, int64_t cg, int64_t r, int64_t q) {
  return ((k * (s.c / s.groups) + cg) * s.r + r) * s.s + q;
}
int64_t YIndex(const ConvShape &s, int64_t n, int64_t k, int64_t p, int64_t q) {
  return ((n * s.k + k) * s.P() + p) * s.Q() + q;
}

// T: std::vector<float>, or SeededView (inputs computed as they are read).
template <class T>
double FwdAt(const ConvShape &s, const T &x, const T &w, int64_t n, int64_t k, int64_t p,
             int64_t q) {
  const int64_t cpg = s.c / s.groups, kpg = s.k / s.groups, g = k / kpg;
  double acc = 0;
  for (int64_t cg = 0; cg < cpg; ++cg) {
    const int64_t c = g * cpg + cg;
    for (int64_t r = 0; r < s.r; ++r) {
      const int64_t h = p * s.stride_h - s.pad_h + r * s.dil_h;
      if (h < 0 || h >= s.h) continue;
      for (int64_t t = 0; t < s.s; ++t) {
        const int64_t wi = q * s.stride_w - s.pad_w + t * s.dil_w;
        if (wi < 0 || wi >= s.w) continue;
        acc += double(x[XIndex(s, n, c, h, wi)]) * double(w[WIndex(s, k, cg, r, t)]);
      }
    }
  }
  return acc;
}

// Sums over the (k, p, q) whose window covers input position (h, w) through tap
// (r, s): h = p*stride - pad + r*dil, so p = (h + pad - r*dil) / stride when
// that divides exactly.
template <class T>
double BwdDataAt(const ConvShape &s, const T &dy, const T &w, int64_t n, int64_t c, int64_t h,
                 int64_t wpos) {
  const int64_t cpg = s.c / s.groups, kpg = s.k / s.groups, g = c / cpg, cg = c % cpg;
  const int64_t P = s.P(), Q = s.Q();
  double acc = 0;
  for (int64_t r = 0; r < s.r; ++r) {
    const int64_t ph = h + s.pad_h - r * s.dil_h;
    if (ph < 0 || ph % s.stride_h != 0 || ph / s.stride_h >= P) continue;
    const int64_t p = ph / s.stride_h;
    for (int64_t t = 0; t < s.s; ++t) {
      const int64_t qw = wpos + s.pad_w - t * s.dil_w;
      if (qw < 0 || qw % s.stride_w != 0 || qw / s.stride_w >= Q) continue;
      const int64_t q = qw / s.stride_w;
      for (int64_t kk = 0; kk < kpg; ++kk) {
        const int64_t k = g * kpg + kk;
        acc += double(dy[YIndex(s, n, k, p, q)]) * double(w[WIndex(s, k, cg, r, t)]);
      }
    }
  }
  return acc;
}

template <class T>
double BwdFilterAt(const ConvShape &s, const T &x, const T &dy, int64_t k, int64_t cg, int64_t r,
                   int64_t t) {
  const int64_t cpg = s.c / s.groups, kpg = s.k / s.groups, c = (k / kpg) * cpg + cg;
  const int64_t P = s.P(), Q = s.Q();
  double acc = 0;
  for (int64_t n = 0; n < s.n; ++n) {
    for (int64_t p = 0; p < P; ++p) {
      const int64_t h = p * s.stride_h - s.pad_h + r * s.dil_h;
      if (h < 0 || h >= s.h) continue;
      for (int64_t q = 0; q < Q; ++q) {
        const int64_t wi = q * s.stride_w - s.pad_w + t * s.dil_w;
        if (wi < 0 || wi >= s.w) continue;
        acc += double(x[XIndex(s, n, c, h, wi)]) * double(dy[YIndex(s, n, k, p, q)]);
      }
    }
  }
  return acc;
}

}  // namespace

std::vector<double> ReferenceConvFwd(const ConvShape &s, const std::vector<float> &x,
                                     const std::vector<float> &w) {
  CheckSizes(s, x.size(), ConvXSize(s), w.size(), ConvWSize(s));
  std::vector<double> y(ConvYSize(s));
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t k = 0; k < s.k; ++k)
      for (int64_t p = 0; p < s.P(); ++p)
        for (int64_t q = 0; q < s.Q(); ++q) y[YIndex(s, n, k, p, q)] = FwdAt(s, x, w, n, k, p, q);
  return y;
}

std::vector<double> ReferenceConvBwdData(const ConvShape &s, const std::vector<float> &dy,
                                         const std::vector<float> &w) {
  CheckSizes(s, dy.size(), ConvYSize(s), w.size(), ConvWSize(s));
  std::vector<double> dx(ConvXSize(s));
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t c = 0; c < s.c; ++c)
      for (int64_t h = 0; h < s.h; ++h)
        for (int64_t wi = 0; wi < s.w; ++wi)
          dx[XIndex(s, n, c, h, wi)] = BwdDataAt(s, dy, w, n, c, h, wi);
  return dx;
}

std::vector<double> ReferenceConvBwdFilter(const ConvShape &s, const std::vector<float> &x,
                                           const std::vector<float> &dy) {
  CheckSizes(s, x.size(), ConvXSize(s), dy.size(), ConvYSize(s));
  std::vector<double> dw(ConvWSize(s));
  for (int64_t k = 0; k < s.k; ++k)
    for (int64_t cg = 0; cg < s.c / s.groups; ++cg)
      for (int64_t r = 0; r < s.r; ++r)
        for (int64_t t = 0; t < s.s; ++t)
          dw[WIndex(s, k, cg, r, t)] = BwdFilterAt(s, x, dy, k, cg, r, t);
  return dw;
}

namespace {

template <class T>
double CheckedFwdAt(const ConvShape &s, const T &x, const T &w, int64_t n, int64_t k, int64_t p,
                    int64_t q) {
  CheckSizes(s, x.size(), ConvXSize(s), w.size(), ConvWSize(s));
  DLB_REQUIRE(n >= 0 && n < s.n && k >= 0 && k < s.k && p >= 0 && p < s.P() && q >= 0 && q < s.Q(),
              "position outside y");
  return FwdAt(s, x, w, n, k, p, q);
}

template <class T>
double CheckedBwdDataAt(const ConvShape &s, const T &dy, const T &w, int64_t n, int64_t c,
                        int64_t h, int64_t w_pos) {
  CheckSizes(s, dy.size(), ConvYSize(s), w.size(), ConvWSize(s));
  DLB_REQUIRE(
      n >= 0 && n < s.n && c >= 0 && c < s.c && h >= 0 && h < s.h && w_pos >= 0 && w_pos < s.w,
      "position outside dx");
  return BwdDataAt(s, dy, w, n, c, h, w_pos);
}

template <class T>
double CheckedBwdFilterAt(const ConvShape &s, const T &x, const T &dy, int64_t k, int64_t c,
                          int64_t r, int64_t s_pos) {
  CheckSizes(s, x.size(), ConvXSize(s), dy.size(), ConvYSize(s));
  DLB_REQUIRE(k >= 0 && k < s.k && c >= 0 && c < s.c / s.groups && r >= 0 && r < s.r &&
                  s_pos >= 0 && s_pos < s.s,
              "position outside dw");
  return BwdFilterAt(s, x, dy, k, c, r, s_pos);
}

}  // namespace

double ReferenceConvFwdAt(const ConvShape &s, const std::vector<float> &x,
                          const std::vector<float> &w, int64_t n, int64_t k, int64_t p, int64_t q) {
  return CheckedFwdAt(s, x, w, n, k, p, q);
}
double ReferenceConvFwdAt(const ConvShape &s, const SeededView &x, const SeededView &w, int64_t n,
                          int64_t k, int64_t p, int64_t q) {
  return CheckedFwdAt(s, x, w, n, k, p, q);
}
double ReferenceConvBwdDataAt(const ConvShape &s, const std::vector<float> &dy,
                              const std::vector<float> &w, int64_t n, int64_t c, int64_t h,
                              int64_t w_pos) {
  return CheckedBwdDataAt(s, dy, w, n, c, h, w_pos);
}
double ReferenceConvBwdDataAt(const ConvShape &s, const SeededView &dy, const SeededView &w,
                              int64_t n, int64_t c, int64_t h, int64_t w_pos) {
  return CheckedBwdDataAt(s, dy, w, n, c, h, w_pos);
}
double ReferenceConvBwdFilterAt(const ConvShape &s, const std::vector<float> &x,
                                const std::vector<float> &dy, int64_t k, int64_t c, int64_t r,
                                int64_t s_pos) {
  return CheckedBwdFilterAt(s, x, dy, k, c, r, s_pos);
}
double ReferenceConvBwdFilterAt(const ConvShape &s, const SeededView &x, const SeededView &dy,
                                int64_t k, int64_t c, int64_t r, int64_t s_pos) {
  return CheckedBwdFilterAt(s, x, dy, k, c, r, s_pos);
}

}  // namespace dlb
