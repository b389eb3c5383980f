// Data types of the benchmarks, their storage, host conversions and verification tolerances.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace dlb {

// tf32 is stored as f32 and computed with TF32 tensor-core math; the rest store what they say.
enum class DType { kF32, kTF32, kF16, kBF16 };

std::string_view Name(DType dt);                    // "f32", "tf32", "f16", "bf16"
std::optional<DType> ParseDType(std::string_view);  // inverse of Name
size_t StorageBytes(DType dt);                      // 4, 4, 2, 2
// Relative-L2 tolerance for a result in this dtype (docs/architecture.md): f32 1e-5, tf32 1e-3,
// 16-bit 1e-2.
double Tolerance(DType dt);

// Bit-exact host conversions (round to nearest even); no CUDA header needed.
uint16_t FloatToBf16(float f);
float Bf16ToFloat(uint16_t h);
uint16_t FloatToF16(float f);
float F16ToFloat(uint16_t h);
// Rounds a float to the nearest value representable in dt's storage (tf32 keeps f32 storage).
float RoundTo(DType dt, float f);

}  // namespace dlb
