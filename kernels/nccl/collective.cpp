#include "kernels/nccl/collective.h"

#include <algorithm>
#include <chrono>

#include "kernels/cuda/device.h"
#include "kernels/nccl/pattern_kernels.h"

namespace dlb::nccl {

namespace {

ncclDataType_t NcclType(DType dt) {
  switch (dt) {
    case DType::kF32:
      return ncclFloat32;
    case DType::kBF16:
      return ncclBfloat16;
    case DType::kF16:
      return ncclFloat16;
    case DType::kTF32:
      break;
  }
  throw Error("collectives: no NCCL type for " + std::string(Name(dt)));
}

// Several members of one process: their calls must be one group, or the first would wait for
// peers that are never launched.
class Group {
 public:
  explicit Group(bool on) : on_(on) {
    if (on_) DLB_CHECK(ncclGroupStart());
  }
  // ncclGroupEnd's result, checked: ncclInProgress (non-blocking communicators) passes.
  ncclResult_t End() {
    ncclResult_t r = ncclSuccess;
    if (on_) DLB_CHECK(r = ncclGroupEnd());
    on_ = false;
    return r;
  }
  ~Group() {
    if (on_) DLB_CHECK_NOEXCEPT(ncclGroupEnd());
  }
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;

 private:
  bool on_;
};

// Runs `enqueue` Watched: past `deadline` the watchdog aborts the communicator, and the NCCL
// error of a call it made return becomes the watchdog's line.
template <class F>
void EnqueueWatched(Communicator& comm, const std::string& what, Clock::time_point deadline,
                    F enqueue) {
  Communicator::Watched watched(comm, what, deadline);
  try {
    enqueue();
  } catch (...) {
    watched.Check();  // the watchdog's line where it fired
    throw;
  }
  watched.Check();
}

}  // namespace

Support CollectiveOp::Supports(const CommShape& shape, const RunConfig& cfg) {
  if (cfg.dtype != DType::kF32 && cfg.dtype != DType::kBF16 && cfg.dtype != DType::kF16)
    return Support::No("collectives run in f32, bf16 or f16, not " + std::string(Name(cfg.dtype)));
  if (shape.gpus < 1) return Support::No("a collective needs at least one GPU");
  if (shape.inplace && shape.collective == Collective::kAllToAll)
    return Support::No("all_to_all has no in-place form");
  const CommCounts k = Counts(shape.collective, shape.bytes, cfg.dtype, shape.gpus);
  if (k.send <= 0 || k.recv <= 0)
    return Support::No(std::to_string(shape.bytes) + " bytes of " + std::string(Name(cfg.dtype)) +
                       " leave no element per rank on " + std::to_string(shape.gpus) + " GPUs");
  return Support::Yes();
}

CollectiveOp::CollectiveOp(const CommShape& shape, const RunConfig& cfg, Communicator& comm,
                           BufferAlloc alloc)
    : shape_(shape), cfg_(cfg), comm_(comm) {
  RequireSupported(Supports(shape, cfg));
  DLB_REQUIRE(comm.ranks() == shape.gpus, "the communicator's size differs from the case's GPUs");
  counts_ = Counts(shape.collective, shape.bytes, cfg.dtype, shape.gpus);
  const size_t elem = StorageBytes(cfg.dtype);
  for (const Member& m : comm_.members()) {
    DLB_CHECK(cudaSetDevice(m.device));
    PerGpu g;
    const bool whole_input = shape.inplace && shape.collective == Collective::kReduceScatter;
    g.recv = CommBuffer(size_t(whole_input ? counts_.send : counts_.recv) * elem, alloc);
    if (!shape.inplace) g.send = CommBuffer(size_t(counts_.send) * elem, alloc);
    g.wrong = cuda::DeviceBuffer<unsigned long long>(1);
    g.align = cuda::DeviceBuffer<unsigned long long>(1);
    DLB_CHECK(cudaMemsetAsync(g.align.get(), 0, sizeof(unsigned long long), m.stream.get()));
    g.start = cuda::MakeEvent();
    g.stop = cuda::MakeEvent();
    gpus_.push_back(std::move(g));
  }
  Seed();
}

void* CollectiveOp::Input(PerGpu& g, const Member& m) const {
  if (!shape_.inplace) return g.send.get();
  // In place, NCCL reads a rank's input where its own share of the output lies.
  const size_t elem = StorageBytes(cfg_.dtype);
  if (shape_.collective == Collective::kAllGather)
    return g.recv.get() + size_t(m.rank) * size_t(counts_.chunk) * elem;
  return g.recv.get();
}

void* CollectiveOp::Output(PerGpu& g, const Member& m) const {
  // In place, a reduce_scatter writes the rank's chunk of its input (which fills recv).
  if (shape_.inplace && shape_.collective == Collective::kReduceScatter)
    return g.recv.get() + size_t(m.rank) * size_t(counts_.chunk) * StorageBytes(cfg_.dtype);
  return g.recv.get();
}

void CollectiveOp::Seed() {
  const std::vector<Member>& members = comm_.members();
  for (size_t i = 0; i < members.size(); ++i) {
    const Member& m = members[i];
    PerGpu& g = gpus_[i];
    DLB_CHECK(cudaSetDevice(m.device));
    cuda::Poison(Output(g, m), size_t(counts_.recv), cfg_.dtype, m.stream.get());
    FillInput(Input(g, m), counts_.send, 0, cfg_.dtype, cfg_.seed, m.rank, comm_.ranks(),
              m.stream.get());
  }
  for (const Member& m : members) cuda::Sync(m.stream.get());
}

std::string CollectiveOp::What() const {
  std::string s = case_.empty() ? "" : case_ + ": ";
  return s + std::string(Name(shape_.collective)) + " " + std::to_string(shape_.bytes) + " B " +
         std::string(Name(cfg_.dtype));
}

ncclResult_t CollectiveOp::Enqueue(const Member& m, PerGpu& g) {
  const ncclDataType_t t = NcclType(cfg_.dtype);
  ncclComm_t c = m.comm.get();
  cudaStream_t s = m.stream.get();
  void* in = Input(g, m);
  void* out = Output(g, m);
  ncclResult_t r = ncclSuccess;
  switch (shape_.collective) {
    case Collective::kAllReduce:
      DLB_CHECK(r = ncclAllReduce(in, out, size_t(counts_.send), t, ncclSum, c, s));
      return r;
    case Collective::kAllGather:
      DLB_CHECK(r = ncclAllGather(in, out, size_t(counts_.chunk), t, c, s));
      return r;
    case Collective::kReduceScatter:
      DLB_CHECK(r = ncclReduceScatter(in, out, size_t(counts_.chunk), t, ncclSum, c, s));
      return r;
    case Collective::kBroadcast:
      DLB_CHECK(r = ncclBroadcast(in, out, size_t(counts_.send), t, /*root=*/0, c, s));
      return r;
    case Collective::kAllToAll: {
      const size_t bytes = size_t(counts_.chunk) * StorageBytes(cfg_.dtype);
      Group group(true);
      for (int peer = 0; peer < comm_.ranks(); ++peer) {
        DLB_CHECK(ncclSend(static_cast<char*>(in) + size_t(peer) * bytes, size_t(counts_.chunk), t,
                           peer, c, s));
        DLB_CHECK(ncclRecv(static_cast<char*>(out) + size_t(peer) * bytes, size_t(counts_.chunk), t,
                           peer, c, s));
      }
      return group.End();
    }
  }
  return r;
}

void CollectiveOp::Run() {
  comm_.RequireUsable();
  std::vector<Member>& members = comm_.members();
  bool in_progress = false;
  {
    Group group(members.size() > 1);
    for (size_t i = 0; i < members.size(); ++i)
      in_progress |= Enqueue(members[i], gpus_[i]) == ncclInProgress;
    in_progress |= group.End() == ncclInProgress;
  }
  // Only a non-blocking call NCCL left in progress (a connection set up on first use) is polled:
  // the usual enqueue returns ncclSuccess and costs the timed loop nothing more.
  if (in_progress) comm_.Settle(What());
}

Verdict CollectiveOp::Verify() {
  Seed();
  // The first collective of a communicator may set up its connections (NCCL connects on first
  // use), which blocks the host until the peers answer: Watched.
  EnqueueWatched(comm_, What() + " (verification)", comm_.Deadline(), [&] { Run(); });
  std::vector<Member>& members = comm_.members();
  for (size_t i = 0; i < members.size(); ++i) {
    const Member& m = members[i];
    PerGpu& g = gpus_[i];
    DLB_CHECK(cudaSetDevice(m.device));
    DLB_CHECK(cudaMemsetAsync(g.wrong.get(), 0, sizeof(unsigned long long), m.stream.get()));
    CountWrong(Output(g, m), counts_.recv, cfg_.dtype, shape_.collective, cfg_.seed, m.rank,
               comm_.ranks(), counts_.chunk, g.wrong.get(), m.stream.get());
  }
  // Every rank's count, summed on every GPU: all processes reach the same verdict.
  {
    bool in_progress = false;
    Group group(members.size() > 1);
    for (size_t i = 0; i < members.size(); ++i) {
      ncclResult_t r = ncclSuccess;
      DLB_CHECK(r = ncclAllReduce(gpus_[i].wrong.get(), gpus_[i].wrong.get(), 1, ncclUint64,
                                  ncclSum, members[i].comm.get(), members[i].stream.get()));
      in_progress |= r == ncclInProgress;
    }
    in_progress |= group.End() == ncclInProgress;
    if (in_progress) comm_.Settle(What() + " (the check's count)");
  }
  unsigned long long wrong = 0;
  DLB_CHECK(cudaSetDevice(members.front().device));
  DLB_CHECK(cudaMemcpyAsync(&wrong, gpus_.front().wrong.get(), sizeof wrong, cudaMemcpyDeviceToHost,
                            members.front().stream.get()));
  std::vector<cudaStream_t> streams;
  for (const Member& m : members) streams.push_back(m.stream.get());
  WaitOrAbort(comm_, streams, What() + " (verification)");
  // The in-place timed runs start from this output, not the seeded input: for the reductions
  // that only changes the values summed, never the work.
  Verdict v;
  const size_t total = size_t(counts_.recv) * size_t(comm_.ranks());
  v.ok = wrong == 0;
  v.disposition = v.ok ? Disposition::kVerified : Disposition::kNotVerified;
  v.error = double(wrong);
  v.tolerance = 0;
  v.metric = "wrong_elements";
  v.checked = total;
  v.of = total;
  v.detail = std::to_string(wrong) + " wrong of " + std::to_string(total) + " elements on " +
             std::to_string(comm_.ranks()) + " GPUs";
  return v;
}

void CollectiveOp::Align() {
  comm_.RequireUsable();
  std::vector<Member>& members = comm_.members();
  bool in_progress = false;
  {
    Group group(members.size() > 1);
    for (size_t i = 0; i < members.size(); ++i) {
      ncclResult_t r = ncclSuccess;
      DLB_CHECK(r = ncclAllReduce(gpus_[i].align.get(), gpus_[i].align.get(), 1, ncclUint64,
                                  ncclSum, members[i].comm.get(), members[i].stream.get()));
      in_progress |= r == ncclInProgress;
    }
    in_progress |= group.End() == ncclInProgress;
  }
  if (in_progress) comm_.Settle(What() + " (the ranks' alignment)");
}

double CollectiveOp::TimedRuns(int runs) {
  std::vector<Member>& members = comm_.members();
  const auto deadline = comm_.Deadline();
  EnqueueWatched(comm_, What(), deadline, [&] {
    Align();
    for (size_t i = 0; i < members.size(); ++i) {
      DLB_CHECK(cudaSetDevice(members[i].device));
      DLB_CHECK(cudaEventRecord(gpus_[i].start.get(), members[i].stream.get()));
    }
    for (int r = 0; r < runs; ++r) Run();
    for (size_t i = 0; i < members.size(); ++i) {
      DLB_CHECK(cudaSetDevice(members[i].device));
      DLB_CHECK(cudaEventRecord(gpus_[i].stop.get(), members[i].stream.get()));
    }
  });
  // The wait polls the stop events where cudaEventSynchronize blocked: the span between the
  // events is the same; a hang ends at the communicator's deadline instead of never.
  std::vector<cudaEvent_t> stops;
  for (PerGpu& g : gpus_) stops.push_back(g.stop.get());
  WaitOrAbort(comm_, stops, What());
  double slowest = 0;
  for (size_t i = 0; i < members.size(); ++i) {
    float ms = 0;
    DLB_CHECK(cudaEventElapsedTime(&ms, gpus_[i].start.get(), gpus_[i].stop.get()));
    slowest = std::max(slowest, double(ms) * 1e-3);
  }
  return slowest;
}

double CollectiveOp::PlainRuns(int runs) {
  std::vector<Member>& members = comm_.members();
  std::chrono::steady_clock::time_point start, stop;
  EnqueueWatched(comm_, What() + " (plain loop)", comm_.Deadline(), [&] {
    start = std::chrono::steady_clock::now();
    for (int r = 0; r < runs; ++r) Run();
    for (const Member& m : members) DLB_CHECK(cudaStreamSynchronize(m.stream.get()));
    stop = std::chrono::steady_clock::now();
  });
  return std::chrono::duration<double>(stop - start).count();
}

std::string CollectiveOp::label() const {
  std::string s = "nccl " + Version() + " " + std::string(Name(shape_.collective));
  if (shape_.collective == Collective::kAllReduce ||
      shape_.collective == Collective::kReduceScatter)
    s += " sum";
  if (shape_.collective == Collective::kBroadcast) s += " root 0";
  if (shape_.collective == Collective::kAllToAll) s += " (grouped send/recv)";
  s += ", " + std::to_string(comm_.ranks()) + " ranks";
  if (comm_.members().size() > 1) s += " in one process";
  s += ", " + std::to_string(CountedBytes()) + " bytes counted, " +
       (shape_.inplace ? "in place" : "out of place");
  return s;
}

}  // namespace dlb::nccl
