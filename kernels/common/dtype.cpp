#include "kernels/common/dtype.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace dlb {

std::string_view Name(DType dt) {
  switch (dt) {
    case DType::kF32:
      return "f32";
    case DType::kTF32:
      return "tf32";
    case DType::kF16:
      return "f16";
    case DType::kBF16:
      return "bf16";
    case DType::kFP8E4M3:
      return "fp8";
    case DType::kFP8E5M2:
      return "fp8_e5m2";
    case DType::kInt8:
      return "int8";
  }
  return "?";
}

std::optional<DType> ParseDType(std::string_view s) {
  for (DType dt : {DType::kF32, DType::kTF32, DType::kF16, DType::kBF16, DType::kFP8E4M3,
                   DType::kFP8E5M2, DType::kInt8})
    if (Name(dt) == s) return dt;
  return std::nullopt;
}

size_t StorageBytes(DType dt) {
  switch (dt) {
    case DType::kF32:
    case DType::kTF32:
      return 4;
    case DType::kF16:
    case DType::kBF16:
      return 2;
    case DType::kFP8E4M3:
    case DType::kFP8E5M2:
    case DType::kInt8:
      return 1;
  }
  return 4;
}

bool IsEightBit(DType dt) { return StorageBytes(dt) == 1; }

double StorageScale(DType dt) {
  switch (dt) {
    case DType::kFP8E4M3:
      return 1.0 / 256;
    case DType::kFP8E5M2:
      return 1.0 / 32768;
    case DType::kInt8:
      return 1.0 / 128;
    default:
      return 1.0;
  }
}

GemmTypes GemmTypesOf(DType dt) {
  switch (dt) {
    case DType::kFP8E4M3:
      return {dt, dt, 2};
    case DType::kFP8E5M2:
      return {DType::kFP8E5M2, DType::kFP8E4M3, 2};
    case DType::kInt8:
      return {dt, dt, 4};
    default:
      return {dt, dt, StorageBytes(dt)};
  }
}

double Tolerance(DType dt) {
  switch (dt) {
    case DType::kF32:
      return 1e-5;
    case DType::kTF32:
      return 1e-3;
    case DType::kF16:
    case DType::kBF16:
    case DType::kFP8E4M3:
    case DType::kFP8E5M2:
      return 1e-2;
    case DType::kInt8:
      return 0;
  }
  return 0;
}

float Int32Result(int32_t acc, DType dt) {
  if (acc == kInt32Poison) return std::numeric_limits<float>::quiet_NaN();
  const GemmTypes t = GemmTypesOf(dt);
  return float(acc) * float(StorageScale(t.a) * StorageScale(t.b));
}

namespace {
uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
}  // namespace

uint16_t FloatToBf16(float f) {
  uint32_t u = Bits(f);
  if (std::isnan(f)) return static_cast<uint16_t>((u >> 16) | 0x40);  // quiet NaN
  u += 0x7fff + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}

float Bf16ToFloat(uint16_t h) { return FromBits(static_cast<uint32_t>(h) << 16); }

uint16_t FloatToF16(float f) {
  uint32_t u = Bits(f);
  uint32_t sign = (u >> 16) & 0x8000;
  uint32_t abs = u & 0x7fffffff;
  if (abs >= 0x7f800000) return static_cast<uint16_t>(sign | (abs > 0x7f800000 ? 0x7e00 : 0x7c00));
  if (abs >= 0x477ff000) return static_cast<uint16_t>(sign | 0x7c00);  // rounds to infinity
  if (abs < 0x38800000) {                                              // subnormal or zero
    // Scale into the subnormal range and let the FPU round to nearest even.
    float v = FromBits(abs) * 16777216.0f;  // 2^24: f16 subnormal step is 2^-24
    uint32_t m = static_cast<uint32_t>(std::nearbyint(v));
    return static_cast<uint16_t>(sign | m);
  }
  uint32_t exp = ((abs >> 23) - 127 + 15) << 10;
  uint32_t mant = abs & 0x7fffff;
  uint32_t h = exp | (mant >> 13);
  uint32_t rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;
  return static_cast<uint16_t>(sign | h);
}

