// Seeded pseudo-random numbers that are the same on every platform and standard library (the
// std::uniform_*_distribution outputs are not): splitmix64 (Steele, Lea, Flood 2014) and
// xoshiro256** 1.0 (Blackman, Vigna 2018). Header-only; splitmix64 also runs in CUDA kernels.
#pragma once

#include <algorithm>
#include <cstdint>

#if defined(__CUDACC__)
#define DLB_HOST_DEVICE __host__ __device__
#else
#define DLB_HOST_DEVICE
#endif

namespace dlb {

// One splitmix64 step: advances state by the golden gamma and returns the mixed value.
DLB_HOST_DEVICE inline uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// xoshiro256**, seeded with four splitmix64 outputs.
class Rng {
 public:
  explicit Rng(uint64_t seed) {
    for (auto& s : s_) s = SplitMix64(seed);
  }
  uint64_t Next() {
    const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }
  // [0, 1) from the top 53 bits: (Next() >> 11) * 2^-53.
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  // lo + Uniform() * (hi - lo): [lo, hi).
  double Uniform(double lo, double hi) { return lo + Uniform() * (hi - lo); }
  // lo + floor(Uniform() * (hi - lo + 1)): an integer in [lo, hi].
  int64_t UniformInt(int64_t lo, int64_t hi) {
    const double span = static_cast<double>(hi - lo + 1);
    return std::min(hi, lo + static_cast<int64_t>(Uniform() * span));
  }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

// The seed of item i's own stream: splitmix64 of (splitmix64(seed) xor i), so neighbouring seeds
// and neighbouring items share nothing, and any item's numbers can be drawn without the others'.
inline uint64_t StreamSeed(uint64_t seed, uint64_t i) {
  uint64_t s = seed;
  uint64_t h = SplitMix64(s) ^ i;
  return SplitMix64(h);
}

}  // namespace dlb
