#include "kernels/common/dtype.h"

#include <gtest/gtest.h>

#include <cmath>

namespace dlb {
namespace {

TEST(DType, NamesRoundTrip) {
  for (DType dt : {DType::kF32, DType::kTF32, DType::kF16, DType::kBF16})
    EXPECT_EQ(ParseDType(Name(dt)), dt);
  EXPECT_FALSE(ParseDType("fp32").has_value());
}

TEST(DType, Bf16KnownBitPatterns) {
  EXPECT_EQ(FloatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(FloatToBf16(-2.0f), 0xc000);
  // 1 + 2^-8 is halfway between two bf16 values: round to even (down to 1.0).
  EXPECT_EQ(FloatToBf16(1.00390625f), 0x3f80);
  // 1 + 3 * 2^-8 is halfway: rounds up to the even 1 + 2^-6.
  EXPECT_EQ(FloatToBf16(1.01171875f), 0x3f82);
  EXPECT_EQ(Bf16ToFloat(0x4049), 3.140625f);
  EXPECT_TRUE(std::isnan(Bf16ToFloat(FloatToBf16(NAN))));
}

TEST(DType, F16KnownBitPatterns) {
  EXPECT_EQ(FloatToF16(1.0f), 0x3c00);
  EXPECT_EQ(FloatToF16(-2.0f), 0xc000);
  EXPECT_EQ(FloatToF16(65504.0f), 0x7bff);        // largest finite
  EXPECT_EQ(FloatToF16(1e6f), 0x7c00);            // overflows to infinity
  EXPECT_EQ(FloatToF16(5.9604645e-8f), 0x0001);   // smallest subnormal, 2^-24
  EXPECT_EQ(FloatToF16(1.00048828125f), 0x3c00);  // 1 + 2^-11: halfway, to even
  EXPECT_EQ(F16ToFloat(0x3555), 0.333251953125f);
  EXPECT_EQ(F16ToFloat(0x0001), 5.9604644775390625e-8f);
  EXPECT_TRUE(std::isinf(F16ToFloat(0x7c00)));
}

TEST(DType, RoundTripIsIdentityOnRepresentableValues) {
  for (uint32_t h = 0; h < 0x7c00; ++h) ASSERT_EQ(FloatToF16(F16ToFloat(uint16_t(h))), h);
  for (uint32_t h = 0; h < 0x7f80; h += 7) ASSERT_EQ(FloatToBf16(Bf16ToFloat(uint16_t(h))), h);
}

TEST(DType, Tolerances) {
  EXPECT_EQ(Tolerance(DType::kF32), 1e-5);
  EXPECT_EQ(Tolerance(DType::kTF32), 1e-3);
  EXPECT_EQ(Tolerance(DType::kBF16), 1e-2);
  EXPECT_EQ(StorageBytes(DType::kF16), 2u);
}

}  // namespace
}  // namespace dlb
