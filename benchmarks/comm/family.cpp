#include "benchmarks/comm/family.h"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>

#include "benchmarks/comm/matrix.h"
#include "fixtures/harness.h"
#include "kernels/cuda/device.h"
#include "kernels/nccl/comm.h"

namespace dlb::comm {

namespace {

Options& MutableOptions() {
  static Options o;
  return o;
}

// The run's communicator, or why it could not be made (kept for the run).
struct WorldState {
  std::optional<nccl::Communicator> comm;
  std::string error;
};
WorldState& TheWorld() {
  static WorldState w;
  return w;
}

std::string Unsupported(const std::string& why) {
  return std::string(schema::kStatusUnsupported) + why;
}

}  // namespace

const Options& FamilyOptions() { return MutableOptions(); }

Family CommFamily(std::function<void()> register_cases) {
  Family f{"comm", Flags(), std::move(register_cases)};
  f.may_run_again = false;
  f.release = ReleaseWorld;
  return f;
}

nccl::Communicator& World() {
  WorldState& s = TheWorld();
  if (s.comm && s.comm->aborted()) {
    // The watchdog aborted it in an earlier case: the cases after it fail at once with its line.
    s.error = "NCCL communicator aborted by an earlier case: " + s.comm->abort_reason();
    s.comm.reset();
  }
  if (s.comm) return *s.comm;
  if (!s.error.empty()) throw Error(s.error);
  const double timeout = dlb::Opts().comm_timeout_s;
  ProcessGroup& launch = Processes();
  try {
    if (launch.size() > 1) {
      // Rank 0 makes the id and sends it, with whether it could: a failure there must not leave
      // the other processes waiting for an id that never comes.
      struct {
        char ok = 0;
        nccl::UniqueId id{};
      } msg;
      std::string why;
      if (launch.rank() == 0) {
        try {
          msg.id = nccl::NewUniqueId();
          msg.ok = 1;
        } catch (const std::exception& e) {
          why = e.what();
        }
      }
      launch.Broadcast(&msg, sizeof msg);
      if (!msg.ok) throw Error(why.empty() ? "rank 0 could not make NCCL's unique id" : why);
      const int device = launch.local_rank() % std::max(1, cuda::DeviceCount());
      s.comm = nccl::Communicator::InitRank(msg.id, launch.size(), launch.rank(), device, timeout);
      // mpirun binds each of 2 processes to one core by default: the monitor's NVML thread then
      // takes turns with the thread that launches, which slowed 1 MiB all-reduces by 1.4x on the
      // 2 x H200 host (14 us unbound or unmonitored, ~21 us bound and monitored).
      cpu_set_t cpus;
      CPU_ZERO(&cpus);
      if (launch.rank() == 0 && dlb::Opts().monitor &&
          ::sched_getaffinity(0, sizeof cpus, &cpus) == 0 && CPU_COUNT(&cpus) == 1)
        std::fprintf(stderr,
                     "dlbench: note: this process is bound to one CPU, which the GPU monitor's "
                     "sampling shares with the collectives' launches (small sizes run slower): "
                     "mpirun --bind-to none, or --dlb_monitor=off\n");
    } else {
      std::vector<int> devices(static_cast<size_t>(Gpus()));
      for (size_t i = 0; i < devices.size(); ++i) devices[i] = int(i);
      s.comm = nccl::Communicator::InitAll(devices, timeout);
    }
  } catch (const std::exception& e) {
    s.error = std::string("NCCL communicator: ") + e.what();
    throw Error(s.error);
  }
  return *s.comm;
}

void ReleaseWorld() {
  WorldState& s = TheWorld();
  // A process that stopped answering would hold the communicator's finalize until its deadline:
  // once the process group is broken the communicator is aborted instead.
  if (s.comm && MultiProcess() && !Processes().broken().empty())
    s.comm->Abort(Processes().broken());
  s.comm.reset();
}

int Gpus() {
  const ProcessGroup& launch = Processes();
  const int flag = FamilyOptions().gpus;
  if (launch.size() > 1) {
    if (flag > 0 && flag != launch.size())
      throw Error("--dlb_comm_gpus=" + std::to_string(flag) + ": under MPI every case " +
                  "runs on one GPU per process, " + std::to_string(launch.size()) + " here");
    return launch.size();
  }
  if (flag > 0) return flag;
  return std::max(2, cuda::DeviceCount());
}

std::vector<int64_t> Sizes() {
  if (!FamilyOptions().bytes.empty()) return FamilyOptions().bytes;
  return matrix::kSizes.Now();
}

std::vector<DType> DTypesFor(Collective c) {
  return DTypes(c == Collective::kAllReduce ? matrix::kAllReduceDTypes : matrix::kDTypes);
}

std::vector<bool> InPlaceFor(Collective c) {
  if (c == Collective::kAllToAll) return {false};  // no in-place form
  return (c == Collective::kAllReduce ? matrix::kAllReduceInPlace : matrix::kInPlace).Now();
}

std::vector<FlagSpec> Flags() {
  return {
      {"comm_gpus",
       "GPUs a collective spans in a one-process run (the first N); default: every GPU; under MPI "
       "one per process",
       [](const std::string& v) -> std::string {
         char* end = nullptr;
         const long n = std::strtol(v.c_str(), &end, 10);
         if (v.empty() || *end != '\0' || n < 1) return "expects a positive number of GPUs";
         MutableOptions().gpus = int(n);
         return "";
       }},
      IntListFlag("comm_bytes", "sizes in bytes, comma-separated (default: the tier's)", 1,
                  int64_t(1) << 40, &MutableOptions().bytes),
      {"comm_alloc",
       "where the collectives' buffers come from: nccl (ncclMemAlloc, as nccl-tests; default) or "
       "cuda (cudaMalloc, as a framework's caching allocator)",
       [](const std::string& v) -> std::string {
         if (!nccl::ParseBufferAlloc(v, &MutableOptions().alloc)) return "expects nccl or cuda";
         return "";
       }},
  };
}

void AddCommContext() {
  LaunchContext c;
  c.nccl_version = nccl::Version();
  c.gpu_summary = nccl::DeviceSummary;
  if (Processes().size() == 1) c.one_process_gpus = Gpus();
  c.how_names_gpus = true;
  AddLaunchContext(c);
  benchmark::AddCustomContext(std::string(schema::kCtxCommBuffers),
                              std::string(nccl::Name(FamilyOptions().alloc)));
}

std::string CaseKey(const CommShape& s, DType dt) {
  return std::string(Name(s.collective)) + " " + std::to_string(s.bytes) + " B " +
         std::string(Name(dt)) + " on " + std::to_string(s.gpus) + " GPUs " +
         (s.inplace ? "in place" : "out of place");
}

std::string CommCaseSteps::CaseKey(const CommShape& shape, const RunConfig& cfg) {
  return comm::CaseKey(shape, cfg.dtype);
}

std::string CommCaseSteps::Support(const CommShape& shape, const RunConfig& cfg) {
  const ProcessGroup& launch = Processes();
  const int devices = cuda::DeviceCount();
  if (devices == 0) return Unsupported(cuda::NoDeviceReason());
  if (launch.size() > 1 && launch.local_size() > devices)
    return Unsupported("needs a GPU per process: " + std::to_string(launch.local_size()) +
                       " processes on this host, " + std::to_string(devices) + " GPUs");
  if (launch.size() == 1 && devices < shape.gpus)
    return Unsupported("needs " + std::to_string(shape.gpus) + " GPUs, this host has " +
                       std::to_string(devices));
  if (const dlb::Support sup = CollectiveOp::Supports(shape, cfg); !sup.ok)
    return Unsupported(sup.why);
  return "";
}

std::shared_ptr<CollectiveOp> CommCaseSteps::Build(const CommShape& shape, const RunConfig& cfg) {
  auto op = std::make_shared<CollectiveOp>(shape, cfg, World(), FamilyOptions().alloc);
  op->set_case(detail::CurrentSlot().name);  // named in a watchdog's line
  return op;
}

void CommCaseSteps::Record(benchmark::State& st, CollectiveOp& op, const CaseInfo&,
                           const RunConfig&, const Timing& t, int launches, Verdict* verdict) {
  if (t.iterations == 0 || t.total <= 0) return;
  const double algbw = double(op.CountedBytes()) / t.Mean();
  st.counters[std::string(schema::kAlgBw)] = algbw;
  st.counters[std::string(schema::kBusBw)] = algbw * op.BusBwFactor();
  st.counters[std::string(schema::kLaunchesPerBatch)] = launches;
  if (t.wall_s > 0) st.counters[std::string(schema::kCpuUtil)] = t.cpu_s / t.wall_s;
  // The same calls in a plain loop, every rank together, four times as many as a timed span
  // holds: the harness's overhead shows as a ratio in every run (a regression of the timing path
  // included). One process per GPU: a barrier first (nccl-tests' MPI_Barrier), or the loop of
  // the rank that starts first would hold its wait for the others.
  const int n = 4 * std::max(1, launches);
  try {
    if (Processes().size() > 1) Processes().Max(0.0);
    const double plain = AgreedSpan(Processes(), [&] { return op.PlainRuns(n); }) / n;
    if (plain > 0) {
      st.counters[std::string(schema::kPlainLoopS)] = plain;
      st.counters[std::string(schema::kVsPlainLoop)] = t.Mean() / plain;
    }
  } catch (const std::exception& e) {
    st.SkipWithError((std::string("the plain loop beside the case failed: ") + e.what()).c_str());
    return;
  }
  const char* how = verdict->disposition == Disposition::kVerified ? "verified " : "";
  st.SetLabel(op.label() + " | " + how + verdict->detail);
}

void Add(Collective c, int64_t bytes, DType dt, bool inplace) {
  CommShape shape;
  shape.collective = c;
  shape.bytes = bytes;
  shape.inplace = inplace;
  shape.gpus = Gpus();
  RunConfig cfg;
  cfg.dtype = dt;
  cfg.seed = dlb::Opts().seed;
  WorkloadBasics w;
  w.name = std::string(Name(c)) + "." + std::to_string(bytes);
  NameKeys keys = {{key::kDType, std::string(Name(dt))}, {key::kGpus, std::to_string(shape.gpus)}};
  if (inplace) keys.push_back({key::kInPlace, "1"});
  Register<CollectiveOp, CommShape, CommSteps>("comm", w, std::move(keys), shape, cfg,
                                               CaseInfo::Of(w, dt, 0, nullptr));
}

}  // namespace dlb::comm
