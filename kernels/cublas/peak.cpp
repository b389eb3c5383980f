#include "kernels/cublas/peak.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <memory>
#include <thread>
#include <vector>

#include "kernels/common/stats.h"
#include "kernels/cublas/gemm.h"
#include "kernels/cuda/device.h"

namespace dlb::cublas {

namespace {

// The pause before each shape after the first, in milliseconds.
constexpr int kPauseMs = 300;
// The case-like re-timing (ReTimeLikeACase): the idle before each shape, the span each sample
// holds (the default of --dlb_min_launch_ms) and how long the samples run (the default tier's
// min-time, fixtures/run/main.cpp).
constexpr int kIdleMs = 500;
constexpr double kCaseSpanS = 1e-3;
constexpr double kCaseSeconds = 0.05;
// How many of the sustained search's fastest shapes are re-timed like a case.
constexpr size_t kFinalists = 6;

struct Timed {
  double seconds = 0;  // best time of one GEMM; 0 when not measured
  double sm_clock_mhz = 0;
  std::string how;  // how it was timed, or why it was not
};

// A shape the search timed, with its GEMM (its operands and chosen algorithm) kept for the
// case-like re-timing.
struct Finalist {
  PeakShape shape;
  Timed sustained;
  std::unique_ptr<CublasLtGemm> gemm;
};

std::string ShapeText(const PeakShape& p) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "%lldx%lldx%lld TN", (long long)p.m, (long long)p.n,
                (long long)p.k);
  return buf;
}

// One shape: the heuristic's `candidates` ranked (CublasLtGemm's "search"), then the fastest timed
// in batches after a warm-up of `warm_s` seconds (clocks and power settle where a long GEMM run
// holds them). Sets f->sustained, and f->gemm when it could run.
void TimeSustained(Finalist* f, DType dt, int candidates, double warm_s) {
  Timed& r = f->sustained;
  // TN for every dtype: the layout the 8-bit kernels read, and torch.nn.Linear's.
  const GemmShape shape{f->shape.m, f->shape.n, f->shape.k, false, true};
  RunConfig cfg;
  cfg.dtype = dt;
  cfg.algo = Algo::kSearch;
  if (const Support support = CublasLtGemm::Supports(shape, cfg); !support.ok) {
    r.how = support.why;
    return;
  }
  f->gemm = std::make_unique<CublasLtGemm>(shape, cfg, candidates);
  CublasLtGemm& gemm = *f->gemm;
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
  r.sm_clock_mhz = UpperMedian(clocks);
  char buf[96];
  std::snprintf(buf, sizeof buf, ", best of %d batches of %d", kBatches, per_batch);
  r.how = ShapeText(f->shape) + buf + "; " + gemm.label();
}

// The shape's GEMM timed as the harness times a default-tier case (fixtures/case/timing.h): after
// an idle pause (a case starts after its setup and verification), 2 warm-up runs, then samples of
// one untimed lead run and about kCaseSpanS of runs between two events, synchronized after each,
// for kCaseSeconds; the fastest sample. A short run between idle gaps holds a higher clock under
// the power cap than the sustained batches (an H100's fp8 8192^3 case read 1,980 MHz where the
// search's batches ran at 1,305), so this is the rate a case can reach.
Timed ReTimeLikeACase(CublasLtGemm& gemm, const PeakShape& shape, double one_s) {
  Timed r;
  int device = 0;
  DLB_CHECK(cudaGetDevice(&device));
  std::this_thread::sleep_for(std::chrono::milliseconds(kIdleMs));
  const StreamRef stream = gemm.stream();
  cuda::EventTimer timer;
  for (int i = 0; i < 2; ++i) timer.TimeLaunches(stream, 1, [&] { gemm.Run(); });
  const int per_span = std::max(1, int(std::ceil(kCaseSpanS / std::max(one_s, 1e-7))));
  std::vector<double> clocks;
  int spans = 0;
  const auto t0 = std::chrono::steady_clock::now();
  while (spans < 5 || std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() <
                          kCaseSeconds) {
    gemm.Run();  // the lead run
    timer.Start(stream);
    for (int i = 0; i < per_span; ++i) gemm.Run();
    timer.Stop(stream);
    // Synchronized at once, as a case's sample is (polling the clock meanwhile would leave the
    // GPU idle longer between spans than a case does); the clock read right after.
    cuda::Sync(stream);
    const double mhz = cuda::SmClockMhz(device);
    const double s = timer.Seconds() / per_span;
    if (mhz > 0) clocks.push_back(mhz);
    if (s > 0 && (r.seconds == 0 || s < r.seconds)) r.seconds = s;
    if (++spans >= 10000) break;
  }
  r.sm_clock_mhz = UpperMedian(clocks);
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s, as a case: best of %d spans of %d after %d ms idle",
                ShapeText(shape).c_str(), spans, per_span, kIdleMs);
  r.how = std::string(buf) + "; " + gemm.label();
  return r;
}

