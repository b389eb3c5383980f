#include "kernels/cublas/peak.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <thread>
#include <vector>

#include "kernels/cublas/gemm.h"
#include "kernels/cuda/device.h"

namespace dlb::cublas {

namespace {

// The pause before each shape after the first, in milliseconds.
constexpr int kPauseMs = 300;

struct ShapeRun {
  double seconds = 0;  // best time of one GEMM; 0 when not measured
  double sm_clock_mhz = 0;
  std::string how;  // how it was timed, or why it was not
};

// One shape: the heuristic's `candidates` ranked (CublasLtGemm's "search"), then the fastest timed
// in batches after a warm-up of `warm_s` seconds (clocks and power settle where a long GEMM run
// holds them).
ShapeRun TimeShape(const PeakShape& p, DType dt, int candidates, double warm_s) {
  ShapeRun r;
  // TN for every dtype: the layout the 8-bit kernels read, and torch.nn.Linear's.
  const GemmShape shape{p.m, p.n, p.k, false, true};
  RunConfig cfg;
  cfg.dtype = dt;
  cfg.algo = "search";
  if (const Support support = CublasLtGemm::Supports(shape, cfg); !support.ok) {
    r.how = support.why;
    return r;
  }
  CublasLtGemm gemm(shape, cfg, candidates);
  const StreamRef stream = gemm.stream();
  cuda::EventTimer timer;
  const double one = std::max(1e-6, timer.TimeLaunches(stream, 2, [&] { gemm.Run(); }).ms / 1e3);
  const int warm = std::clamp(int(warm_s / one), 2, 2000);
  const int per_batch = std::clamp(int(0.03 / one), 3, 500);
  for (int i = 0; i < warm; ++i) gemm.Run();
  cuda::Sync(stream);
  constexpr int kBatches = 5;
  std::vector<double> clocks;
  for (int b = 0; b < kBatches; ++b) {
    timer.Start(stream);
    for (int i = 0; i < per_batch; ++i) gemm.Run();
    timer.Stop(stream);
    const double mhz = cuda::SyncSamplingSmClock(stream);
    const double s = timer.Seconds() / per_batch;
    if (mhz > 0) clocks.push_back(mhz);
    if (s > 0 && (r.seconds == 0 || s < r.seconds)) r.seconds = s;
  }
  if (!clocks.empty()) {
    std::sort(clocks.begin(), clocks.end());
    r.sm_clock_mhz = clocks[clocks.size() / 2];
  }
  char buf[128];
  std::snprintf(buf, sizeof buf, "%lldx%lldx%lld TN, best of %d batches of %d", (long long)p.m,
                (long long)p.n, (long long)p.k, kBatches, per_batch);
  r.how = std::string(buf) + "; " + gemm.label();
  return r;
}

}  // namespace

GemmPeakRun MeasureGemmPeak(DType dt, PeakSearch scope) {
  GemmPeakRun run;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<PeakShape> shapes;
  try {
    int device = 0;
    DLB_CHECK(cudaGetDevice(&device));
    shapes = PeakSearchShapes(dt, scope, cuda::QueryDevice(device).sms);
  } catch (const std::exception& e) {
    run.method = e.what();
    return run;
  }
  const int candidates = PeakSearchAlgorithms(scope);
  int timed = 0;
  std::string why_not, best_how;
  for (const PeakShape& p : shapes) {
    ShapeRun r;
    try {
      // The first shape warms the GPU up; the others start warm, after a pause: under the power
      // cap the clock a shape runs at depends on the power drawn just before, and a GEMM case
      // starts after its own setup, not right behind a larger GEMM (an int8 4096^3 case read 4%
      // above a search that timed it straight after 8192^3).
      if (timed > 0) std::this_thread::sleep_for(std::chrono::milliseconds(kPauseMs));
      r = TimeShape(p, dt, candidates, timed == 0 ? 0.2 : 0.05);
    } catch (const std::exception& e) {
      r.how = e.what();
    }
    if (!(r.seconds > 0)) {
      if (why_not.empty()) why_not = r.how.empty() ? "no time measured" : r.how;
      continue;
    }
    ++timed;
    if (const double flops = p.Flops() / r.seconds; flops > run.flops) {
      run.flops = flops;
      run.sm_clock_mhz = r.sm_clock_mhz;
      best_how = r.how;
    }
  }
  if (timed == 0) {
    run = GemmPeakRun{};
    run.method = why_not;
    return run;
  }
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  char buf[160];
  std::snprintf(buf, sizeof buf,
                "cuBLASLt best of %d shape%s x up to %d heuristic algorithms (search \"%s\", "
                "%.1f s): ",
                timed, timed == 1 ? "" : "s", candidates, Name(scope), took);
  run.method = buf + best_how;
  if (run.sm_clock_mhz > 0) {
    // The report reads the clock back from these words (tools/report/analyses/common.h,
    // MeasuredPeakClockMhz): a case that ran faster explains a rate above its roof by it.
    std::snprintf(buf, sizeof buf, "; SM clock %.0f MHz (median while timed)", run.sm_clock_mhz);
    run.method += buf;
  }
  return run;
}

}  // namespace dlb::cublas
