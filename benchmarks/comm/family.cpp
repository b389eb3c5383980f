#include "benchmarks/comm/family.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>

#include "fixtures/run/lockstep.h"
#include "fixtures/run/output.h"
#include "fixtures/schema/schema.h"
#include "kernels/cuda/device.h"

namespace dlb::comm {

namespace {

struct State {
  nccl::Launch* launch = nullptr;
  std::optional<nccl::Communicator> world;
  std::string world_error;
  int gpus_flag = 0;                // --dlb_comm_gpus; 0: all
  std::vector<int64_t> bytes_flag;  // --dlb_comm_bytes; empty: the tier's
};
State& S() {
  static State s;
  return s;
}

// A run's warm-up spans at least this long (and 2 runs): NCCL connects on first use.
constexpr double kWarmupSeconds = 0.01;

uint64_t Fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

std::string Unsupported(const std::string& why) {
  return std::string(schema::kStatusUnsupported) + why;
}

std::string HostName() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown host";
  return buf;
}

std::string GpuText(int device) {
  return "GPU " + std::to_string(device) + ": " + nccl::DeviceSummary(device);
}

}  // namespace

nccl::Launch& TheLaunch() {
  DLB_REQUIRE(S().launch != nullptr, "the collectives family runs under comm::Main");
  return *S().launch;
}

nccl::Communicator& World() {
  State& s = S();
  if (s.world && s.world->aborted()) {
    // The watchdog aborted it in an earlier case: the cases after it fail at once with its line.
    s.world_error = "NCCL communicator aborted by an earlier case: " + s.world->abort_reason();
    s.world.reset();
  }
  if (s.world) return *s.world;
  if (!s.world_error.empty()) throw Error(s.world_error);
  const double timeout = dlb::Opts().comm_timeout_s;
  nccl::Launch& launch = TheLaunch();
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
      s.world = nccl::Communicator::InitRank(msg.id, launch.size(), launch.rank(), device, timeout);
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
      s.world = nccl::Communicator::InitAll(devices, timeout);
    }
  } catch (const std::exception& e) {
    s.world_error = std::string("NCCL communicator: ") + e.what();
    throw Error(s.world_error);
  }
  return *s.world;
}

void ReleaseWorld() { S().world.reset(); }

int Gpus() {
  nccl::Launch& launch = TheLaunch();
  if (launch.size() > 1) {
    if (S().gpus_flag > 0 && S().gpus_flag != launch.size())
      throw Error("--dlb_comm_gpus=" + std::to_string(S().gpus_flag) + ": under MPI every case " +
                  "runs on one GPU per process, " + std::to_string(launch.size()) + " here");
    return launch.size();
  }
  if (S().gpus_flag > 0) return S().gpus_flag;
  return std::max(2, cuda::DeviceCount());
}

std::vector<int64_t> Sizes() {
  if (!S().bytes_flag.empty()) return S().bytes_flag;
  std::vector<int64_t> out;
  switch (dlb::Opts().tier) {
    case Tier::kSmoke:
      return {8, 64 << 10, 1 << 20};
    case Tier::kDefault:
      out.push_back(8);
      for (int64_t b = 16; b <= (int64_t(1) << 30); b *= 4) out.push_back(b);
      return out;
    case Tier::kFull:
      for (int64_t b = 8; b <= (int64_t(4) << 30); b *= 2) out.push_back(b);
      return out;
  }
  return out;
}

std::vector<DType> DTypesFor(Collective c) {
  if (dlb::Opts().tier == Tier::kFull) return DTypes({DType::kF32, DType::kBF16, DType::kF16});
  if (c == Collective::kAllReduce) return DTypes({DType::kBF16, DType::kF32});
  return DTypes({DType::kBF16});
}

std::vector<bool> InPlaceFor(Collective c) {
  if (c == Collective::kAllToAll) return {false};
  if (dlb::Opts().tier == Tier::kSmoke && c != Collective::kAllReduce) return {false};
  return {false, true};
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
         S().gpus_flag = int(n);
         return "";
       }},
      IntListFlag("comm_bytes", "sizes in bytes, comma-separated (default: the tier's)", 1,
                  int64_t(1) << 40, &S().bytes_flag),
  };
}

