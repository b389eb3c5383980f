// The benchmark program of bisect_test.sh's repositories: Google Benchmark around toy_op (op.c,
// the code each commit changes), timed per call, with a second case whose name starts with the
// first one's so the test sees the filter anchored. The time is the thread's CPU time: on a shared
// 2-core machine other processes stretch the wall clock of a step by 2x and more, which would
// hide the 2x the test looks for; a serial loop's CPU time stays put.
#include <benchmark/benchmark.h>
#include <time.h>

#include <vector>

extern "C" float toy_op(const float* x, int n);

namespace {

double ThreadSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

void Run(benchmark::State& state, int n) {
  std::vector<float> x(n, 1.0f);
  for (auto _ : state) {
    double t0 = ThreadSeconds();
    float r = toy_op(x.data(), n);
    benchmark::DoNotOptimize(r);
    state.SetIterationTime(ThreadSeconds() - t0);
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::RegisterBenchmark("toy/cpu/native/sum.64k/dt:f32", [](benchmark::State& s) {
    Run(s, 1 << 16);
  })->UseManualTime();
  benchmark::RegisterBenchmark("toy/cpu/native/sum.64k.twice/dt:f32", [](benchmark::State& s) {
    Run(s, 1 << 17);
  })->UseManualTime();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
