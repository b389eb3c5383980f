// Data types of the benchmarks, their storage, host conversions and verification tolerances.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace dlb {

// tf32 is stored as f32 and computed with TF32 tensor-core math; the rest store what they say.
// The 8-bit types are GEMM inputs only (benchmarks/gemm): fp8 is OCP E4M3 (E4M3FN: no infinity,
// max 448), fp8_e5m2 is OCP E5M2 (IEEE-like, max 57344), int8 is two's-complement. Each 8-bit
// tensor carries a per-tensor scale, StorageScale(): its logical value is stored x scale.
enum class DType { kF32, kTF32, kF16, kBF16, kFP8E4M3, kFP8E5M2, kInt8 };

std::string_view Name(DType dt);  // "f32", "tf32", "f16", "bf16", "fp8", "fp8_e5m2", "int8"
std::optional<DType> ParseDType(std::string_view);  // inverse of Name
size_t StorageBytes(DType dt);                      // 4, 4, 2, 2, 1, 1, 1
bool IsEightBit(DType dt);                          // fp8, fp8_e5m2, int8
// Relative-L2 tolerance for a result of this dtype (docs/architecture.md): f32 1e-5, tf32 1e-3,
// 16-bit 1e-2. fp8 GEMMs write bf16 (cuBLASLt and torch._scaled_mm alike) from exactly
// representable inputs: bf16's rounding of the output (relative L2 about 2^-9 / sqrt(3) = 1.1e-3)
// dominates, so bf16's 1e-2. int8 GEMMs accumulate and write int32: exact, so 0.
double Tolerance(DType dt);

// The per-tensor scale of a tensor of seeded values (uniform in [-1, 1)) stored in dt: 1 for the
// float types, a power of two for the 8-bit ones, so that dequantising (stored x scale) is exact
// and the float64 reference sees exactly what the op multiplies. fp8 (max 448) 2^-8 and fp8_e5m2
// (max 57344) 2^-15: the largest powers of two that keep |value| <= 1 finite, i.e. amax scaling
// (scale = amax / max) rounded down to a power of two, as FP8 training recipes use; int8 2^-7
// (values round to -128..127).
double StorageScale(DType dt);

// A GEMM of case dtype dt: its operands' dtypes and the bytes of one output element. fp8_e5m2 is
// FP8 training's backward pairing (cuBLASLt has no e5m2 x e5m2): the first operand (A, e.g. the
// output gradient) e5m2, the second (B, weights or activations) e4m3. fp8 writes bf16, int8 int32.
struct GemmTypes {
  DType a, b;
  size_t out_bytes;
};
GemmTypes GemmTypesOf(DType dt);
// An int8 GEMM's int32 output: ops poison it with bytes 0x80 (0x80808080, which no product of
// int8 values with k < 130000 reaches), and read it back as the logical value acc x both
// operands' scales (exact in float below 2^24), the poison as NaN.
inline constexpr int32_t kInt32Poison = -2139062144;  // 0x80808080
float Int32Result(int32_t acc, DType dt);

// Bit-exact host conversions (round to nearest even); no CUDA header needed.
uint16_t FloatToBf16(float f);
float Bf16ToFloat(uint16_t h);
uint16_t FloatToF16(float f);
float F16ToFloat(uint16_t h);
// FP8, unscaled, round to nearest even with saturation to the largest finite value (CUDA's
// __NV_SATFINITE, which cuBLASLt's FP8 conversions use; FP8 recipes clamp to it before casting,
// as torch's own cast turns |x| >= 480 into NaN); NaN stays NaN.
uint8_t FloatToFp8E4M3(float f);
float Fp8E4M3ToFloat(uint8_t b);
uint8_t FloatToFp8E5M2(float f);
float Fp8E5M2ToFloat(uint8_t b);
// int8: round to nearest even, saturate to -128..127; NaN -> 0.
int8_t FloatToInt8(float f);
// An 8-bit dtype's storage byte for a logical value (divided by StorageScale(dt), then converted
// as above) and back; 0 for the other dtypes.
uint8_t ToScaled(DType dt, float f);
float FromScaled(DType dt, uint8_t b);
// Rounds a float to the nearest value representable in dt's storage, with the dtype's scale
// (tf32 keeps f32 storage).
float RoundTo(DType dt, float f);

}  // namespace dlb
