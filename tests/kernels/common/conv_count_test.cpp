// A convolution's work counted in closed form (ValidTapPairs, ConvShape::Flops) against the loop
// nests of its three passes, each counting the multiply-adds it does one by one.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "kernels/common/shapes.h"

namespace dlb {
namespace {

struct Axis {
  int64_t in, taps, stride, pad_before, pad_after, dilation;
  int64_t Out() const {
    return (in + pad_before + pad_after - dilation * (taps - 1) - 1) / stride + 1;
  }
};

// Forward, y[o] += x[o s - p + t d] w[t]: over outputs and taps, the input inside.
int64_t ForwardPairs(const Axis& a) {
  int64_t n = 0;
  for (int64_t o = 0; o < a.Out(); ++o)
    for (int64_t t = 0; t < a.taps; ++t) {
      const int64_t i = o * a.stride - a.pad_before + t * a.dilation;
      n += i >= 0 && i < a.in;
    }
  return n;
}

// Backward-data, dx[i] += dy[o] w[t]: over inputs and taps, the outputs whose tap lands on i.
int64_t BackwardDataPairs(const Axis& a) {
  int64_t n = 0;
  for (int64_t i = 0; i < a.in; ++i)
    for (int64_t t = 0; t < a.taps; ++t) {
      const int64_t at = i + a.pad_before - t * a.dilation;  // o x stride
      n += at >= 0 && at % a.stride == 0 && at / a.stride < a.Out();
    }
  return n;
}

// Backward-filter, dw[t] += x[i] dy[o]: over taps and inputs, the outputs that read i at t.
int64_t BackwardFilterPairs(const Axis& a) {
  int64_t n = 0;
  for (int64_t t = 0; t < a.taps; ++t)
    for (int64_t i = 0; i < a.in; ++i)
      for (int64_t o = 0; o < a.Out(); ++o) n += o * a.stride - a.pad_before + t * a.dilation == i;
  return n;
}

TEST(ConvCount, ClosedFormMatchesEachPassesLoopsOnSmallShapes) {
  int checked = 0;
  for (int64_t in : {1, 2, 4, 5, 7})
    for (int64_t taps : {1, 2, 3, 5})
      for (int64_t stride : {1, 2, 3})
        for (int64_t dilation : {1, 2})
          for (int64_t pb : {0, 1, 2})
            for (int64_t pa : {0, 1, 3}) {
              const Axis a{in, taps, stride, pb, pa, dilation};
              if (a.Out() <= 0) continue;
              SCOPED_TRACE(testing::Message()
                           << "in " << in << " taps " << taps << " stride " << stride
                           << " dilation " << dilation << " pad " << pb << "+" << pa);
              const int64_t closed = ValidTapPairs(in, a.Out(), taps, stride, pb, dilation);
              EXPECT_EQ(closed, ForwardPairs(a));
              EXPECT_EQ(closed, BackwardDataPairs(a));
              EXPECT_EQ(closed, BackwardFilterPairs(a));
              EXPECT_LE(closed, a.Out() * taps);
              ++checked;
            }
  EXPECT_GT(checked, 300);
}

// CIFAR ResNet-18's layer4 3x3 at batch 1: a 4x4 map, 512 channels in and out, padding 1. Per axis
// the taps inside are 3 + 4 + 3 of 12 (corners see 4 taps, edges 6, the middle 9): 100 of 144.
TEST(ConvCount, Layer4OfCifarResNet18CountsTheTapsInsideTheInput) {
  ConvShape s;
  s.c = s.k = 512;
  s.h = s.w = 4;
  s.r = s.s = 3;
  s.pad_h = s.pad_w = 1;
  EXPECT_EQ(ValidTapPairs(4, 4, 3, 1, 1, 1), 10);
  EXPECT_DOUBLE_EQ(s.Flops(), 2.0 * 512 * 512 * 100);              // 52.4 MFLOP
  EXPECT_DOUBLE_EQ(s.ConventionalFlops(), 2.0 * 512 * 512 * 144);  // 75.5 MFLOP
  s.pad_h = s.pad_w = 0;  // no padding: every tap is work, the two counts agree
  EXPECT_DOUBLE_EQ(s.Flops(), s.ConventionalFlops());
}

// Strided, dilated and grouped: the product of the axes' pairs x N x K x C / groups.
TEST(ConvCount, ShapeCountsBothAxesBatchAndGroups) {
  ConvShape s;
  s.n = 3, s.c = 8, s.k = 6, s.groups = 2;
  s.h = 7, s.w = 5, s.r = 3, s.s = 2;
  s.stride_h = 2, s.stride_w = 1, s.pad_h = 2, s.pad_w = 1, s.dil_h = 2, s.dil_w = 1;
  ASSERT_TRUE(s.Valid());
  const Axis h{s.h, s.r, s.stride_h, s.pad_h, s.pad_h, s.dil_h};
  const Axis w{s.w, s.s, s.stride_w, s.pad_w, s.pad_w, s.dil_w};
  ASSERT_EQ(h.Out(), s.P());
  ASSERT_EQ(w.Out(), s.Q());
  EXPECT_DOUBLE_EQ(s.Flops(), 2.0 * 3 * 6 * 4 * double(ForwardPairs(h)) * double(ForwardPairs(w)));
  EXPECT_LT(s.Flops(), s.ConventionalFlops());
}

}  // namespace
}  // namespace dlb
