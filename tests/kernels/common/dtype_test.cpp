#include "kernels/common/dtype.h"

#include <gtest/gtest.h>

#include <cmath>

namespace dlb {
namespace {

TEST(DType, NamesRoundTrip) {
  for (DType dt : {DType::kF32, DType::kTF32, DType::kF16, DType::kBF16, DType::kFP8E4M3,
                   DType::kFP8E5M2, DType::kInt8})
    EXPECT_EQ(ParseDType(Name(dt)), dt);
  EXPECT_EQ(Name(DType::kFP8E4M3), "fp8");
  EXPECT_EQ(Name(DType::kFP8E5M2), "fp8_e5m2");
  EXPECT_EQ(Name(DType::kInt8), "int8");
  EXPECT_FALSE(ParseDType("fp32").has_value());
  EXPECT_FALSE(ParseDType("fp8_e4m3").has_value());
}

// OCP FP8 E4M3FN: bias 7, no infinity, 0x7e = 448 the largest finite, 0x7f NaN.
TEST(DType, Fp8E4M3KnownBitPatterns) {
  EXPECT_EQ(FloatToFp8E4M3(1.0f), 0x38);
  EXPECT_EQ(FloatToFp8E4M3(-2.0f), 0xc0);
  EXPECT_EQ(FloatToFp8E4M3(448.0f), 0x7e);
  EXPECT_EQ(FloatToFp8E4M3(0.5f), 0x30);
  EXPECT_EQ(FloatToFp8E4M3(std::ldexp(1.0f, -9)), 0x01);  // smallest subnormal
  EXPECT_EQ(FloatToFp8E4M3(std::ldexp(1.0f, -6)), 0x08);  // smallest normal
  EXPECT_EQ(FloatToFp8E4M3(std::ldexp(7.0f, -9)), 0x07);  // largest subnormal
  EXPECT_EQ(FloatToFp8E4M3(0.0f), 0x00);
  EXPECT_EQ(FloatToFp8E4M3(-0.0f), 0x80);
  // 1 + 2^-4 is halfway between 1 and 1 + 2^-3: to even (1); 1 + 3 * 2^-4 rounds up to 1.25.
  EXPECT_EQ(FloatToFp8E4M3(1.0625f), 0x38);
  EXPECT_EQ(FloatToFp8E4M3(1.1875f), 0x3a);
  EXPECT_EQ(FloatToFp8E4M3(1.0626f), 0x39);  // above halfway: up
  // Halfway between subnormals 2^-9 and 2 * 2^-9: to even (2 * 2^-9).
  EXPECT_EQ(FloatToFp8E4M3(std::ldexp(1.5f, -9)), 0x02);
  EXPECT_EQ(FloatToFp8E4M3(std::ldexp(1.0f, -11)), 0x00);  // a quarter step: to zero
  // Saturation (CUDA's __NV_SATFINITE): beyond 448, infinity included, to +-448; NaN stays NaN.
  EXPECT_EQ(FloatToFp8E4M3(500.0f), 0x7e);
  EXPECT_EQ(FloatToFp8E4M3(-1e9f), 0xfe);
  EXPECT_EQ(FloatToFp8E4M3(INFINITY), 0x7e);
  EXPECT_EQ(FloatToFp8E4M3(NAN) & 0x7f, 0x7f);
  EXPECT_EQ(Fp8E4M3ToFloat(0x7e), 448.0f);
  EXPECT_EQ(Fp8E4M3ToFloat(0x3b), 1.375f);
  EXPECT_EQ(Fp8E4M3ToFloat(0xb0), -0.5f);
  EXPECT_TRUE(std::isnan(Fp8E4M3ToFloat(0x7f)));
  EXPECT_TRUE(std::isnan(Fp8E4M3ToFloat(0xff)));
}

// OCP FP8 E5M2: bias 15, IEEE-like: 0x7b = 57344 the largest finite, 0x7c infinity.
TEST(DType, Fp8E5M2KnownBitPatterns) {
  EXPECT_EQ(FloatToFp8E5M2(1.0f), 0x3c);  // the top byte of f16's 0x3c00
  EXPECT_EQ(FloatToFp8E5M2(-2.0f), 0xc0);
  EXPECT_EQ(FloatToFp8E5M2(57344.0f), 0x7b);
  EXPECT_EQ(FloatToFp8E5M2(std::ldexp(1.0f, -16)), 0x01);  // smallest subnormal
  EXPECT_EQ(FloatToFp8E5M2(std::ldexp(1.0f, -14)), 0x04);  // smallest normal
  EXPECT_EQ(FloatToFp8E5M2(1.125f), 0x3c);                 // halfway: to even
  EXPECT_EQ(FloatToFp8E5M2(1.375f), 0x3e);                 // halfway: up to even 1.5
  EXPECT_EQ(FloatToFp8E5M2(1e6f), 0x7b);                   // saturates, no infinity
  EXPECT_EQ(FloatToFp8E5M2(-INFINITY), 0xfb);
  EXPECT_EQ(Fp8E5M2ToFloat(0x7b), 57344.0f);
  EXPECT_TRUE(std::isinf(Fp8E5M2ToFloat(0x7c)));
  EXPECT_TRUE(std::isnan(Fp8E5M2ToFloat(0x7e)));
  // Every finite e5m2 value is an f16 value with the low byte zero.
  for (uint32_t b = 0; b < 0x7c; ++b)
    ASSERT_EQ(Fp8E5M2ToFloat(uint8_t(b)), F16ToFloat(uint16_t(b << 8))) << b;
}

TEST(DType, Fp8RoundTripsAreIdentityOnEveryFiniteValue) {
  for (uint32_t b = 0; b < 256; ++b) {
    const uint8_t byte = uint8_t(b);
    if ((b & 0x7f) != 0x7f) ASSERT_EQ(FloatToFp8E4M3(Fp8E4M3ToFloat(byte)), byte) << b;
    if ((b & 0x7c) != 0x7c) ASSERT_EQ(FloatToFp8E5M2(Fp8E5M2ToFloat(byte)), byte) << b;
  }
}

// Rounding is to the nearest representable value: no value between two neighbours rounds past
// either, checked on a grid between every pair of neighbouring e4m3 values.
TEST(DType, Fp8E4M3RoundsToTheNearest) {
  for (uint32_t b = 0; b < 0x7e; ++b) {
    const float lo = Fp8E4M3ToFloat(uint8_t(b)), hi = Fp8E4M3ToFloat(uint8_t(b + 1));
    for (int i = 1; i < 16; ++i) {
      const float x = lo + (hi - lo) * float(i) / 16;
      const float got = Fp8E4M3ToFloat(FloatToFp8E4M3(x));
      if (i < 8) ASSERT_EQ(got, lo) << x;
      if (i > 8) ASSERT_EQ(got, hi) << x;
      if (i == 8) ASSERT_EQ(got, (b & 1) ? hi : lo) << x;  // ties to the even code
    }
  }
}

TEST(DType, Int8RoundsToNearestEvenAndSaturates) {
  EXPECT_EQ(FloatToInt8(1.4f), 1);
  EXPECT_EQ(FloatToInt8(2.5f), 2);
  EXPECT_EQ(FloatToInt8(3.5f), 4);
  EXPECT_EQ(FloatToInt8(-2.5f), -2);
  EXPECT_EQ(FloatToInt8(127.4f), 127);
  EXPECT_EQ(FloatToInt8(300.0f), 127);
  EXPECT_EQ(FloatToInt8(-300.0f), -128);
  EXPECT_EQ(FloatToInt8(NAN), 0);
}

// Scaled storage: the logical value is the stored one times the dtype's power-of-two scale, so
// seeded values in [-1, 1) keep their sign and size, and dequantising is exact.
TEST(DType, EightBitTypesStoreScaledValues) {
  EXPECT_EQ(StorageScale(DType::kF32), 1.0);
  EXPECT_EQ(StorageScale(DType::kFP8E4M3), 1.0 / 256);
  EXPECT_EQ(StorageScale(DType::kFP8E5M2), 1.0 / 32768);
  EXPECT_EQ(StorageScale(DType::kInt8), 1.0 / 128);
  EXPECT_EQ(ToScaled(DType::kInt8, 0.5f), 64);
  EXPECT_EQ(ToScaled(DType::kInt8, -1.0f), 0x80);    // -128
  EXPECT_EQ(ToScaled(DType::kInt8, 0.999f), 0x7f);   // 127.9 saturates to 127
  EXPECT_EQ(FromScaled(DType::kInt8, 0x80), -1.0f);  // -128 / 128
  EXPECT_EQ(ToScaled(DType::kFP8E4M3, 1.0f), FloatToFp8E4M3(256.0f));
  EXPECT_EQ(FromScaled(DType::kFP8E4M3, FloatToFp8E4M3(256.0f)), 1.0f);
  EXPECT_EQ(RoundTo(DType::kFP8E4M3, 0.3f), 0.3125f);  // 80 x 2^-8: e4m3 has 3 mantissa bits
  EXPECT_EQ(RoundTo(DType::kFP8E5M2, 0.3f), 0.3125f);  // 1.25 x 2^-2
  EXPECT_EQ(RoundTo(DType::kInt8, 0.3f), 38.0f / 128);
  for (float v : {-1.0f, -0.7f, -0.01f, 0.0f, 0.2f, 0.99f})
    for (DType dt : {DType::kFP8E4M3, DType::kFP8E5M2, DType::kInt8}) {
      const float r = RoundTo(dt, v);
      EXPECT_EQ(RoundTo(dt, r), r) << Name(dt) << " " << v;  // representable values stay
      // Half a unit in the last place: 2^-4 relative with e4m3's 3 mantissa bits, 2^-3 with
      // e5m2's 2; int8 half a step of 2^-7.
      const float rel = dt == DType::kFP8E5M2 ? 0.125f : dt == DType::kFP8E4M3 ? 0.0625f : 0;
      EXPECT_LE(std::fabs(r - v), std::fabs(v) * rel + 1.0f / 256) << Name(dt) << " " << v;
    }
}

TEST(DType, GemmTypesPairE5M2WithE4M3AndWidenTheOutput) {
  const GemmTypes e5 = GemmTypesOf(DType::kFP8E5M2);
  EXPECT_EQ(e5.a, DType::kFP8E5M2);
  EXPECT_EQ(e5.b, DType::kFP8E4M3);
  EXPECT_EQ(e5.out_bytes, 2u);  // bf16
  EXPECT_EQ(GemmTypesOf(DType::kFP8E4M3).b, DType::kFP8E4M3);
  EXPECT_EQ(GemmTypesOf(DType::kInt8).out_bytes, 4u);  // int32
  EXPECT_EQ(GemmTypesOf(DType::kBF16).out_bytes, 2u);
  EXPECT_EQ(Int32Result(16384, DType::kInt8), 1.0f);  // acc x 2^-7 x 2^-7
  EXPECT_EQ(Int32Result(-3, DType::kInt8), -3.0f / 16384);
  EXPECT_TRUE(std::isnan(Int32Result(kInt32Poison, DType::kInt8)));
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
  EXPECT_EQ(Tolerance(DType::kFP8E4M3), 1e-2);  // bf16 output
  EXPECT_EQ(Tolerance(DType::kInt8), 0.0);      // exact int32
  EXPECT_EQ(StorageBytes(DType::kF16), 2u);
  for (DType dt : {DType::kFP8E4M3, DType::kFP8E5M2, DType::kInt8}) {
    EXPECT_EQ(StorageBytes(dt), 1u);
    EXPECT_TRUE(IsEightBit(dt));
  }
  EXPECT_FALSE(IsEightBit(DType::kBF16));
}

}  // namespace
}  // namespace dlb