float F16ToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  if (exp == 0) {
    float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  if (exp == 31) return FromBits(sign | 0x7f800000 | (mant << 13));
  return FromBits(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

namespace {
// An OCP FP8 format with `mbits` mantissa bits and exponent bias `bias`, largest finite value
// `max_code` (sign cleared). Round to nearest even: nearbyint in the default rounding mode, on
// values scaled by powers of two (exact).
uint8_t EncodeFp8(float f, int mbits, int bias, uint8_t max_code, uint8_t nan_code, float max) {
  const uint8_t sign = std::signbit(f) ? 0x80 : 0;
  if (std::isnan(f)) return static_cast<uint8_t>(sign | nan_code);
  const float a = std::fabs(f);
  if (a >= max) return static_cast<uint8_t>(sign | max_code);
  const int emin = 1 - bias;  // exponent of the smallest normal
  if (a < std::ldexp(1.0f, emin)) {
    // Subnormal steps of 2^(emin - mbits); rounding up to 2^mbits is the smallest normal's code.
    const float q = std::nearbyint(std::ldexp(a, mbits - emin));
    return static_cast<uint8_t>(sign | static_cast<uint8_t>(q));
  }
  int e = 0;
  std::frexp(a, &e);                                   // a = fr * 2^e, fr in [0.5, 1)
  e -= 1;                                              // a = 1.x * 2^e
  float q = std::nearbyint(std::ldexp(a, mbits - e));  // in [2^mbits, 2^(mbits+1)]
  if (q >= std::ldexp(1.0f, mbits + 1)) {
    q = std::ldexp(1.0f, mbits);
    ++e;
  }
  const int mant = static_cast<int>(q) - (1 << mbits);
  return static_cast<uint8_t>(sign | ((e + bias) << mbits) | mant);
}

float DecodeFp8(uint8_t b, int mbits, int bias) {
  const int exp = (b & 0x7f) >> mbits;
  const int mant = b & ((1 << mbits) - 1);
  const float v = exp == 0 ? std::ldexp(float(mant), 1 - bias - mbits)
                           : std::ldexp(float((1 << mbits) | mant), exp - bias - mbits);
  return (b & 0x80) ? -v : v;
}
}  // namespace

uint8_t FloatToFp8E4M3(float f) { return EncodeFp8(f, 3, 7, 0x7e, 0x7f, 448.0f); }

float Fp8E4M3ToFloat(uint8_t b) {
  if ((b & 0x7f) == 0x7f) return std::numeric_limits<float>::quiet_NaN();  // E4M3FN: no inf
  return DecodeFp8(b, 3, 7);
}

uint8_t FloatToFp8E5M2(float f) { return EncodeFp8(f, 2, 15, 0x7b, 0x7e, 57344.0f); }

float Fp8E5M2ToFloat(uint8_t b) {
  if ((b & 0x7c) == 0x7c) {  // exponent all ones: infinity or NaN, as IEEE
    if (b & 0x03) return std::numeric_limits<float>::quiet_NaN();
    return (b & 0x80) ? -std::numeric_limits<float>::infinity()
                      : std::numeric_limits<float>::infinity();
  }
  return DecodeFp8(b, 2, 15);
}

int8_t FloatToInt8(float f) {
  if (std::isnan(f)) return 0;
  return static_cast<int8_t>(std::clamp(std::nearbyint(f), -128.0f, 127.0f));
}

uint8_t ToScaled(DType dt, float f) {
  const float stored = f / float(StorageScale(dt));  // a power of two: exact
  switch (dt) {
    case DType::kFP8E4M3:
      return FloatToFp8E4M3(stored);
    case DType::kFP8E5M2:
      return FloatToFp8E5M2(stored);
    case DType::kInt8:
      return static_cast<uint8_t>(FloatToInt8(stored));
    default:
      return 0;
  }
}

float FromScaled(DType dt, uint8_t b) {
  const float scale = float(StorageScale(dt));
  switch (dt) {
    case DType::kFP8E4M3:
      return Fp8E4M3ToFloat(b) * scale;
    case DType::kFP8E5M2:
      return Fp8E5M2ToFloat(b) * scale;
    case DType::kInt8:
      return float(static_cast<int8_t>(b)) * scale;
    default:
      return 0;
  }
}

float RoundTo(DType dt, float f) {
  switch (dt) {
    case DType::kF32:
    case DType::kTF32:
      return f;
    case DType::kF16:
      return F16ToFloat(FloatToF16(f));
    case DType::kBF16:
      return Bf16ToFloat(FloatToBf16(f));
    case DType::kFP8E4M3:
    case DType::kFP8E5M2:
    case DType::kInt8:
      return FromScaled(dt, ToScaled(dt, f));
  }
  return f;
}

}  // namespace dlb
