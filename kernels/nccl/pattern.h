// The seeded data every collective case starts from, and the output it must produce, element by
// element. Values are small non-negative integers, at most 256 / ranks, so every partial sum a
// reduction forms in any order is an integer below 257: exact in bf16 (8 significant bits), f16
// and f32. A check can then demand equality, and a wrong element is a wrong element (nccl-tests'
// #wrong), never rounding. Compiled for the host (tests) and the device (the check kernel).
#pragma once

#include <cstdint>

#include "kernels/nccl/shape.h"

#ifdef __CUDACC__
#define DLB_HOST_DEVICE __host__ __device__
#else
#define DLB_HOST_DEVICE
#endif

namespace dlb::nccl::pattern {

// Distinct values a rank's input takes: sums over `ranks` ranks stay at or below 256.
DLB_HOST_DEVICE inline int Range(int ranks) {
  const int r = 256 / (ranks > 0 ? ranks : 1);
  return r < 1 ? 1 : (r > 64 ? 64 : r);
}

// splitmix64's finaliser: neighbouring elements and ranks get unrelated values, so a chunk that
// lands in the wrong place or rank shows up as wrong elements.
DLB_HOST_DEVICE inline uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Element i of rank `rank`'s input buffer.
DLB_HOST_DEVICE inline float Input(uint64_t seed, int rank, int ranks, int64_t i) {
  const uint64_t h = Mix(seed ^ Mix(uint64_t(rank) * 0x100000001b3ull ^ uint64_t(i)));
  return float(h % uint64_t(Range(ranks)));
}

// Element i of rank `rank`'s output once the collective ran (broadcast's root is rank 0; chunk
// is CommCounts::chunk).
DLB_HOST_DEVICE inline float Expected(Collective c, uint64_t seed, int rank, int ranks,
                                      int64_t chunk, int64_t i) {
  switch (c) {
    case Collective::kAllReduce: {
      float sum = 0;
      for (int s = 0; s < ranks; ++s) sum += Input(seed, s, ranks, i);
      return sum;
    }
    case Collective::kAllGather:
      return Input(seed, int(i / chunk), ranks, i % chunk);
    case Collective::kReduceScatter: {
      float sum = 0;
      for (int s = 0; s < ranks; ++s) sum += Input(seed, s, ranks, int64_t(rank) * chunk + i);
      return sum;
    }
    case Collective::kBroadcast:
      return Input(seed, 0, ranks, i);
    case Collective::kAllToAll:
      return Input(seed, int(i / chunk), ranks, int64_t(rank) * chunk + i % chunk);
  }
  return -1;
}

}  // namespace dlb::nccl::pattern
