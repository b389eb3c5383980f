// What a collective case is, and what nccl-tests counts of it: per-rank element counts, the bytes
// algbw divides by, and busbw's factor (nccl-tests' doc/PERFORMANCE.md). No vendor header: the
// family's registration and the CPU tests use it.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "kernels/common/dtype.h"

namespace dlb::nccl {

enum class Collective { kAllReduce, kAllGather, kReduceScatter, kBroadcast, kAllToAll };
inline constexpr std::array<Collective, 5> kCollectives = {
    Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter,
    Collective::kBroadcast, Collective::kAllToAll};

std::string_view Name(Collective c);  // "all_reduce", "all_gather", ...
std::optional<Collective> ParseCollective(std::string_view name);

struct CommShape {
  Collective collective = Collective::kAllReduce;
  int64_t bytes = 0;     // the case's size, as nccl-tests' size column counts it
  bool inplace = false;  // output written over the input
  int gpus = 2;          // ranks of the communicator, one GPU each
};

// Per-rank element counts of one collective over `ranks` ranks. `bytes` is the larger of a rank's
// input and output buffers (nccl-tests' size: all_gather's output, reduce_scatter's and
// all_to_all's input); where the collective splits that buffer into one chunk per rank, the
// count is rounded down to a multiple of `ranks`, as nccl-tests does.
struct CommCounts {
  int64_t send = 0;   // input elements per rank
  int64_t recv = 0;   // output elements per rank
  int64_t chunk = 0;  // elements of one rank's share (all_gather, reduce_scatter, all_to_all)
  int64_t CountedBytes(DType dt) const;  // what algbw divides by: the larger buffer, in bytes
};
CommCounts Counts(Collective c, int64_t bytes, DType dt, int ranks);

// busbw = algbw x this: 2(n-1)/n for all_reduce, (n-1)/n for all_gather, reduce_scatter and
// all_to_all, 1 for broadcast. It makes the figure comparable with the hardware's link speed
// whatever the number of ranks.
double BusBwFactor(Collective c, int ranks);

}  // namespace dlb::nccl