void AddCommContext() {
  nccl::Launch& launch = TheLaunch();
  const int devices = cuda::DeviceCount();
  std::string mine;
  if (launch.size() > 1) {
    mine = "rank " + std::to_string(launch.rank()) + ": " + HostName() + ", " +
           (devices > 0 ? GpuText(launch.local_rank() % devices) : cuda::NoDeviceReason());
  } else if (devices == 0) {
    mine = "rank 0: " + HostName() + ", " + cuda::NoDeviceReason();
  } else {
    for (int g = 0; g < std::min(devices, Gpus()); ++g)
      mine += std::string(g ? "; " : "") + "rank " + std::to_string(g) + ": " + HostName() + ", " +
              GpuText(g);
  }
  std::string ranks;
  for (const std::string& r : launch.AllGather(mine)) ranks += (ranks.empty() ? "" : "; ") + r;
  std::string how = launch.how();
  if (launch.size() == 1 && devices > 0) how += " driving " + std::to_string(Gpus()) + " GPUs";
  benchmark::AddCustomContext(std::string(schema::kCtxNcclVersion), nccl::Version());
  benchmark::AddCustomContext(std::string(schema::kCtxCommLaunch), how);
  benchmark::AddCustomContext(std::string(schema::kCtxCommRanks), ranks);
}

std::string CaseKey(const CommShape& s, DType dt) {
  return std::string(Name(s.collective)) + " " + std::to_string(s.bytes) + " B " +
         std::string(Name(dt)) + " on " + std::to_string(s.gpus) + " GPUs " +
         (s.inplace ? "in place" : "out of place");
}

std::string CommSteps::Support(const CommShape& shape, const RunConfig& cfg) {
  nccl::Launch& launch = TheLaunch();
  const std::string key = CaseKey(shape, cfg.dtype);
  if (!launch.Same(Fnv1a(key)))
    return "the processes of this run are at different cases (started with different flags or "
           "environments?); this one is at " +
           key;
  std::string why;
  const int devices = cuda::DeviceCount();
  if (devices == 0) {
    why = Unsupported(cuda::NoDeviceReason());
  } else if (launch.size() > 1 && launch.local_size() > devices) {
    why = Unsupported("needs a GPU per process: " + std::to_string(launch.local_size()) +
                      " processes on this host, " + std::to_string(devices) + " GPUs");
  } else if (launch.size() == 1 && devices < shape.gpus) {
    why = Unsupported("needs " + std::to_string(shape.gpus) + " GPUs, this host has " +
                      std::to_string(devices));
  } else if (const dlb::Support sup = CollectiveOp::Supports(shape, cfg); !sup.ok) {
    why = Unsupported(sup.why);
  }
  return launch.FirstError(why);
}

std::shared_ptr<CollectiveOp> CommSteps::Build(const CommShape& shape, const RunConfig& cfg) {
  std::shared_ptr<CollectiveOp> op;
  std::string why;
  try {
    op = std::make_shared<CollectiveOp>(shape, cfg, World());
    op->set_case(detail::CurrentSlot().name);  // named in a watchdog's line
  } catch (...) {
    why = FailureMessage(std::current_exception());
  }
  why = TheLaunch().FirstError(why);
  if (!why.empty()) throw Error(why);
  return op;
}

int CommSteps::Calibrate(CollectiveOp& op) {
  return LockstepCalibrate(op, TheLaunch(), kWarmupSeconds);
}

Timing CommSteps::Time(benchmark::State& st, CollectiveOp& op, int launches) {
  return LockstepTime(st, op, launches, TheLaunch());
}

void CommSteps::Record(benchmark::State& st, const CollectiveOp& op, const CaseInfo&,
                       const RunConfig&, const Timing& t, int launches, Verdict* verdict) {
  if (t.iterations == 0 || t.total <= 0) return;
  const double algbw = double(op.CountedBytes()) / t.Mean();
  st.counters[std::string(schema::kAlgBw)] = algbw;
  st.counters[std::string(schema::kBusBw)] = algbw * op.BusBwFactor();
  st.counters[std::string(schema::kLaunchesPerBatch)] = launches;
  if (t.wall_s > 0) st.counters[std::string(schema::kCpuUtil)] = t.cpu_s / t.wall_s;
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
  NameKeys keys = {{"dt", std::string(Name(dt))}, {"gpus", std::to_string(shape.gpus)}};
  if (inplace) keys.push_back({"inplace", "1"});
  Register<CollectiveOp, CommShape, CommSteps>("comm", w, std::move(keys), shape, cfg,
                                               CaseInfo::Of(w, dt, 0, nullptr));
}

int Main(int argc, char** argv, const Family& family) {
  std::unique_ptr<nccl::Launch> launch;
  try {
    launch = nccl::StartLaunch(&argc, &argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dlbench: %s\n", e.what());
    return 1;
  }
  S().launch = launch.get();
  // The collectives use no OpenMP, and the launch may have started MPI: no second start.
  const int rc = LaunchedMain(argc, argv, family, *launch, true);
  ReleaseWorld();
  S().launch = nullptr;
  return rc;
}

}  // namespace dlb::comm
