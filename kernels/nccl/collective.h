// One NCCL collective on every GPU this process drives (the harness contract, kernels/common/op.h):
// all_reduce (sum), all_gather, reduce_scatter (sum), broadcast (root 0) and all_to_all (grouped
// send/recv to every peer), out of place or in place, in f32, bf16 or f16. Each GPU's input holds
// the seeded pattern of kernels/nccl/pattern.h; Verify() checks every output element on the device.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "kernels/common/op.h"
#include "kernels/common/verdict.h"
#include "kernels/cuda/buffer.h"
#include "kernels/cuda/handles.h"
#include "kernels/nccl/buffer.h"
#include "kernels/nccl/comm.h"
#include "kernels/nccl/shape.h"

namespace dlb::nccl {

class CollectiveOp {
 public:
  static constexpr bool kGpu = true;
  static constexpr const char* kBackend = "nccl";

  // f32, bf16, f16; a size that leaves every rank at least one element; no in-place all_to_all
  // (a peer's chunk would be overwritten before it is sent).
  static Support Supports(const CommShape& shape, const RunConfig& cfg);
  // Buffers on every member's GPU, from `alloc` (ncclMemAlloc by default, as nccl-tests). `comm`
  // must outlive the op.
  CollectiveOp(const CommShape& shape, const RunConfig& cfg, Communicator& comm,
               BufferAlloc alloc = BufferAlloc::kNccl);

  // One collective on every member's stream (a group call when this process drives several).
  void Run();
  // Seeds the inputs and poisons the outputs again, runs once, and counts the wrong output
  // elements of every rank on its GPU; the count is summed over all ranks through the
  // communicator, so every process returns the same verdict.
  Verdict Verify();
  // `runs` back-to-back Run()s between an event pair on each member's stream: the slowest member's
  // span, in seconds (synchronizes). A one-element all-reduce before the start events lines the
  // GPUs up, so that no span holds the wait for a rank whose host launched later (one process per
  // GPU: that host skew reached milliseconds). The enqueues run Watched, the wait is polled: a
  // peer that stops answering ends it by the communicator's deadline.
  double TimedRuns(int runs);
  // The reference TimedRuns is held to: `runs` back-to-back Run()s timed on the host clock from the
  // first call to the end of one synchronization of every member's stream, as nccl-tests times
  // (no alignment, no events, no polling), in seconds. Watched, so that it cannot hang either.
  double PlainRuns(int runs);

  // The case this op times, named in a watchdog's error line ("comm timeout: <case>: all_reduce
  // 1048576 B bf16 on rank 1 did not finish in 300 s; communicator aborted").
  void set_case(std::string name) { case_ = std::move(name); }

  StreamRef stream() const { return comm_.members().front().stream.get(); }
  Cost cost() const { return {}; }  // a collective's rates are algbw and busbw (CountedBytes)
  std::string label() const;

  int64_t CountedBytes() const { return counts_.CountedBytes(cfg_.dtype); }
  double BusBwFactor() const { return nccl::BusBwFactor(shape_.collective, comm_.ranks()); }
  const CommCounts& counts() const { return counts_; }

 private:
  struct PerGpu {
    // send is empty in place; recv then holds the input too: an in-place reduce_scatter's is the
    // whole input, its output the rank's chunk of it (NCCL's in-place form)
    CommBuffer send, recv;
    cuda::DeviceBuffer<unsigned long long> wrong;
    cuda::DeviceBuffer<unsigned long long> align;  // TimedRuns' one-element all-reduce
    cuda::Event start, stop;
  };
  void Seed();
  void Align();
  // The enqueue's result: ncclSuccess, or ncclInProgress (then Settle before the next call).
  ncclResult_t Enqueue(const Member& m, PerGpu& g);
  std::string What() const;                        // "<case>: all_reduce 1048576 B bf16"
  void* Input(PerGpu& g, const Member& m) const;   // where a rank's input lives
  void* Output(PerGpu& g, const Member& m) const;  // where a rank's output lives

  CommShape shape_;
  RunConfig cfg_;
  Communicator& comm_;
  CommCounts counts_;
  std::string case_;
  std::vector<PerGpu> gpus_;  // one per member, same order
};

}  // namespace dlb::nccl