std::string RateText(double flops, DType dt) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.1f %s", flops / 1e12, dt == DType::kInt8 ? "TOPS" : "TFLOP/s");
  return buf;
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
  std::string why_not;
  // The fastest shapes so far, fastest first, at most kFinalists. Their GEMMs stay allocated while
  // their operands take at most half the memory free now, the fastest first: on a small GPU the
  // others are not re-timed rather than keep the next shapes from running.
  std::vector<Finalist> finalists;
  size_t free_bytes = 0, total_bytes = 0;
  const bool known = cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess;
  cudaGetLastError();  // unknown: every finalist keeps its GEMM, as a case would allocate anyway
  const double keep_bytes = known ? 0.5 * double(free_bytes) : HUGE_VAL;
  auto fit_memory = [&] {
    std::vector<double> bytes;
    for (const Finalist& x : finalists) bytes.push_back(x.gemm ? x.gemm->cost().bytes : 0.0);
    const std::vector<bool> kept = PeakFinalistsKept(bytes, keep_bytes);
    for (size_t i = 0; i < finalists.size(); ++i)
      if (!kept[i]) finalists[i].gemm.reset();
  };
  int timed = 0;
  for (const PeakShape& p : shapes) {
    Finalist f{p, {}, nullptr};
    try {
      // The first shape warms the GPU up; the others start warm, after a pause: under the power
      // cap the clock a shape runs at depends on the power drawn just before, and a GEMM case
      // starts after its own setup, not right behind a larger GEMM (an int8 4096^3 case read 4%
      // above a search that timed it straight after 8192^3).
      if (timed > 0) std::this_thread::sleep_for(std::chrono::milliseconds(kPauseMs));
      TimeSustained(&f, dt, candidates, timed == 0 ? 0.2 : 0.05);
    } catch (const std::exception& e) {
      f.sustained.how = e.what();
    }
    if (!(f.sustained.seconds > 0)) {
      if (why_not.empty()) why_not = f.sustained.how.empty() ? "no time measured" : f.sustained.how;
      continue;
    }
    ++timed;
    auto rate = [](const Finalist& x) { return x.shape.Flops() / x.sustained.seconds; };
    const auto at = std::find_if(finalists.begin(), finalists.end(),
                                 [&](const Finalist& x) { return rate(x) < rate(f); });
    finalists.insert(at, std::move(f));
    if (finalists.size() > kFinalists) finalists.pop_back();
    fit_memory();
  }
  if (timed == 0) {
    run.method = why_not;
    return run;
  }
  // A copy: the finalists (and their GEMMs) are freed below.
  const Timed best_sustained = finalists.front().sustained;
  const double sustained = finalists.front().shape.Flops() / best_sustained.seconds;
  run.flops = sustained;
  run.sm_clock_mhz = best_sustained.sm_clock_mhz;
  Timed best_case;
  double case_flops = 0;
  size_t retimed = 0;
  for (Finalist& f : finalists) {
    if (!f.gemm) continue;
    ++retimed;
    try {
      const Timed r = ReTimeLikeACase(*f.gemm, f.shape, f.sustained.seconds);
      if (const double flops = f.shape.Flops() / r.seconds; r.seconds > 0 && flops > case_flops) {
        case_flops = flops;
        best_case = r;
      }
    } catch (const std::exception& e) {
      if (best_case.how.empty()) best_case.how = e.what();
    }
  }
  if (retimed == 0) best_case.how = "no shape's GEMM fit in half the GPU's free memory";
  finalists.clear();  // frees the operands before the caller's next allocation
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  char buf[200];
  std::snprintf(buf, sizeof buf,
                "cuBLASLt best of %d shape%s x up to %d heuristic algorithms (search \"%s\", "
                "%.1f s), sustained: ",
                timed, timed == 1 ? "" : "s", candidates, Name(scope), took);
  run.method = buf + best_sustained.how + "; " + RateText(sustained, dt);
  if (best_sustained.sm_clock_mhz > 0) {
    std::snprintf(buf, sizeof buf, " at %.0f MHz", best_sustained.sm_clock_mhz);
    run.method += buf;
  }
  if (case_flops > 0) {
    run.method += "; re-timed like a case, the fastest " + std::to_string(retimed) + ": " +
                  best_case.how + "; " + RateText(case_flops, dt);
  } else {
    run.method += "; not re-timed like a case: " +
                  (best_case.how.empty() ? std::string("no time measured") : best_case.how);
  }
  if (case_flops > sustained) {
    run.flops = case_flops;
    run.sm_clock_mhz = best_case.sm_clock_mhz;
  }
  run.method +=
      case_flops > sustained ? "; the peak: the case-like rate" : "; the peak: the sustained rate";
  if (run.sm_clock_mhz > 0) {
    // The report reads the clock back from these words (tools/report/analyses/common.h,
    // MeasuredPeakClockMhz): a case that ran faster explains a rate above its roof by it.
    std::snprintf(buf, sizeof buf, "; SM clock %.0f MHz (median while timed)", run.sm_clock_mhz);
    run.method += buf;
  }
  return run;
}

}  // namespace dlb::cublas
