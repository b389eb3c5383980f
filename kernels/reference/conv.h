// Float64 2-D convolution references: naive loops over the logical layouts of
// shapes.h (x NCHW, w K x C/groups x R x S, y and dy N x K x P x Q), obviously
// right rather than fast. The *At versions compute one output element, so the
// harness can verify a big batch at sampled positions without running the full
// O(flops) loop.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/common/fill.h"
#include "kernels/common/shapes.h"

namespace dlb {

// y[n][k][p][q] = sum over c in k's group, r, s of x[n][c][h][w] *
// w[k][c'][r][s].
std::vector<double> ReferenceConvFwd(const ConvShape &shape, const std::vector<float> &x,
                                     const std::vector<float> &w);
// dx[n][c][h][w]: the gradient of sum(y * dy) with respect to x.
std::vector<double> ReferenceConvBwdData(const ConvShape &shape, const std::vector<float> &dy,
                                         const std::vector<float> &w);
// dw[k][c'][r][s]: the gradient of sum(y * dy) with respect to w.
std::vector<double> ReferenceConvBwdFilter(const ConvShape &shape, const std::vector<float> &x,
                                           const std::vector<float> &dy);

double ReferenceConvFwdAt(const ConvShape &shape, const std::vector<float> &x,
                          const std::vector<float> &w, int64_t n, int64_t k, int64_t p, int64_t q);
double ReferenceConvBwdDataAt(const ConvShape &shape, const std::vector<float> &dy,
                              const std::vector<float> &w, int64_t n, int64_t c, int64_t h,
                              int64_t w_pos);
double ReferenceConvBwdFilterAt(const ConvShape &shape, const std::vector<float> &x,
                                const std::vector<float> &dy, int64_t k, int64_t c, int64_t r,
                                int64_t s);
// The same on seeded inputs that are never materialized: each input element is computed when
// the sum reads it (the verifier of a big batch touches a small part of its inputs).
double ReferenceConvFwdAt(const ConvShape &shape, const SeededView &x, const SeededView &w,
                          int64_t n, int64_t k, int64_t p, int64_t q);
double ReferenceConvBwdDataAt(const ConvShape &shape, const SeededView &dy, const SeededView &w,
                              int64_t n, int64_t c, int64_t h, int64_t w_pos);
double ReferenceConvBwdFilterAt(const ConvShape &shape, const SeededView &x, const SeededView &dy,
                                int64_t k, int64_t c, int64_t r, int64_t s);

// Element counts of the logical tensors.
inline int64_t ConvXSize(const ConvShape &s) { return s.n * s.c * s.h * s.w; }
inline int64_t ConvWSize(const ConvShape &s) { return s.k * (s.c / s.groups) * s.r * s.s; }
inline int64_t ConvYSize(const ConvShape &s) { return s.n * s.k * s.P() * s.Q(); }

}  // namespace dlb
