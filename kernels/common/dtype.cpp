#include "kernels/common/dtype.h"

#include <cmath>

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
  }
  return "?";
}

std::optional<DType> ParseDType(std::string_view s) {
  for (DType dt : {DType::kF32, DType::kTF32, DType::kF16, DType::kBF16})
    if (Name(dt) == s) return dt;
  return std::nullopt;
}

size_t StorageBytes(DType dt) { return dt == DType::kF32 || dt == DType::kTF32 ? 4 : 2; }

double Tolerance(DType dt) {
  switch (dt) {
    case DType::kF32:
      return 1e-5;
    case DType::kTF32:
      return 1e-3;
    case DType::kF16:
    case DType::kBF16:
      return 1e-2;
  }
  return 0;
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

float RoundTo(DType dt, float f) {
  switch (dt) {
    case DType::kF32:
    case DType::kTF32:
      return f;
    case DType::kF16:
      return F16ToFloat(FloatToF16(f));
    case DType::kBF16:
      return Bf16ToFloat(FloatToBf16(f));
  }
  return f;
}

}  // namespace dlb
