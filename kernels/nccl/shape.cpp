#include "kernels/nccl/shape.h"

#include <algorithm>

namespace dlb::nccl {

std::string_view Name(Collective c) {
  switch (c) {
    case Collective::kAllReduce:
      return "all_reduce";
    case Collective::kAllGather:
      return "all_gather";
    case Collective::kReduceScatter:
      return "reduce_scatter";
    case Collective::kBroadcast:
      return "broadcast";
    case Collective::kAllToAll:
      return "all_to_all";
  }
  return "?";
}

std::optional<Collective> ParseCollective(std::string_view name) {
  for (Collective c : kCollectives)
    if (Name(c) == name) return c;
  return std::nullopt;
}

int64_t CommCounts::CountedBytes(DType dt) const {
  return std::max(send, recv) * int64_t(StorageBytes(dt));
}

CommCounts Counts(Collective c, int64_t bytes, DType dt, int ranks) {
  const int64_t n = std::max<int64_t>(0, bytes) / int64_t(StorageBytes(dt));
  const int64_t r = std::max(1, ranks);
  CommCounts k;
  switch (c) {
    case Collective::kAllReduce:
    case Collective::kBroadcast:
      k.send = k.recv = n;
      break;
    case Collective::kAllGather:
      k.chunk = n / r;
      k.send = k.chunk;
      k.recv = k.chunk * r;
      break;
    case Collective::kReduceScatter:
      k.chunk = n / r;
      k.send = k.chunk * r;
      k.recv = k.chunk;
      break;
    case Collective::kAllToAll:
      k.chunk = n / r;
      k.send = k.recv = k.chunk * r;
      break;
  }
  return k;
}

double BusBwFactor(Collective c, int ranks) {
  const double n = std::max(1, ranks);
  switch (c) {
    case Collective::kAllReduce:
      return 2.0 * (n - 1) / n;
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kAllToAll:
      return (n - 1) / n;
    case Collective::kBroadcast:
      return 1.0;
  }
  return 1.0;
}

}  // namespace dlb::nccl
